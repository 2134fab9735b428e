// From the raw records of a GetRecords page to the user records a reader emits: KPL aggregates
// are split, sub-records already consumed are skipped, and a corrupt aggregate stays one raw
// record (reported, never dropped). Each user record is made once, as the object the application
// will receive (see delivered-record.ts) — and only when it is taken: a page keeps its raw records
// and at most one decoded aggregate (a table of numbers over its bytes), so an aggregate of
// thousands of user records is not thousands of objects while it waits for room (R18: at most
// 2 × maxInFlightRecords records of a shard reachable).
import type { Position } from '../ports/position.js';
import type { RawRecord } from '../ports/stream.js';
import { type RecordOrigin, StreamRecord } from './delivered-record.js';
import { type AggregateDecodeError, type AggregatedRecords, deaggregate, mayBeAggregateBase64 } from './kpl.js';
import { isSkipped } from './start-position.js';

/** An aggregate delivered raw because it did not decode. */
export interface UndecodableRecord {
  readonly sequenceNumber: string;
  readonly error: AggregateDecodeError;
}

/** The aggregate whose user records are being taken. */
interface OpenAggregate {
  readonly sequenceNumber: string;
  readonly records: AggregatedRecords;
  readonly arrival: Date | number;
  /** The next user record to take. */
  next: number;
  /** Its payload bytes, and whether a taken sub-record carried them out of the page already. */
  readonly bytes: number;
  charged: boolean;
}

const NO_ORIGIN: RecordOrigin = { shardId: '', leaseSignal: undefined };

/**
 * The user records of one page, taken one at a time in sequence order. Records at or before
 * `skipThrough` are passed over when the cursor is made (they come first: a page is in order).
 */
export class PageCursor {
  #index = 0;
  #open: OpenAggregate | undefined;
  #skip: Position | undefined;
  #started = 0;

  /** `onUndecodable`: a corrupt aggregate is about to be taken as its raw record. */
  constructor(
    private readonly raw: readonly RawRecord[],
    skipThrough: Position | undefined,
    private readonly origin: RecordOrigin = NO_ORIGIN,
    private readonly onUndecodable: (record: UndecodableRecord) => void = () => undefined,
  ) {
    this.#skip = skipThrough;
    if (skipThrough !== undefined) this.#passSkipped();
  }

  /** What is still to skip on the next page: `undefined` once a record beyond it was seen. */
  get skipThrough(): Position | undefined {
    return this.#skip;
  }

  /** `true` while records are left to take (an aggregate of no user record may be all that is). */
  hasNext(): boolean {
    return this.#open !== undefined || this.#index < this.raw.length;
  }

  /** Where the next record lies and when it arrived, without making it; `undefined` at the end. */
  peek(): { readonly position: Position; readonly arrival: Date } | undefined {
    const position = this.#nextPosition();
    if (position === undefined) return undefined;
    const arrival = this.#open?.arrival ?? (this.raw[this.#index] as RawRecord).approximateArrivalTimestamp;
    return { position, arrival: typeof arrival === 'number' ? new Date(arrival) : arrival };
  }

  /**
   * Payload bytes of the raw record the last {@link next} began to take (0 when it took a later
   * sub-record of an aggregate already begun): what left the page with it.
   */
  get lastStarted(): number {
    return this.#started;
  }

  /** Payload bytes the next {@link next} would begin to take (0: a later sub-record of an aggregate begun). */
  peekBytes(): number {
    const open = this.#open;
    if (open !== undefined) return open.charged ? 0 : open.bytes;
    const raw = this.raw[this.#index];
    return raw === undefined ? 0 : rawPayloadBytes(raw);
  }

  /** Payload bytes of the raw records not yet begun. */
  bytesLeft(): number {
    const open = this.#open;
    let bytes = open === undefined || open.charged ? 0 : open.bytes;
    for (let i = this.#index; i < this.raw.length; i += 1) bytes += rawPayloadBytes(this.raw[i] as RawRecord);
    return bytes;
  }

  /** The next user record, made now; `undefined` at the end of the page. */
  next(): StreamRecord | undefined {
    const { origin } = this;
    for (;;) {
      const open = this.#open;
      if (open !== undefined) return this.#takeFrom(open);
      const raw = this.raw[this.#index];
      if (raw === undefined) return undefined;
      const { sequenceNumber, partitionKey, arrivalMs } = raw;
      if (isPlainWire(raw)) {
        this.#index += 1;
        this.#started = rawPayloadBytes(raw);
        return new StreamRecord(origin, sequenceNumber, undefined, partitionKey, undefined, raw.dataBase64, raw.arrivalMs, true);
      }
      const data = raw.data;
      const found = deaggregate(data);
      if (found.kind === 'aggregate') {
        this.#openAggregate(raw, found.records);
        continue;
      }
      this.#index += 1;
      this.#started = data.byteLength;
      if (found.kind === 'corrupt') this.onUndecodable({ sequenceNumber, error: found.error });
      return new StreamRecord(origin, sequenceNumber, undefined, partitionKey, undefined, data, arrivalMs ?? raw.approximateArrivalTimestamp, true);
    }
  }

  #takeFrom(open: OpenAggregate): StreamRecord {
    const { records } = open;
    const index = open.next;
    const done = index === records.length - 1;
    open.next = index + 1;
    this.#started = open.charged ? 0 : open.bytes;
    open.charged = true;
    if (done) this.#open = undefined;
    return new StreamRecord(this.origin, open.sequenceNumber, index, records.partitionKey(index), records.explicitHashKey(index), records.data(index), open.arrival, done);
  }

  /** Steps onto aggregate `raw`'s user records (past it, when it has none). */
  #openAggregate(raw: RawRecord, records: AggregatedRecords): void {
    this.#index += 1;
    if (records.length > 0) {
      this.#open = { sequenceNumber: raw.sequenceNumber, records, arrival: raw.arrivalMs ?? raw.approximateArrivalTimestamp, next: 0, bytes: rawPayloadBytes(raw), charged: false };
    }
  }

  /** Where the next record lies (opening the aggregate the cursor stands at, if it is one). */
  #nextPosition(): Position | undefined {
    while (this.#open === undefined) {
      const raw = this.raw[this.#index];
      if (raw === undefined) return undefined;
      const found = isPlainWire(raw) ? undefined : deaggregate(raw.data);
      if (found?.kind !== 'aggregate') return { sequenceNumber: raw.sequenceNumber };
      this.#openAggregate(raw, found.records);
    }
    return { sequenceNumber: this.#open.sequenceNumber, subSequenceNumber: this.#open.next };
  }

  /** Moves past the records at or before the skip; the skip ends at the first record beyond it. */
  #passSkipped(): void {
    for (let position = this.#nextPosition(); position !== undefined; position = this.#nextPosition()) {
      if (!isSkipped(position, this.#skip)) {
        this.#skip = undefined;
        return;
      }
      const open = this.#open;
      if (open === undefined) this.#index += 1;
      else if (++open.next === open.records.length) this.#open = undefined;
    }
  }
}

/** A raw record's payload bytes, without decoding a payload the wire left in base64. */
export function rawPayloadBytes(raw: RawRecord): number {
  const base64 = raw.dataBase64;
  if (base64 === undefined) return raw.data.byteLength;
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return (base64.length * 3) / 4 - padding;
}

/** A record of the lean GetRecords path whose payload cannot be an aggregate: it stays base64 until read. */
function isPlainWire(raw: RawRecord): raw is RawRecord & { readonly dataBase64: string; readonly arrivalMs: number } {
  return raw.dataBase64 !== undefined && raw.arrivalMs !== undefined && !mayBeAggregateBase64(raw.dataBase64);
}

/** What {@link unpackRecords} made of a page. */
export interface UnpackedRecords {
  readonly records: StreamRecord[];
  readonly undecodable: UndecodableRecord[];
  /** What is still to skip on the next page: `undefined` once a record beyond it was seen. */
  readonly skipThrough: Position | undefined;
}

/**
 * Every user record of a page at once, skipping records at or before `skipThrough` (what a
 * {@link PageCursor} gives, for a page read whole: tools and tests, not a reader).
 */
export function unpackRecords(raw: readonly RawRecord[], skipThrough: Position | undefined, origin: RecordOrigin = NO_ORIGIN): UnpackedRecords {
  const undecodable: UndecodableRecord[] = [];
  const cursor = new PageCursor(raw, skipThrough, origin, (record) => undecodable.push(record));
  const records: StreamRecord[] = [];
  for (let record = cursor.next(); record !== undefined; record = cursor.next()) records.push(record);
  return { records, undecodable, skipThrough: cursor.skipThrough };
}
