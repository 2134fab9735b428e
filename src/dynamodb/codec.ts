import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { compareIds } from '../group/compare-ids.js';
import type { Item } from './dynamo.js';

// The attribute formats of the Go kinsumer's tables, read and written exactly: timestamps are
// Unix nanoseconds (type N, beyond 2^53, so BigInt), each with a human-readable "...RFC" twin
// in RFC 1123 with a numeric zone; empty values are often the NULL type rather than absent.

/** Unix nanoseconds of a millisecond clock reading. */
export function nanosFromMillis(ms: number): bigint {
  return BigInt(Math.round(ms)) * 1_000_000n;
}

/** Milliseconds (as a float-free integer) of a nanosecond timestamp. */
export function millisFromNanos(ns: bigint): number {
  return Number(ns / 1_000_000n);
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'] as const;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;

/** RFC 1123 with a numeric zone, in UTC, as Go's `time.RFC1123Z` prints it: `Mon, 02 Jan 2006 15:04:05 +0000`. */
export function rfc1123z(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${DAYS[d.getUTCDay()]}, ${two(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} `
    + `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} +0000`;
}

/** A timestamp attribute pair: `<name>` (N, ns) and `<name>RFC` (S). */
export function timestampAttributes(name: string, ms: number): Record<string, AttributeValue> {
  return { [name]: { N: nanosFromMillis(ms).toString() }, [`${name}RFC`]: { S: rfc1123z(ms) } };
}

// Reading, one policy for every table: an attribute that is absent or of the NULL type (and an
// empty string) is empty, `undefined`, as the Go kinsumer writes empties; anything else of the
// wrong type or form throws AttributeFormatError. What a bad attribute means for its row (a corrupt
// checkpoint, a client row reported and left out, a leader item read as free) is the store's call.

/** An attribute holds what no writer of these tables writes: a wrong type, or a malformed value. */
export class AttributeFormatError extends Error {
  constructor(readonly attribute: string, readonly problem: string) {
    super(`${attribute} ${problem}`);
    this.name = 'AttributeFormatError';
  }
}

/** `true` for an attribute that is absent or of the NULL type (the Go kinsumer's "empty"). */
export function isEmpty(value: AttributeValue | undefined): value is undefined | { NULL: true } {
  return value === undefined || value.NULL === true;
}

/** An S attribute; `undefined` when empty. */
export function readString(item: Item, attribute: string): string | undefined {
  const value = item[attribute];
  if (isEmpty(value)) return undefined;
  if (typeof value.S !== 'string') throw new AttributeFormatError(attribute, 'is not a string');
  return value.S === '' ? undefined : value.S;
}

/** An N attribute holding an integer (Unix nanoseconds exceed 2^53: BigInt); `undefined` when empty. */
export function readInteger(item: Item, attribute: string): bigint | undefined {
  const value = item[attribute];
  if (isEmpty(value)) return undefined;
  const text: unknown = value.N;
  if (typeof text !== 'string') throw new AttributeFormatError(attribute, 'is not a number');
  if (!/^-?\d{1,40}$/.test(text)) throw new AttributeFormatError(attribute, `is not an integer: ${JSON.stringify(text.slice(0, 40))}`);
  return BigInt(text);
}

/**
 * A list of ids, `L` of `S` as the Go kinsumer writes `ShardIDs` (or a string set), deduplicated
 * and sorted; `undefined` when empty.
 */
export function readIdList(item: Item, attribute: string): string[] | undefined {
  const value = item[attribute];
  if (isEmpty(value)) return undefined;
  const listed: unknown[] | undefined = Array.isArray(value.L) ? value.L.map((element) => element.S) : Array.isArray(value.SS) ? value.SS : undefined;
  if (listed === undefined) throw new AttributeFormatError(attribute, 'is not a list');
  if (!listed.every((id): id is string => typeof id === 'string' && id !== '')) throw new AttributeFormatError(attribute, 'holds something other than ids');
  return [...new Set(listed)].sort(compareIds);
}

/** An S attribute, or the NULL type for an empty value (how the Go kinsumer writes empties). */
export function stringOrNull(value: string | undefined): AttributeValue {
  return value === undefined || value === '' ? { NULL: true } : { S: value };
}
