// GetRecords answers without the SDK's response deserializer: a lean call's answer
// (lean-call.ts, decodeAnswer), or, for a call the SDK sends, a middleware just inside the SDK's
// deserializer takes a successful answer's body, parses it with one JSON.parse, and hands the SDK
// an empty body in its place. Each record's payload stays base64 and its arrival time a number
// (WireRecord) until the application reads them, instead of a decoded Uint8Array and a Date per
// record that the application may never look at. Anything else — an error status (throttling, an
// expired iterator, a missing stream), a body that is not the JSON expected — goes to the SDK's
// deserializer untouched, so errors are exactly the SDK's.
//
// No run-time import of the SDK here (kinesis.ts holds the client): the middleware is plain
// functions over the shapes the SDK's middleware stack passes.
import { isAscii } from 'node:buffer';
import type { Readable } from 'node:stream';
import { WireRecord } from './wire-record.js';

/** A GetRecords answer, decoded the lean way. */
export interface LeanPage {
  readonly records: WireRecord[];
  readonly nextShardIterator: string | undefined;
  readonly millisBehindLatest: number | undefined;
  readonly childShardIds: readonly string[] | undefined;
}

/** The HTTP response as the SDK's deserialize step holds it. */
interface RawResponse {
  statusCode?: number;
  headers?: Record<string, string | undefined>;
  body?: unknown;
}

type Next = (args: unknown) => Promise<{ response: unknown; output?: unknown }>;

/** A deserialize-step middleware, as the SDK's middleware stack calls it. */
export type LeanMiddleware = (next: Next) => (args: unknown) => Promise<{ response: unknown; output?: unknown }>;

/** The JSON body the SDK's deserializer gets instead: nothing to decode. */
const EMPTY_OBJECT = new TextEncoder().encode('{}');

/**
 * A middleware for one GetRecords call (add it right after — inside — `deserializerMiddleware`)
 * and what it read: `page()` is the decoded answer of the last successful attempt, `undefined`
 * when the SDK decoded the answer itself (then use the SDK's output).
 */
export function leanGetRecords(): { readonly middleware: LeanMiddleware; page(): LeanPage | undefined } {
  let page: LeanPage | undefined;
  const middleware: LeanMiddleware = (next) => async (args) => {
    const result = await next(args);
    const response = result.response as RawResponse;
    if (!isJsonSuccess(response)) return result;
    const chunks = await collect(response.body);
    if (chunks === undefined) return result;
    // From here on synchronous: the shared scratch holds this body only until the page is decoded.
    const body = joined(chunks);
    const decoded = decodeGetRecords(body);
    // Not the answer expected: the SDK decodes it (or reports it) as it always would, from bytes of its own.
    response.body = decoded === undefined ? (body === scratch.body ? Uint8Array.prototype.slice.call(body) : body) : EMPTY_OBJECT;
    page = decoded;
    return result;
  };
  return { middleware, page: () => page };
}

function isJsonSuccess(response: RawResponse): boolean {
  const status = response.statusCode ?? 0;
  if (status < 200 || status > 299) return false;
  const type = response.headers?.['content-type'] ?? response.headers?.['Content-Type'] ?? '';
  return !type.includes('cbor');
}

/**
 * A whole answer (a lean call's, kinesis/lean-call.ts) decoded the lean way; `undefined` when it is
 * not a successful GetRecords answer in JSON (then the SDK is given it).
 */
export function decodeAnswer(answer: { readonly statusCode: number; readonly headers: Record<string, string | undefined>; readonly chunks: readonly Uint8Array[] }): LeanPage | undefined {
  return isJsonSuccess(answer) ? decodeGetRecords(joined(answer.chunks)) : undefined;
}

/** The body's bytes as they came: a Node stream's chunks (the Node HTTP handler's), or bytes; `undefined` for anything else. */
async function collect(body: unknown): Promise<readonly Uint8Array[] | undefined> {
  if (body instanceof Uint8Array) return [body];
  if (!isNodeStream(body)) return undefined;
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return chunks;
}

// Where a body of several chunks is put together, reused from page to page. A fresh buffer per
// page (a GetRecords answer of 1 KiB records is ~14 MB) costs a page fault for every 4 KiB of it
// when first written, several times the copy itself; this one stays mapped, at the size of the
// largest answer seen (GetRecords returns at most 10 MiB of data, ~14 MiB as base64 in JSON).
const scratch: { bytes: Buffer; body: Uint8Array | undefined } = { bytes: Buffer.alloc(0), body: undefined };

/** The chunks as one run of bytes: the only chunk itself, else in {@link scratch} (valid until the next call). */
function joined(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  let length = 0;
  for (const chunk of chunks) length += chunk.byteLength;
  if (scratch.bytes.length < length) scratch.bytes = Buffer.allocUnsafeSlow(Math.max(length, Math.floor(scratch.bytes.length * 1.25)));
  let offset = 0;
  for (const chunk of chunks) {
    scratch.bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  scratch.body = scratch.bytes.subarray(0, length);
  return scratch.body;
}

function isNodeStream(body: unknown): body is Readable {
  return typeof body === 'object' && body !== null && typeof (body as Readable).pipe === 'function' && Symbol.asyncIterator in body;
}

/** One record of the answer, as JSON.parse gives it. */
interface JsonRecord {
  readonly SequenceNumber?: unknown;
  readonly PartitionKey?: unknown;
  readonly Data?: unknown;
  readonly ApproximateArrivalTimestamp?: unknown;
  readonly EncryptionType?: unknown;
}

/**
 * A GetRecords answer body as a {@link LeanPage}; `undefined` when it is not JSON of that shape
 * (then the SDK's deserializer gets it). `Data` is taken as base64 without checking it: Kinesis
 * only sends base64 (the SDK's decoder would throw on anything else; here a bad character would
 * be skipped when the payload is read).
 */
export function decodeGetRecords(body: Uint8Array): LeanPage | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text(Buffer.from(body.buffer, body.byteOffset, body.byteLength)));
  } catch {
    return undefined;
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const { Records, NextShardIterator, MillisBehindLatest, ChildShards } = json as Record<string, unknown>;
  // Records is a required member of the answer: without it, this is not one (the SDK decides).
  if (!Array.isArray(Records)) return undefined;
  if (NextShardIterator !== undefined && NextShardIterator !== null && typeof NextShardIterator !== 'string') return undefined;
  if (MillisBehindLatest !== undefined && MillisBehindLatest !== null && typeof MillisBehindLatest !== 'number') return undefined;
  const children = childShardIds(ChildShards);
  if (children === null) return undefined;
  const list = Records as readonly JsonRecord[];
  const records: WireRecord[] = new Array<WireRecord>(list.length);
  for (let i = 0; i < list.length; i += 1) {
    const record = wireRecord(list[i] as JsonRecord);
    if (record === undefined) return undefined;
    records[i] = record;
  }
  return {
    records,
    nextShardIterator: NextShardIterator ?? undefined,
    millisBehindLatest: MillisBehindLatest ?? undefined,
    childShardIds: children,
  };
}

/**
 * The body as text. Kinesis's JSON is ASCII but for what a partition key holds: checked at SIMD
 * speed, an ASCII body is copied as Latin-1 (the same text), three times cheaper at 1 KiB records
 * than V8's UTF-8 decoding, which is the largest single cost of a page after JSON.parse.
 */
function text(body: Buffer): string {
  return isAscii(body) ? body.toString('latin1') : body.toString('utf8');
}

function wireRecord(json: JsonRecord): WireRecord | undefined {
  const { SequenceNumber, PartitionKey, Data, ApproximateArrivalTimestamp, EncryptionType } = json;
  if (typeof SequenceNumber !== 'string' || typeof PartitionKey !== 'string' || typeof Data !== 'string') return undefined;
  // Epoch seconds with a fraction, as the SDK reads them (and rounds them to milliseconds).
  const seconds = typeof ApproximateArrivalTimestamp === 'number' ? ApproximateArrivalTimestamp : Number.NaN;
  if (!Number.isFinite(seconds)) return undefined;
  if (EncryptionType !== undefined && EncryptionType !== null && typeof EncryptionType !== 'string') return undefined;
  return new WireRecord(SequenceNumber, PartitionKey, Data, Math.round(seconds * 1000), EncryptionType ?? undefined);
}

/** The ids of `ChildShards` (`undefined` when none are named; `null` when malformed). */
function childShardIds(value: unknown): readonly string[] | undefined | null {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) return null;
  if (value.length === 0) return undefined;
  const ids: string[] = [];
  for (const child of value as unknown[]) {
    const id = typeof child === 'object' && child !== null ? (child as { ShardId?: unknown }).ShardId : undefined;
    if (typeof id !== 'string') return null;
    ids.push(id);
  }
  return ids;
}
