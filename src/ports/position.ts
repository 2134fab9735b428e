/**
 * A place in a shard: a Kinesis sequence number and, for a record that came out of a KPL
 * aggregate, its index inside the aggregate. Sequence numbers are decimal strings far beyond
 * 2^53, so they are compared as BigInt, never as numbers or as strings.
 */
export interface Position {
  /** The Kinesis sequence number (a decimal string). */
  readonly sequenceNumber: string;
  /** Index of the sub-record inside a KPL aggregate; absent (or `undefined`) for a plain record or a whole aggregate. */
  readonly subSequenceNumber?: number | undefined;
}
