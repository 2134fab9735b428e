// KPL deaggregation, written here so the library keeps zero runtime dependencies.
// Format (amazon-kinesis-producer, aggregation-format.md): 4 magic bytes, a protobuf
// AggregatedRecord, then the MD5 digest of the protobuf bytes.
//
//   message AggregatedRecord { repeated string partition_key_table = 1;
//                              repeated string explicit_hash_key_table = 2;
//                              repeated Record records = 3; }
//   message Record { required uint64 partition_key_index = 1; optional uint64 explicit_hash_key_index = 2;
//                    required bytes data = 3; repeated Tag tags = 4; }
import { createHash } from 'node:crypto';
import { KinsumerError } from '../errors/kinsumer-errors.js';

/** The four bytes every KPL aggregate starts with. */
export const KPL_MAGIC: readonly number[] = [0xf3, 0x89, 0x9a, 0xc2];

const DIGEST_BYTES = 16;
const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH_DELIMITED = 2;
const WIRE_FIXED32 = 5;

/** Why an aggregate could not be decoded. */
export type AggregateFault = 'truncated' | 'checksum' | 'malformed';

/** A record carries the KPL magic prefix but is not a valid aggregate. */
export class AggregateDecodeError extends KinsumerError {
  readonly fault: AggregateFault;

  constructor(fault: AggregateFault, detail: string) {
    super(`KPL aggregate is ${fault === 'checksum' ? 'corrupt (MD5 mismatch)' : fault}: ${detail}`);
    this.fault = fault;
  }
}

/** One user record out of an aggregate; its index in the aggregate is its sub-sequence number. */
export interface AggregatedUserRecord {
  readonly partitionKey: string;
  readonly explicitHashKey: string | undefined;
  /** A view into the aggregate's bytes (no copy). */
  readonly data: Uint8Array;
}

/** What {@link deaggregate} found in a record's data. */
export type Deaggregation =
  /** Not an aggregate: deliver the record as it is. */
  | { readonly kind: 'plain' }
  | { readonly kind: 'aggregate'; readonly records: readonly AggregatedUserRecord[] }
  /** Starts like an aggregate but does not decode: deliver the raw record and report the error. */
  | { readonly kind: 'corrupt'; readonly error: AggregateDecodeError };

// In base64 the magic bytes F3 89 9A C2 start "84ma" then "w" (the first six bits of C2): a payload
// still in base64 that starts otherwise is a plain record, known without decoding it.
const KPL_MAGIC_BASE64 = '84maw';

/** `false` when a base64 payload cannot be a KPL aggregate (it does not start with the magic bytes). */
export function mayBeAggregateBase64(base64: string): boolean {
  return base64.startsWith(KPL_MAGIC_BASE64);
}

/** `true` when the data starts with the KPL magic bytes. */
export function hasKplMagic(data: Uint8Array): boolean {
  return data.length >= KPL_MAGIC.length
    && data[0] === KPL_MAGIC[0] && data[1] === KPL_MAGIC[1] && data[2] === KPL_MAGIC[2] && data[3] === KPL_MAGIC[3];
}

// Most records are plain: answer them without allocating.
const PLAIN: Deaggregation = { kind: 'plain' };

/** Splits a KPL aggregate into its user records. Never throws: a bad aggregate is a `corrupt` result. */
export function deaggregate(data: Uint8Array): Deaggregation {
  if (!hasKplMagic(data)) return PLAIN;
  if (data.length < KPL_MAGIC.length + DIGEST_BYTES) {
    return { kind: 'corrupt', error: new AggregateDecodeError('truncated', `${data.length} bytes, shorter than magic and digest`) };
  }
  const bodyEnd = data.length - DIGEST_BYTES;
  const body = data.subarray(KPL_MAGIC.length, bodyEnd);
  if (!digestMatches(body, data.subarray(bodyEnd))) {
    return { kind: 'corrupt', error: new AggregateDecodeError('checksum', `${body.length} protobuf bytes`) };
  }
  try {
    return { kind: 'aggregate', records: decodeAggregatedRecord(body) };
  } catch (error) {
    if (error instanceof AggregateDecodeError) return { kind: 'corrupt', error };
    throw error;
  }
}

function digestMatches(body: Uint8Array, digest: Uint8Array): boolean {
  const actual = createHash('md5').update(body).digest();
  for (let i = 0; i < DIGEST_BYTES; i += 1) if (actual[i] !== digest[i]) return false;
  return true;
}

interface RecordEntry {
  partitionKeyIndex: number | undefined;
  explicitHashKeyIndex: number | undefined;
  data: Uint8Array | undefined;
}

function decodeAggregatedRecord(body: Uint8Array): AggregatedUserRecord[] {
  const reader = new ProtoReader(body, 0, body.length);
  const partitionKeys: string[] = [];
  const explicitHashKeys: string[] = [];
  const entries: RecordEntry[] = [];
  while (!reader.done()) {
    const { field, wire } = reader.tag();
    if (field === 1 || field === 2 || field === 3) {
      if (wire !== WIRE_LENGTH_DELIMITED) throw new AggregateDecodeError('malformed', `field ${field} has wire type ${wire}`);
      if (field === 1) partitionKeys.push(reader.string());
      else if (field === 2) explicitHashKeys.push(reader.string());
      else entries.push(decodeRecord(reader.message()));
    } else {
      reader.skip(wire);
    }
  }
  return entries.map((entry, index) => toUserRecord(entry, index, partitionKeys, explicitHashKeys));
}

function decodeRecord(reader: ProtoReader): RecordEntry {
  const entry: RecordEntry = { partitionKeyIndex: undefined, explicitHashKeyIndex: undefined, data: undefined };
  while (!reader.done()) {
    const { field, wire } = reader.tag();
    if (field === 1 || field === 2) {
      if (wire !== WIRE_VARINT) throw new AggregateDecodeError('malformed', `record field ${field} has wire type ${wire}`);
      if (field === 1) entry.partitionKeyIndex = reader.varint();
      else entry.explicitHashKeyIndex = reader.varint();
    } else if (field === 3) {
      if (wire !== WIRE_LENGTH_DELIMITED) throw new AggregateDecodeError('malformed', `record data has wire type ${wire}`);
      entry.data = reader.bytes();
    } else {
      reader.skip(wire); // tags (field 4) and anything newer
    }
  }
  return entry;
}

function toUserRecord(entry: RecordEntry, index: number, partitionKeys: readonly string[], explicitHashKeys: readonly string[]): AggregatedUserRecord {
  const { partitionKeyIndex, explicitHashKeyIndex, data } = entry;
  if (partitionKeyIndex === undefined || data === undefined) {
    throw new AggregateDecodeError('malformed', `user record ${index} lacks its ${data === undefined ? 'data' : 'partition key index'}`);
  }
  const partitionKey = partitionKeys[partitionKeyIndex];
  if (partitionKey === undefined) throw new AggregateDecodeError('malformed', `user record ${index} names partition key ${partitionKeyIndex} of ${partitionKeys.length}`);
  let explicitHashKey: string | undefined;
  if (explicitHashKeyIndex !== undefined) {
    explicitHashKey = explicitHashKeys[explicitHashKeyIndex];
    if (explicitHashKey === undefined) {
      throw new AggregateDecodeError('malformed', `user record ${index} names explicit hash key ${explicitHashKeyIndex} of ${explicitHashKeys.length}`);
    }
  }
  return { partitionKey, explicitHashKey, data };
}

const utf8 = new TextDecoder();

/** Just enough protobuf: varints and length-delimited fields, bounds-checked. */
class ProtoReader {
  constructor(private readonly buffer: Uint8Array, private position: number, private readonly end: number) {}

  done(): boolean {
    return this.position >= this.end;
  }

  tag(): { field: number; wire: number } {
    const tag = this.varint();
    const field = Math.floor(tag / 8);
    if (field === 0) throw new AggregateDecodeError('malformed', 'field number 0');
    return { field, wire: tag % 8 };
  }

  /** An unsigned varint; values beyond 2^53 are no index or length this format can hold. */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i += 1) {
      if (this.position >= this.end) throw new AggregateDecodeError('truncated', 'varint runs past the end');
      const byte = this.buffer[this.position] ?? 0;
      this.position += 1;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (!Number.isSafeInteger(value)) throw new AggregateDecodeError('malformed', 'varint beyond 2^53');
        return value;
      }
      scale *= 128;
    }
    throw new AggregateDecodeError('malformed', 'varint longer than 10 bytes');
  }

  bytes(): Uint8Array {
    const length = this.varint();
    if (length > this.end - this.position) throw new AggregateDecodeError('truncated', `field of ${length} bytes runs past the end`);
    const start = this.position;
    this.position += length;
    return this.buffer.subarray(start, this.position);
  }

  string(): string {
    return utf8.decode(this.bytes());
  }

  message(): ProtoReader {
    const view = this.bytes();
    return new ProtoReader(view, 0, view.length);
  }

  skip(wire: number): void {
    if (wire === WIRE_VARINT) this.varint();
    else if (wire === WIRE_LENGTH_DELIMITED) this.bytes();
    else if (wire === WIRE_FIXED64 || wire === WIRE_FIXED32) {
      const size = wire === WIRE_FIXED64 ? 8 : 4;
      if (size > this.end - this.position) throw new AggregateDecodeError('truncated', 'fixed-size field runs past the end');
      this.position += size;
    } else {
      throw new AggregateDecodeError('malformed', `unsupported wire type ${wire}`);
    }
  }
}
