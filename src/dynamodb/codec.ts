import type { AttributeValue } from '@aws-sdk/client-dynamodb';

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

/** The string of an S attribute; `undefined` for absent, NULL, or empty. */
export function readString(value: AttributeValue | undefined): string | undefined {
  if (value === undefined || !('S' in value) || typeof value.S !== 'string' || value.S === '') return undefined;
  return value.S;
}

/** An N attribute as BigInt; `undefined` for absent or NULL. Throws on a non-integer. */
export function readBigInt(value: AttributeValue | undefined): bigint | undefined {
  if (value === undefined || !('N' in value) || typeof value.N !== 'string') return undefined;
  if (!/^-?\d+$/.test(value.N)) throw new TypeError(`not an integer: ${value.N}`);
  return BigInt(value.N);
}

/** `true` for an attribute that is absent or of the NULL type (the Go kinsumer's "empty"). */
export function isEmpty(value: AttributeValue | undefined): boolean {
  return value === undefined || ('NULL' in value && value.NULL === true);
}

/** An S attribute, or the NULL type for an empty value (how the Go kinsumer writes empties). */
export function stringOrNull(value: string | undefined): AttributeValue {
  return value === undefined || value === '' ? { NULL: true } : { S: value };
}
