/**
 * A place in a shard: a Kinesis sequence number and, for a record that came out of a KPL
 * aggregate, its index inside the aggregate. Sequence numbers are decimal strings far beyond
 * 2^53, so they are compared as BigInt, never as numbers or as strings.
 */
export interface Position {
  /** The Kinesis sequence number (a decimal string). */
  readonly sequenceNumber: string;
  /** Index of the sub-record inside a KPL aggregate; absent for a plain record or a whole aggregate. */
  readonly subSequenceNumber?: number;
}

const DIGITS = /^\d{1,128}$/;

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
