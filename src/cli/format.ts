// How the CLI shows things to a person: aligned tables, checkpoints, ages, record data. Pure.
import type { StoredCheckpoint } from '../ports/lease-store.js';

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells
    .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
    .join('  ')
    .trimEnd();
  return [line(headers), ...rows.map(line)].map((l) => `${l}\n`).join('');
}

/** `1 shard`, `2 shards`: a count with its noun, singular for one. */
export function counted(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}

/** Characters kept at each end of a shortened sequence number. */
const SEQUENCE_ENDS = 6;

/**
 * A sequence number for a table: its first and last 6 digits around `…` (56 digits take half a
 * terminal, and the ends are what differ: the shard's epoch and the record's place in it).
 */
export function shortSequence(sequenceNumber: string): string {
  if (sequenceNumber.length <= 2 * SEQUENCE_ENDS + 1) return sequenceNumber;
  return `${sequenceNumber.slice(0, SEQUENCE_ENDS)}…${sequenceNumber.slice(-SEQUENCE_ENDS)}`;
}

/**
 * A stored checkpoint in one word: the sequence number (`/sub` inside a KPL aggregate), a start,
 * or `-` for none. `short`: the sequence number shortened by {@link shortSequence}.
 */
export function checkpointText(checkpoint: StoredCheckpoint | undefined, options: { readonly short?: boolean } = {}): string {
  if (checkpoint === undefined) return '-';
  switch (checkpoint.type) {
    case 'position': {
      const sub = checkpoint.position.subSequenceNumber;
      const sequence = options.short === true ? shortSequence(checkpoint.position.sequenceNumber) : checkpoint.position.sequenceNumber;
      return sub === undefined ? sequence : `${sequence}/${sub}`;
    }
    case 'AT_TIMESTAMP':
      return `AT_TIMESTAMP ${checkpoint.timestamp.toISOString()}`;
    case 'LATEST':
    case 'TRIM_HORIZON':
      return checkpoint.type;
  }
}

/** A stored checkpoint for `--json`: plain JSON values, sequence numbers as strings. */
export type CheckpointJson =
  | { readonly type: 'position'; readonly sequenceNumber: string; readonly subSequenceNumber?: number }
  | { readonly type: 'LATEST' }
  | { readonly type: 'TRIM_HORIZON' }
  | { readonly type: 'AT_TIMESTAMP'; readonly timestamp: string };

export function checkpointJson(checkpoint: StoredCheckpoint | undefined): CheckpointJson | null {
  if (checkpoint === undefined) return null;
  switch (checkpoint.type) {
    case 'position': {
      const { sequenceNumber, subSequenceNumber } = checkpoint.position;
      return subSequenceNumber === undefined ? { type: 'position', sequenceNumber } : { type: 'position', sequenceNumber, subSequenceNumber };
    }
    case 'AT_TIMESTAMP':
      return { type: 'AT_TIMESTAMP', timestamp: checkpoint.timestamp.toISOString() };
    case 'LATEST':
    case 'TRIM_HORIZON':
      return { type: checkpoint.type };
  }
}

/** An age as a person reads it: `0.4s`, `12.3s`, `5m12s`, `3h05m`, `2d03h`. Negative (clock skew) keeps its sign. */
export function ageText(ms: number): string {
  if (ms < 0) return `-${ageText(-ms)}`;
  const two = (n: number) => String(n).padStart(2, '0');
  if (ms < 60_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)}s`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${two(seconds % 60)}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 24 * 60) return `${Math.floor(minutes / 60)}h${two(minutes % 60)}m`;
  const hours = Math.floor(minutes / 60);
  return `${Math.floor(hours / 24)}d${two(hours % 24)}h`;
}

/** Record data as text: UTF-8 when it decodes and has no control characters (but tab), else base64. */
export function dataText(data: Uint8Array): { readonly encoding: 'utf8' | 'base64'; readonly text: string } {
  let text: string | undefined;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    text = undefined;
  }
  // Control characters (newlines above all) would break the one-record-per-line output.
  if (text !== undefined && !/[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/.test(text)) return { encoding: 'utf8', text };
  return { encoding: 'base64', text: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64') };
}
