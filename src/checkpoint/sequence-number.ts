import type { Position } from '../ports/position.js';

const DIGITS = /^\d{1,128}$/;

/** `true` when `a` and `b` are the same place in a shard (the same record). */
export function samePosition(a: Position, b: Position): boolean {
  return a.sequenceNumber === b.sequenceNumber && a.subSequenceNumber === b.subSequenceNumber;
}

/** `true` for a string Kinesis could have produced as a sequence number. */
export function isSequenceNumber(value: unknown): value is string {
  return typeof value === 'string' && DIGITS.test(value);
}

/** Negative, zero or positive as `a` is before, equal to or after `b`. */
export function compareSequenceNumbers(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Orders positions: by sequence number, then sub-sequence. A plain record (no sub-sequence)
 * stands for its whole aggregate, so it sorts after every sub-record of the same sequence number.
 */
export function comparePositions(a: Position, b: Position): number {
  const bySequence = compareSequenceNumbers(a.sequenceNumber, b.sequenceNumber);
  if (bySequence !== 0) return bySequence;
  const subA = a.subSequenceNumber ?? Number.POSITIVE_INFINITY;
  const subB = b.subSequenceNumber ?? Number.POSITIVE_INFINITY;
  return subA < subB ? -1 : subA > subB ? 1 : 0;
}

/**
 * The sequence number as canonical decimal digits (leading zeros dropped), or `undefined` when
 * `value` is not a sequence number (as {@link isSequenceNumber}). Canonical digits order exactly
 * as their values do with {@link compareSequenceKeys}, with no BigInt to make: the per-record path
 * of a shard's checkpoint compares these.
 */
export function sequenceKey(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const { length } = value;
  if (length === 0 || length > 128) return undefined;
  for (let i = 0; i < length; i += 1) {
    const code = value.charCodeAt(i);
    if (code < 48 || code > 57) return undefined;
  }
  if (length === 1 || value.charCodeAt(0) !== 48) return value;
  let start = 0;
  while (start < length - 1 && value.charCodeAt(start) === 48) start += 1;
  return value.slice(start);
}

/** Negative, zero or positive as canonical digits `a` (see {@link sequenceKey}) are below, equal to or above `b`. */
export function compareSequenceKeys(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The sub-sequence number of a plain record in keyed comparisons: it stands for its whole aggregate, after every sub-record (as in comparePositions). */
export const WHOLE = Number.POSITIVE_INFINITY;

/** Compares positions given as canonical digits (`sequenceKey`) and sub-sequence numbers ({@link WHOLE} for a plain record), exactly as BigInt would. */
export function compareKeyed(aSequence: string, aSub: number, bSequence: string, bSub: number): number {
  const bySequence = compareSequenceKeys(aSequence, bSequence);
  if (bySequence !== 0) return bySequence;
  return aSub < bSub ? -1 : aSub > bSub ? 1 : 0;
}

/** The canonical digits of a position's sequence number (see {@link sequenceKey}). @throws RangeError on a malformed one. */
export function checkedSequenceKey(position: Position): string {
  const key = sequenceKey(position.sequenceNumber);
  if (key === undefined) throw new RangeError(`not a sequence number: ${String(position.sequenceNumber)}`);
  return key;
}

/** A position as messages spell it: `<sequenceNumber>[/<subSequenceNumber>]`. */
export function describePosition(position: Position): string {
  return position.subSequenceNumber === undefined ? position.sequenceNumber : `${position.sequenceNumber}/${position.subSequenceNumber}`;
}
