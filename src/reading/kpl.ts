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

// Per user record, four numbers in AggregatedRecords' table: its partition key's index, its
// explicit hash key's index (-1: none), and where its data starts and ends in the aggregate.
const FIELDS = 4;

/**
 * The user records of a decoded aggregate: checked whole (digest, structure, every index) when
 * decoded, but kept as a table of numbers over the aggregate's own bytes, so an aggregate of
 * thousands costs no object per user record until one is asked for (R18: a reader makes each
 * record only when it emits it).
 */
export class AggregatedRecords implements Iterable<AggregatedUserRecord> {
  /** How many user records the aggregate holds. */
  readonly length: number;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly partitionKeys: readonly string[],
    private readonly explicitHashKeys: readonly string[],
    private readonly table: readonly number[],
  ) {
    this.length = table.length / FIELDS;
  }

  /** The partition key of user record `index`. */
  partitionKey(index: number): string {
    return this.partitionKeys[this.table[index * FIELDS] as number] as string;
  }

  /** The explicit hash key of user record `index`, if it has one. */
  explicitHashKey(index: number): string | undefined {
    const key = this.table[index * FIELDS + 1] as number;
    return key < 0 ? undefined : this.explicitHashKeys[key];
  }

  /** The payload of user record `index`: a view into the aggregate's bytes (no copy). */
  data(index: number): Uint8Array {
    return this.bytes.subarray(this.table[index * FIELDS + 2], this.table[index * FIELDS + 3]);
  }

  /** User record `index` as one object. */
  at(index: number): AggregatedUserRecord {
    return { partitionKey: this.partitionKey(index), explicitHashKey: this.explicitHashKey(index), data: this.data(index) };
  }

  *[Symbol.iterator](): Iterator<AggregatedUserRecord> {
    for (let index = 0; index < this.length; index += 1) yield this.at(index);
  }
}

/** What {@link deaggregate} found in a record's data. */
export type Deaggregation =
  /** Not an aggregate: deliver the record as it is. */
  | { readonly kind: 'plain' }
  | { readonly kind: 'aggregate'; readonly records: AggregatedRecords }
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
    return { kind: 'aggregate', records: decodeAggregatedRecord(data, bodyEnd) };
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

function decodeAggregatedRecord(data: Uint8Array, bodyEnd: number): AggregatedRecords {
  const reader = new ProtoReader(data, KPL_MAGIC.length, bodyEnd);
  const partitionKeys: string[] = [];
  const explicitHashKeys: string[] = [];
  const table: number[] = [];
  while (!reader.done()) {
    const { field, wire } = reader.tag();
    if (field === 1 || field === 2 || field === 3) {
      if (wire !== WIRE_LENGTH_DELIMITED) throw new AggregateDecodeError('malformed', `field ${field} has wire type ${wire}`);
      if (field === 1) partitionKeys.push(reader.string());
      else if (field === 2) explicitHashKeys.push(reader.string());
      else decodeRecord(reader.message(), table);
    } else {
      reader.skip(wire);
    }
  }
  // The key tables may come after the records that name them: indices are checked once all is read.
  for (let index = 0; index < table.length / FIELDS; index += 1) {
    const partitionKey = table[index * FIELDS] as number;
    const explicitHashKey = table[index * FIELDS + 1] as number;
    if (partitionKey >= partitionKeys.length) throw new AggregateDecodeError('malformed', `user record ${index} names partition key ${partitionKey} of ${partitionKeys.length}`);
    if (explicitHashKey >= explicitHashKeys.length) {
      throw new AggregateDecodeError('malformed', `user record ${index} names explicit hash key ${explicitHashKey} of ${explicitHashKeys.length}`);
    }
  }
  return new AggregatedRecords(data, partitionKeys, explicitHashKeys, table);
}

/** Appends one user record's four numbers (see {@link FIELDS}) to `table`. */
function decodeRecord(reader: ProtoReader, table: number[]): void {
  const index = table.length / FIELDS;
  let partitionKey = -1;
  let explicitHashKey = -1;
  let dataStart = -1;
  let dataEnd = -1;
  while (!reader.done()) {
    const { field, wire } = reader.tag();
    if (field === 1 || field === 2) {
      if (wire !== WIRE_VARINT) throw new AggregateDecodeError('malformed', `record field ${field} has wire type ${wire}`);
      if (field === 1) partitionKey = reader.varint();
      else explicitHashKey = reader.varint();
    } else if (field === 3) {
      if (wire !== WIRE_LENGTH_DELIMITED) throw new AggregateDecodeError('malformed', `record data has wire type ${wire}`);
      [dataStart, dataEnd] = reader.range();
    } else {
      reader.skip(wire); // tags (field 4) and anything newer
    }
  }
  if (partitionKey < 0 || dataStart < 0) {
    throw new AggregateDecodeError('malformed', `user record ${index} lacks its ${dataStart < 0 ? 'data' : 'partition key index'}`);
  }
  table.push(partitionKey, explicitHashKey, dataStart, dataEnd);
}

const utf8 = new TextDecoder();

/** Just enough protobuf: varints and length-delimited fields, bounds-checked, positions in the whole buffer. */
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

  /** Where a length-delimited field's bytes lie in the buffer: [start, end). */
  range(): [number, number] {
    const length = this.varint();
    if (length > this.end - this.position) throw new AggregateDecodeError('truncated', `field of ${length} bytes runs past the end`);
    const start = this.position;
    this.position += length;
    return [start, this.position];
  }

  string(): string {
    const [start, end] = this.range();
    return utf8.decode(this.buffer.subarray(start, end));
  }

  /** A reader of an embedded message, over the same buffer (positions stay the buffer's). */
  message(): ProtoReader {
    const [start, end] = this.range();
    return new ProtoReader(this.buffer, start, end);
  }

  skip(wire: number): void {
    if (wire === WIRE_VARINT) this.varint();
    else if (wire === WIRE_LENGTH_DELIMITED) this.range();
    else if (wire === WIRE_FIXED64 || wire === WIRE_FIXED32) {
      const size = wire === WIRE_FIXED64 ? 8 : 4;
      if (size > this.end - this.position) throw new AggregateDecodeError('truncated', 'fixed-size field runs past the end');
      this.position += size;
    } else {
      throw new AggregateDecodeError('malformed', `unsupported wire type ${wire}`);
    }
  }
}
