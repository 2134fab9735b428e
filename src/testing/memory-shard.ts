// One shard of a MemoryStream: its records, where its trim horizon lies, what a page of it holds and
// what its read budget allows. Kept apart from the stream so each rule has one place: Kinesis's limits
// on a page (10,000 records, 10 MiB), its per-shard read rate, and how retention trims a shard.
import type { RawRecord } from '../ports/stream.js';

/** A shard of a MemoryStream. */
export interface MemoryShard {
  readonly id: string;
  readonly index: number;
  readonly parentShardIds: readonly string[];
  readonly startingHashKey: bigint;
  readonly endingHashKey: bigint;
  /** Every record put, oldest first (trimmed ones too: positions into it never move). */
  readonly records: RawRecord[];
  open: boolean;
  children: readonly string[];
  /** Records before this index are trimmed (retention): no iterator returns them any more. */
  trimmed: number;
  /** When the shard's read budget allows the next GetRecords (stream clock, ms). */
  readReadyAtMs: number;
}

/** A MemoryStream holds at most this many shards: a sequence number's last digits name its shard. */
export const SHARD_SLOTS = 1024;
// 56 digits like Kinesis's: "4959" and 52 digits of counter x 1024 + shard index, so a sequence
// number proves its shard, and making one needs no BigInt.
const SEQUENCE_PREFIX = '4959';
const ZEROS = '0'.repeat(52);
const SEQUENCE_BASE = 4959n * 10n ** 52n;

/** The `counter`th sequence number of shard `shardIndex` (0: a number below every record of it). */
export function sequenceNumberOf(counter: number, shardIndex: number): string {
  const digits = String(counter * SHARD_SLOTS + shardIndex);
  return SEQUENCE_PREFIX + ZEROS.slice(digits.length) + digits;
}

/** `sequenceNumber` as a number when it is one of shard `shardIndex`; `undefined` otherwise. */
export function sequenceInShard(sequenceNumber: string, shardIndex: number): bigint | undefined {
  const sequence = /^\d{1,128}$/.test(sequenceNumber) ? BigInt(sequenceNumber) : undefined;
  if (sequence === undefined || sequence < SEQUENCE_BASE || Number((sequence - SEQUENCE_BASE) % BigInt(SHARD_SLOTS)) !== shardIndex) return undefined;
  return sequence;
}

/** Kinesis returns at most this much data in one GetRecords (and at least one record, whatever its size). */
export const MAX_PAGE_BYTES = 10 * 1024 * 1024;

/** The bytes a record carries: its payload. */
export function payloadBytes(record: RawRecord): number {
  return record.data.byteLength;
}

/**
 * The first record the shard still keeps, retention `retentionMs` before `nowMs`: records that
 * arrived earlier are trimmed, for good (the horizon only moves forward).
 */
export function trimHorizon(shard: MemoryShard, nowMs: number, retentionMs: number): number {
  const { records } = shard;
  const oldestKeptMs = nowMs - retentionMs;
  while (shard.trimmed < records.length && (records[shard.trimmed] as RawRecord).approximateArrivalTimestamp.getTime() < oldestKeptMs) {
    shard.trimmed += 1;
  }
  return shard.trimmed;
}

/** The records of a GetRecords page from `position`: at most `limit`, and at most {@link MAX_PAGE_BYTES} unless the first alone is more. */
export function pageOf(records: readonly RawRecord[], position: number, limit: number): RawRecord[] {
  const page: RawRecord[] = [];
  let bytes = 0;
  for (let i = position; i < records.length && page.length < limit; i += 1) {
    const record = records[i] as RawRecord;
    bytes += payloadBytes(record);
    if (page.length > 0 && bytes > MAX_PAGE_BYTES) break;
    page.push(record);
  }
  return page;
}

/** The first index in [0, length) where `reached` holds (it must hold from some index on); `length` when none. */
export function firstIndex(length: number, reached: (index: number) => boolean): number {
  let low = 0;
  let high = length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (reached(middle)) high = middle;
    else low = middle + 1;
  }
  return low;
}
