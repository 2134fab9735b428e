// Decoding a record's payload for the application (`record.text()`, `record.json()`): strict, so
// bad bytes are an error that names the record instead of a U+FFFD in the data.
import { KinsumerError } from '../errors/kinsumer-errors.js';
import type { KinsumerRecord } from '../types.js';

/** `data` as the SDK decodes base64: a Uint8Array over the decoded bytes (not a Buffer). */
export function decodeBase64(base64: string): Uint8Array {
  const bytes = Buffer.from(base64, 'base64');
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** What a payload was expected to be when it did not decode. */
export type RecordFormat = 'utf-8' | 'json';

/** A record's payload is not what `text()` or `json()` expects. Not retriable: the bytes will not change. */
export class RecordDecodeError extends KinsumerError {
  /** The shard the record was read from. */
  readonly shardId: string;
  /** The record's sequence number. */
  readonly sequenceNumber: string;
  /** Its position inside a KPL aggregate; `undefined` for a plain record. */
  readonly subSequenceNumber: number | undefined;
  /** What the payload failed to be: UTF-8 text, or JSON. */
  readonly format: RecordFormat;

  constructor(record: Pick<KinsumerRecord, 'shardId' | 'sequenceNumber' | 'subSequenceNumber'>, format: RecordFormat, cause: unknown) {
    const position = record.subSequenceNumber === undefined ? record.sequenceNumber : `${record.sequenceNumber}/${record.subSequenceNumber}`;
    super(`record ${position} of ${record.shardId} is not ${format === 'json' ? 'JSON' : 'UTF-8 text'}`, { cause, retriable: false });
    this.shardId = record.shardId;
    this.sequenceNumber = record.sequenceNumber;
    this.subSequenceNumber = record.subSequenceNumber;
    this.format = format;
  }
}

/** What decoding needs of a record: its payload, and where it is for the error. */
export interface RecordPayload {
  readonly shardId: string;
  readonly sequenceNumber: string;
  readonly subSequenceNumber: number | undefined;
  readonly data: Uint8Array;
}

// `fatal`: invalid UTF-8 throws instead of decoding to U+FFFD. One instance serves every call:
// decode() without `stream` keeps no state between calls.
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The payload as UTF-8 text (a leading BOM dropped); {@link RecordDecodeError} when it is not UTF-8. */
export function recordText(record: RecordPayload): string {
  try {
    return UTF8.decode(record.data);
  } catch (error) {
    throw new RecordDecodeError(record, 'utf-8', error);
  }
}

/** The payload parsed as JSON (UTF-8); {@link RecordDecodeError} when it is not. The type is the caller's claim, not checked. */
export function recordJson<T = unknown>(record: RecordPayload): T {
  const text = recordText(record);
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new RecordDecodeError(record, 'json', error);
  }
}
