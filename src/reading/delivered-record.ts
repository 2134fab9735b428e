// The record as the application receives it — and the only object a record costs on its way from
// the page to the ack: the tracker keeps it as the record's position, the reader emits it, and
// `ack()` (a method, not a closure per record) hands its ticket back to the tracker. The payload
// and the arrival time stay as the stream gave them (base64 and epoch milliseconds from the lean
// GetRecords path) until the application reads them.
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { KinsumerError } from '../errors/kinsumer-errors.js';
import type { Clock } from '../ports/clock.js';
import type { Position } from '../ports/position.js';
import type { ShardTracker, WritesOutcome } from '../ports/shard-tracker.js';
import type { AckOptions, KinsumerRecord } from '../types.js';
import { LEASE_SIGNAL } from './lease-signal.js';
import { decodeBase64, recordJson, recordText } from './payload-decoding.js';
import type { StreamClock } from './stream-clock.js';

/** Where a page's records come from: their shard, the lease they are read under, the stream's clock when read. */
export interface RecordOrigin {
  readonly shardId: string;
  /** Aborted when the lease ends (see `leaseSignalOf`); `undefined` outside a lease session. */
  readonly leaseSignal: AbortSignal | undefined;
  /** The stream's clock as the page's answer told it (how old a record is); `undefined`: not known. */
  readonly streamClock?: StreamClock | undefined;
}

// The stream of each lease session's records, by the session's signal: one entry per lease, nothing per record.
const leaseStreams = new WeakMap<AbortSignal, string>();

/** Records read under the lease of `signal` are records of `streamName`. */
export function nameLeaseStream(signal: AbortSignal, streamName: string): void {
  leaseStreams.set(signal, streamName);
}

/** A record on its way to the application (see the module comment). */
export class StreamRecord implements KinsumerRecord {
  readonly shardId: string;
  readonly sequenceNumber: string;
  readonly subSequenceNumber: number | undefined;
  readonly partitionKey: string;
  declare readonly explicitHashKey?: string;
  readonly [LEASE_SIGNAL]: AbortSignal | undefined;
  // The payload: bytes, or base64 not yet decoded (a string).
  #payload: Uint8Array | string;
  // The arrival time: a Date, or epoch milliseconds not yet made into one (a number).
  #arrival: Date | number;
  readonly #aggregateDone: boolean;
  readonly #streamClock: StreamClock | undefined;
  #tracker: ShardTracker | undefined;
  #ticket = -1;

  /**
   * @param data the payload, or its base64 (a string) to decode when read.
   * @param arrival the arrival time, or epoch milliseconds (a number) to make a Date of when read.
   * @param aggregateDone a plain record, or the last sub-record of its aggregate.
   */
  constructor(
    origin: RecordOrigin, sequenceNumber: string, subSequenceNumber: number | undefined, partitionKey: string,
    explicitHashKey: string | undefined, data: Uint8Array | string, arrival: Date | number, aggregateDone: boolean,
  ) {
    this.shardId = origin.shardId;
    this.sequenceNumber = sequenceNumber;
    this.subSequenceNumber = subSequenceNumber;
    this.partitionKey = partitionKey;
    this[LEASE_SIGNAL] = origin.leaseSignal;
    this.#streamClock = origin.streamClock;
    this.#payload = data;
    this.#arrival = arrival;
    this.#aggregateDone = aggregateDone;
    if (explicitHashKey !== undefined) this.explicitHashKey = explicitHashKey;
  }

  /** The payload, as the producer wrote it (decoded from the wire's base64 on first read). */
  get data(): Uint8Array {
    const payload = this.#payload;
    if (typeof payload !== 'string') return payload;
    const data = decodeBase64(payload);
    this.#payload = data;
    return data;
  }

  /** When Kinesis accepted the record (made on first read from the wire's milliseconds). */
  get approximateArrivalTimestamp(): Date {
    const arrival = this.#arrival;
    if (typeof arrival !== 'number') return arrival;
    const date = new Date(arrival);
    this.#arrival = date;
    return date;
  }

  /**
   * `true` for a plain record or the last sub-record of its aggregate (resuming after it needs no skip).
   * @internal
   */
  get aggregateDone(): boolean {
    return this.#aggregateDone;
  }

  /**
   * How old the record is, on the stream's clock: its page's stream time carried on by the
   * monotonic clock, less its arrival time. Without a stream clock (a record made outside a
   * reader), `fallback`'s wall clock stands in.
   * @internal
   */
  static ageMs(record: KinsumerRecord, fallback: Clock): number {
    const streamClock = record instanceof StreamRecord ? record.#streamClock : undefined;
    const nowMs = streamClock === undefined ? fallback.wallNow() : streamClock.nowMs();
    const arrival = record instanceof StreamRecord ? record.#arrival : record.approximateArrivalTimestamp;
    return nowMs - (typeof arrival === 'number' ? arrival : arrival.getTime());
  }

  /**
   * The record's place in its shard, as plain data.
   * @internal
   */
  get position(): Position {
    const { sequenceNumber, subSequenceNumber } = this;
    return subSequenceNumber === undefined ? { sequenceNumber } : { sequenceNumber, subSequenceNumber };
  }

  /**
   * Registers the record with its shard's tracker, just before it is emitted.
   * @internal
   */
  track(tracker: ShardTracker): void {
    this.#ticket = tracker.track(this);
    this.#tracker = tracker;
  }

  /** The stream's name, as its lease session named it (`''` for a record read outside one). */
  get streamName(): string {
    const signal = this[LEASE_SIGNAL];
    return signal === undefined ? '' : leaseStreams.get(signal) ?? '';
  }

  /** `<shardId>/<sequenceNumber>`, and `/<subSequenceNumber>` for a KPL sub-record: the same at every delivery. */
  get id(): string {
    const { shardId, sequenceNumber, subSequenceNumber } = this;
    return subSequenceNumber === undefined ? `${shardId}/${sequenceNumber}` : `${shardId}/${sequenceNumber}/${subSequenceNumber}`;
  }

  /** The fencing token of the lease the record was delivered under (0 before it is tracked). */
  get fencingToken(): number {
    return this.#tracker?.fencingToken ?? 0;
  }

  ack(options?: AckOptions): void {
    const writes = options?.writes;
    if (writes === undefined || writes.length === 0) {
      this.#tracker?.ack(this.#ticket);
      return;
    }
    StreamRecord.ackWithWrites([this], writes, undefined);
  }

  /**
   * Acks `records` (delivered records of one lease) with writes that belong to them all, told to
   * `settle` (none: a failure ends the shard). See `ShardTracker.ackWithWrites`.
   * @throws KinsumerError when they are not records of one lease, or one was acked already; WritesTooLargeError.
   * @internal
   */
  static ackWithWrites(records: readonly KinsumerRecord[], writes: readonly TransactWriteItem[], settle: ((outcome: WritesOutcome) => void) | undefined): void {
    const tracker = records[0] instanceof StreamRecord ? records[0].#tracker : undefined;
    if (tracker === undefined) {
      settle?.({ kind: 'abandoned', error: new KinsumerError('these records were not delivered under a lease: their writes were not applied') });
      return;
    }
    const tickets: number[] = [];
    for (const record of records) {
      if (!(record instanceof StreamRecord) || record.#tracker !== tracker) throw new KinsumerError('writes can be acked only with records of one lease');
      tickets.push(record.#ticket);
    }
    if (tracker.ackWithWrites === undefined) throw new KinsumerError('ack({ writes }) needs a consumer whose lease store has transactions');
    tracker.ackWithWrites(tickets, records.map((record) => record.id), writes, settle);
  }

  text(): string {
    return recordText(this);
  }

  json<T = unknown>(): T {
    return recordJson<T>(this);
  }
}
