// The ledger of a fleet run: each worker appends one JSON line per record it acks, written
// synchronously before the ack, so a SIGKILL can lose an ack but never a line for an ack that
// happened. An independent checker reads the lines afterwards.
import { closeSync, openSync, readFileSync, readdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** One acked record, as a worker logged it. */
export interface AckLine {
  /** Wall-clock ms when the worker received it (emission). */
  readonly e: number;
  /** Wall-clock ms when kinsumer emitted it (earlier than `e` when the handler queues records: `e` is when handling started). Absent in older logs. */
  readonly r?: number;
  /** The worker's own receipt counter: orders receipts within one worker when `e` ties. */
  readonly i: number;
  /** Wall-clock ms when the worker acked it. */
  readonly t: number;
  /** Worker id. */
  readonly w: string;
  readonly shardId: string;
  readonly seq: string;
  readonly sub?: number;
  readonly key: string;
  /** The record's data (the producer's tag `key#n`). */
  readonly data: string;
}

/** Appends ack lines to a file, synchronously (durable across a crash of the process). */
export class AckWriter {
  private readonly fd: number;

  constructor(path: string) {
    this.fd = openSync(path, 'a');
  }

  write(line: AckLine): void {
    writeSync(this.fd, `${JSON.stringify(line)}\n`);
  }

  close(): void {
    closeSync(this.fd);
  }
}

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
