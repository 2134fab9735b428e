// The `AckedRanges` attribute of a checkpoints row (§7.3): the records acked beyond the
// checkpoint, as one compact string. Pure: ranges and the checkpoint in, text out, and back.
//
//   1;<base>;<range>,<range>,...      range = <pos> | <pos>-<pos>      pos = <delta>[.<sub>]
//
// `1` is the format's version. <base> is the checkpoint the ranges were written with ('' none,
// 'L' LATEST, 'T' TRIM_HORIZON, '@<ms>' AT_TIMESTAMP, or a position): a reader trusts the ranges
// only when the row's checkpoint is still that one, so a writer that moves the checkpoint without
// knowing the attribute (an operator's hand edit, an older kinsumer, a reset that kept it) turns
// them into duplicates, never into skipped records. Each sequence number is written as its
// distance from the one before it (the base's, or 0), and every number in base 36: Kinesis
// sequence numbers are 56 digits, but neighbours in a shard differ in far fewer.
// Sub-sequence numbers (KPL) follow a dot; no dot is a plain record (or a whole aggregate).
import { KinsumerError } from '../errors/kinsumer-errors.js';
import type { AckedRange, StoredCheckpoint } from '../ports/lease-store.js';
import { type Position } from '../ports/position.js';
import { comparePositions, isSequenceNumber } from './sequence-number.js';

/**
 * The largest `AckedRanges` value written, in bytes (ASCII: one byte a character, as DynamoDB
 * counts a string). The lowest ranges that fit are kept: those are what the next owner meets
 * first. 8 KiB is a few hundred ranges of real Kinesis sequence numbers, and keeps a row far
 * below DynamoDB's 400 KB item limit (and a commit under 10 write units).
 */
export const ACKED_RANGES_MAX_BYTES = 8192;

const VERSION = '1';
const NUMBER = '[0-9a-z]{1,84}';
const SUB = '[0-9a-z]{1,11}';
const RANGE = new RegExp(`^(${NUMBER})(?:\\.(${SUB}))?(?:-(${NUMBER})(?:\\.(${SUB}))?)?$`);

/** The encoded attribute and how many of the given ranges it holds (the lowest ones). */
export interface EncodedRanges {
  readonly text: string;
  readonly kept: number;
}

/**
 * Encodes the lowest of `ranges` that fit in `maxBytes`; `undefined` when there are none (or not
 * even one fits). `ranges` must be in order, each ending before the next begins, and
 * begin no earlier than the checkpoint (a range may start at the checkpoint itself).
 * @throws RangeError on ranges out of order or overlapping.
 */
export function encodeAckedRanges(
  checkpoint: StoredCheckpoint | undefined, ranges: readonly AckedRange[], maxBytes = ACKED_RANGES_MAX_BYTES,
): EncodedRanges | undefined {
  let text = `${VERSION};${encodeBase(checkpoint)};`;
  const base = checkpoint?.type === 'position' ? checkpoint.position : undefined;
  let previous = base === undefined ? 0n : BigInt(base.sequenceNumber);
  let last: Position | undefined;
  let kept = 0;
  for (const range of ranges) {
    if (comparePositions(range.from, range.to) > 0) throw new RangeError('an acked range ends before it begins');
    if (last === undefined ? base !== undefined && comparePositions(range.from, base) < 0 : comparePositions(range.from, last) <= 0) {
      throw new RangeError('acked ranges before the checkpoint, out of order or overlapping');
    }
    last = range.to;
    const part = rangePart(range, previous);
    const next = kept === 0 ? text + part : `${text},${part}`;
    if (next.length > maxBytes) break;
    text = next;
    previous = BigInt(range.to.sequenceNumber);
    kept += 1;
  }
  return kept === 0 ? undefined : { text, kept };
}

/**
 * The most bytes a written `AckedRanges` value may reach when ranges that must not be dropped
 * (see {@link capAckedRanges}) outgrow {@link ACKED_RANGES_MAX_BYTES}: they fit in it when they
 * are written first, and only grow when the ranges between them are dropped. Readers accept four times the cap.
 */
export const ACKED_RANGES_HARD_MAX_BYTES = 2 * ACKED_RANGES_MAX_BYTES;

/**
 * The attribute a store writes for `ranges`, all of them (`undefined`: none). A store never cuts
 * them: a cut range that must be kept (see {@link capAckedRanges}) would deliver again records
 * whose writes were applied. The checkpoint state holds back a write whose ranges do not fit.
 * @throws KinsumerError when they do not fit in {@link ACKED_RANGES_HARD_MAX_BYTES}: nothing is written.
 */
export function encodeWrittenRanges(checkpoint: StoredCheckpoint | undefined, ranges: readonly AckedRange[]): string | undefined {
  if (ranges.length === 0) return undefined;
  const encoded = encodeAckedRanges(checkpoint, ranges, ACKED_RANGES_HARD_MAX_BYTES);
  if (encoded?.kept !== ranges.length) {
    throw new KinsumerError(`refused to write acked ranges that do not fit in ${ACKED_RANGES_HARD_MAX_BYTES} bytes (${encoded?.kept ?? 0} of ${ranges.length} would): `
      + 'cutting them could deliver again records whose writes were committed');
  }
  return encoded.text;
}

/**
 * The ranges to write: every range `kept` marks (ranges whose records' writes were committed with
 * them, or a previous owner's, which may hold such records: dropping one would deliver records
 * whose writes were applied again), then the lowest of the others while the text stays within
 * `maxBytes` (the first that does not fit ends them, as {@link encodeAckedRanges} does). Without
 * `kept`, the lowest ranges that fit.
 */
export function capAckedRanges(
  checkpoint: StoredCheckpoint | undefined, ranges: readonly AckedRange[], maxBytes = ACKED_RANGES_MAX_BYTES, kept?: readonly boolean[],
): readonly AckedRange[] {
  if (kept === undefined || !kept.includes(true)) {
    const count = encodeAckedRanges(checkpoint, ranges, maxBytes)?.kept ?? 0;
    return count === ranges.length ? ranges : ranges.slice(0, count);
  }
  // The text is a header plus, per range, its distance from the one before: adding a range
  // between two kept ones costs its own part, and changes the next kept one's.
  const base = checkpoint?.type === 'position' ? BigInt(checkpoint.position.sequenceNumber) : 0n;
  const partLength = (range: AckedRange, previousEnd: bigint): number => rangePart(range, previousEnd).length + 1;
  const ends = ranges.map((range) => BigInt(range.to.sequenceNumber));
  const nextKept: number[] = [];
  for (let i = ranges.length - 1, next = -1; i >= 0; i -= 1) {
    nextKept[i] = next;
    if (kept[i] === true) next = i;
  }
  let length = `${VERSION};${encodeBase(checkpoint)};`.length - 1;
  let previousEnd = base;
  for (let i = 0; i < ranges.length; i += 1) {
    if (kept[i] !== true) continue;
    length += partLength(ranges[i] as AckedRange, previousEnd);
    previousEnd = ends[i] as bigint;
  }
  const chosen: AckedRange[] = [];
  let lastEnd = base;
  let open = true;
  for (let i = 0; i < ranges.length; i += 1) {
    const range = ranges[i] as AckedRange;
    if (kept[i] === true) {
      chosen.push(range);
      lastEnd = ends[i] as bigint;
      continue;
    }
    if (!open) continue;
    const next = nextKept[i] as number;
    const nextRange = ranges[next];
    const before = nextRange === undefined ? 0 : partLength(nextRange, lastEnd);
    const after = nextRange === undefined ? 0 : partLength(nextRange, ends[i] as bigint);
    const added = partLength(range, lastEnd) + after - before;
    if (length + added > maxBytes) {
      open = false;
      continue;
    }
    length += added;
    chosen.push(range);
    lastEnd = ends[i] as bigint;
  }
  return chosen;
}

/** One range as the attribute spells it, after a range (or the base) ending at `previousEnd`. */
function rangePart(range: AckedRange, previousEnd: bigint): string {
  const from = BigInt(range.from.sequenceNumber);
  let part = encodePosition(from - previousEnd, range.from.subSequenceNumber);
  if (comparePositions(range.from, range.to) !== 0) part += `-${encodePosition(BigInt(range.to.sequenceNumber) - from, range.to.subSequenceNumber)}`;
  return part;
}

/**
 * Decodes the attribute of a row whose checkpoint is `checkpoint`. `undefined` when it cannot be
 * trusted: not a string, malformed, out of order, beginning before the checkpoint, another format
 * version, or written with another checkpoint. Never throws: the ranges only save duplicates, so
 * a bad value is ignored (the records are delivered again) rather than stopping the shard.
 */
export function decodeAckedRanges(text: unknown, checkpoint: StoredCheckpoint | undefined): AckedRange[] | undefined {
  if (typeof text !== 'string' || text.length > 4 * ACKED_RANGES_MAX_BYTES) return undefined;
  const [version, writtenWith, list, ...rest] = text.split(';');
  if (version !== VERSION || list === undefined || rest.length > 0) return undefined;
  if (writtenWith !== encodeBase(checkpoint)) return undefined;
  const base = checkpoint?.type === 'position' ? checkpoint.position : undefined;
  let previous = base === undefined ? 0n : BigInt(base.sequenceNumber);
  let last: Position | undefined;
  const ranges: AckedRange[] = [];
  for (const part of list.split(',')) {
    const match = RANGE.exec(part);
    if (match === null) return undefined;
    const [, fromDelta, fromSub, toDelta, toSub] = match;
    const fromSequence = previous + fromBase36(fromDelta as string);
    const toSequence = toDelta === undefined ? fromSequence : fromSequence + fromBase36(toDelta);
    const from = position(fromSequence, fromSub);
    const to = toDelta === undefined ? from : position(toSequence, toSub);
    if (from === undefined || to === undefined || comparePositions(from, to) > 0) return undefined;
    if (last === undefined ? base !== undefined && comparePositions(from, base) < 0 : comparePositions(from, last) <= 0) return undefined;
    ranges.push({ from, to });
    previous = toSequence;
    last = to;
  }
  return ranges;
}

/** The checkpoint as the attribute names it. */
function encodeBase(checkpoint: StoredCheckpoint | undefined): string {
  if (checkpoint === undefined) return '';
  switch (checkpoint.type) {
    case 'LATEST': return 'L';
    case 'TRIM_HORIZON': return 'T';
    case 'AT_TIMESTAMP': return `@${checkpoint.timestamp.getTime().toString(36)}`;
    case 'position': {
      const { sequenceNumber, subSequenceNumber } = checkpoint.position;
      // A checkpoint that is not a number (a corrupt row decodes to none of these) never matches.
      return isSequenceNumber(sequenceNumber) ? encodePosition(BigInt(sequenceNumber), subSequenceNumber) : '?';
    }
  }
}

function encodePosition(sequence: bigint, sub: number | undefined): string {
  return sub === undefined ? sequence.toString(36) : `${sequence.toString(36)}.${sub.toString(36)}`;
}

function position(sequence: bigint, sub: string | undefined): Position | undefined {
  const sequenceNumber = sequence.toString();
  if (!isSequenceNumber(sequenceNumber)) return undefined;
  if (sub === undefined) return { sequenceNumber };
  const subSequenceNumber = Number.parseInt(sub, 36);
  return Number.isSafeInteger(subSequenceNumber) ? { sequenceNumber, subSequenceNumber } : undefined;
}

/** BigInt reads only bases 2, 8, 10 and 16: base 36 ten digits at a time (36^10 < 2^53). */
function fromBase36(text: string): bigint {
  let value = 0n;
  for (let i = 0; i < text.length; i += 10) {
    const chunk = text.slice(i, i + 10);
    value = value * 36n ** BigInt(chunk.length) + BigInt(Number.parseInt(chunk, 36));
  }
  return value;
}
