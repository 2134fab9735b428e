// Follows the workers' ack logs while they grow, so the live view can count what was acked
// without re-reading every file each second.
import { closeSync, openSync, readSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { AckLine } from './ack-log.js';

interface Cursor {
  offset: number;
  partial: string;
  readonly decoder: StringDecoder;
}

/** Reads the new complete lines of every `*.acks.jsonl` file in a folder on each `poll()`. */
export class AckTail {
  /** Every line read so far. */
  readonly lines: AckLine[] = [];
  private readonly cursors = new Map<string, Cursor>();

  constructor(private readonly folder: string) {}

  /** Reads what was appended since the last poll and returns the new lines. */
  poll(): AckLine[] {
    const fresh: AckLine[] = [];
    for (const name of readdirSync(this.folder).filter((n) => n.endsWith('.acks.jsonl')).sort()) {
      const path = join(this.folder, name);
      const cursor = this.cursors.get(name) ?? { offset: 0, partial: '', decoder: new StringDecoder('utf8') };
      this.cursors.set(name, cursor);
      const size = statSync(path).size;
      if (size <= cursor.offset) continue;
      const buffer = Buffer.alloc(size - cursor.offset);
      const fd = openSync(path, 'r');
      try {
        cursor.offset += readSync(fd, buffer, 0, buffer.length, cursor.offset);
      } finally {
        closeSync(fd);
      }
      const texts = (cursor.partial + cursor.decoder.write(buffer)).split('\n');
      // The last piece has no newline yet: a line being written (or torn by a SIGKILL, then never completed).
      cursor.partial = texts.pop() ?? '';
      for (const text of texts) {
        if (text.trim() === '') continue;
        try {
          fresh.push(JSON.parse(text) as AckLine);
        } catch {
          // Not a whole line; its record was not acked.
        }
      }
    }
    this.lines.push(...fresh);
    return fresh;
  }
}
