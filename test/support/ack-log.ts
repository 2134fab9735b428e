// Reading the workers' ack logs (examples/demo/ack-log.ts writes them) for the checker.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AckLine } from '../../examples/demo/ack-log.js';

/** Every line of every `*.acks.jsonl` file in a folder (a torn last line of a killed writer is skipped). */
export function readAckLogs(folder: string): AckLine[] {
  const lines: AckLine[] = [];
  for (const name of readdirSync(folder).filter((n) => n.endsWith('.acks.jsonl')).sort()) {
    for (const text of readFileSync(join(folder, name), 'utf8').split('\n')) {
      if (text.trim() === '') continue;
      try {
        lines.push(JSON.parse(text) as AckLine);
      } catch {
        // A process killed mid-write leaves half a line; the record was not acked then.
      }
    }
  }
  return lines;
}

/** Ack lines grouped by shard, each group in the order given. */
export function linesByShard(lines: Iterable<AckLine>): Map<string, AckLine[]> {
  const byShard = new Map<string, AckLine[]>();
  for (const line of lines) {
    const group = byShard.get(line.shardId);
    if (group === undefined) byShard.set(line.shardId, [line]);
    else group.push(line);
  }
  return byShard;
}
