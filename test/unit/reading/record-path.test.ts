import { expect } from 'chai';
import { VirtualTimeScheduler, of } from 'rxjs';
import { createCheckpointer } from '../../../src/checkpoint/checkpointer.js';
import type { ShardTracker } from '../../../src/ports/shard-tracker.js';
import type { RawRecord } from '../../../src/ports/stream.js';
import type { LeaseStore } from '../../../src/ports/lease-store.js';
import { leaseSignalOf } from '../../../src/reading/lease-signal.js';
import { readShard } from '../../../src/reading/shard-reader.js';
import { MemoryStream } from '../../../src/testing/index.js';
import type { KinsumerRecord } from '../../../src/types.js';
import { unpackRecords } from '../../../src/reading/unpack-page.js';
import { WireRecord } from '../../../src/kinesis/wire-record.js';
import { advance } from '../../support/virtual-time.js';

// The per-record path from a fetched page to the ack (issue 19): one object per record, nothing
// decoded or dated before the application reads it, no clock read or timer per record.

/** Counts what the reader and the checkpointer ask of the scheduler. */
class CountingScheduler extends VirtualTimeScheduler {
  nows = 0;
  schedules = 0;

  constructor() {
    super();
    const now = this.now.bind(this);
    this.now = () => {
      this.nows += 1;
      return now();
    };
  }

  override schedule<T>(work: (this: unknown, state?: T) => void, delay?: number, state?: T) {
    this.schedules += 1;
    return super.schedule(work, delay, state);
  }
}

// Writes always succeed at once: only the reader and the checkpointer's own work is looked at.
const store: LeaseStore = {
  read: () => of(undefined),
  readMany: () => of([]),
  capture: () => of(undefined),
  commit: () => of(undefined),
  renew: () => of(undefined),
  release: () => of(undefined),
  resetCheckpoint: () => of(undefined),
};

/** One leased shard of `count` records read to the end by a consumer that acks each at once; what the scheduler was asked. */
function readAndAck(count: number, spy?: (tracker: ShardTracker) => ShardTracker): { nows: number; schedules: number; received: KinsumerRecord[] } {
  const scheduler = new CountingScheduler();
  const stream = new MemoryStream({ shardCount: 1, clock: () => scheduler.now() });
  const [shardId = ''] = stream.shardIds();
  stream.putRecords(Array.from({ length: count }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
  const checkpointer = createCheckpointer({
    store, lease: { shardId, ownerId: 'me', leaseCounter: 1, checkpoint: undefined, finished: false },
    commitFrequencyMs: 1000, renewIntervalMs: 5000, scheduler, emit: () => undefined,
  });
  const received: KinsumerRecord[] = [];
  const run = checkpointer.run$.subscribe();
  const reading = readShard({
    shardId, stream, tracker: spy === undefined ? checkpointer : spy(checkpointer), start: { type: 'TRIM_HORIZON' },
    throttleDelayMs: 200, maxInFlightRecords: 10_000, scheduler, emit: () => undefined,
  }).subscribe((record) => {
    received.push(record);
    record.ack();
  });
  const before = { nows: scheduler.nows, schedules: scheduler.schedules };
  advance(scheduler, 150);
  const counts = { nows: scheduler.nows - before.nows, schedules: scheduler.schedules - before.schedules, received };
  reading.unsubscribe();
  run.unsubscribe();
  return counts;
}

describe('the record path: page → track → emit → ack', () => {
  it('reads the clock and schedules timers no more for 2,000 records than for 20 (never per record)', () => {
    const few = readAndAck(20);
    const many = readAndAck(2000);
    expect([few.received.length, many.received.length]).to.deep.equal([20, 2000]);
    expect(many.schedules - few.schedules, 'timers scheduled').to.be.at.most(2);
    expect(many.nows - few.nows, 'clock reads').to.be.at.most(2);
  });

  it('the emitted record is the object the tracker keeps, and its ack() hands back its ticket (no closure per record)', () => {
    const tracked: unknown[] = [];
    const acked: number[] = [];
    const tickets: number[] = [];
    const { received } = readAndAck(3, (tracker) => ({
      ...tracker,
      track: (record) => {
        tracked.push(record);
        const ticket = tracker.track(record);
        tickets.push(ticket);
        return ticket;
      },
      ack: (ticket) => {
        acked.push(ticket);
        tracker.ack(ticket);
      },
    }));
    expect(received).to.have.length(3);
    received.forEach((record, i) => expect(tracked[i], `record ${i}`).to.equal(record));
    expect(acked).to.deep.equal(tickets);
    expect(Object.keys(received[0] ?? {})).to.not.include('ack');
    expect(typeof Object.getOwnPropertyDescriptor(Object.getPrototypeOf(received[0]) as object, 'ack')?.value).to.equal('function');
  });

  it('ack() is idempotent: a second ack of a record reaches the tracker and changes nothing', () => {
    const acked: number[] = [];
    let changes = 0;
    readAndAck(2, (tracker) => {
      tracker.acks$.subscribe(() => { changes += 1; });
      return { ...tracker, ack: (ticket) => { acked.push(ticket); tracker.ack(ticket); } };
    }).received.forEach((record) => record.ack());
    // Each record acked twice (the consumer's ack, then again): told twice, changed once.
    expect([acked.length, changes]).to.deep.equal([4, 2]);
  });

  it('a record carries its lease\'s signal from the moment it is emitted', () => {
    const scheduler = new VirtualTimeScheduler();
    const stream = new MemoryStream({ shardCount: 1, clock: () => scheduler.now() });
    const [shardId = ''] = stream.shardIds();
    stream.putRecords([{ partitionKey: 'k', data: 'x' }]);
    const lease = new AbortController();
    const checkpointer = createCheckpointer({
      store, lease: { shardId, ownerId: 'me', leaseCounter: 1, checkpoint: undefined, finished: false },
      commitFrequencyMs: 1000, renewIntervalMs: 5000, scheduler, emit: () => undefined,
    });
    const signals: unknown[] = [];
    const reading = readShard({
      shardId, stream, tracker: checkpointer, start: { type: 'TRIM_HORIZON' }, throttleDelayMs: 200, maxInFlightRecords: 10, scheduler,
      emit: () => undefined, leaseSignal: lease.signal,
    }).subscribe((record) => signals.push(leaseSignalOf(record)));
    advance(scheduler, 50);
    reading.unsubscribe();
    expect(signals).to.deep.equal([lease.signal]);
  });
});

/** A wire record that counts reads of its decoded payload and of its Date. */
class CountedWireRecord extends WireRecord {
  static dataReads = 0;
  static dateReads = 0;

  override get data(): Uint8Array {
    CountedWireRecord.dataReads += 1;
    return super.data;
  }

  override get approximateArrivalTimestamp(): Date {
    CountedWireRecord.dateReads += 1;
    return super.approximateArrivalTimestamp;
  }
}

describe('records from the lean GetRecords path', () => {
  const wire = (i: number, base64: string): WireRecord => new CountedWireRecord(`4959${String(i).padStart(52, '0')}`, `k${i}`, base64, 1_700_000_000_123 + i, undefined);

  it('are unpacked without decoding their payload or making a Date; both are made once, when read', () => {
    CountedWireRecord.dataReads = 0;
    CountedWireRecord.dateReads = 0;
    const page: RawRecord[] = Array.from({ length: 100 }, (_, i) => wire(i, Buffer.from(`payload ${i}`).toString('base64')));
    const { records } = unpackRecords(page, undefined, { shardId: 's', leaseSignal: undefined });
    expect([CountedWireRecord.dataReads, CountedWireRecord.dateReads], 'reads of the wire record while unpacking').to.deep.equal([0, 0]);
    const first = records[0];
    expect(Buffer.from(first?.data ?? []).toString()).to.equal('payload 0');
    expect(first?.data, 'decoded once, then kept').to.equal(first?.data);
    expect(first?.data).to.be.instanceOf(Uint8Array);
    expect(Buffer.isBuffer(first?.data), 'a Uint8Array, as the SDK hands data over').to.equal(false);
    expect(first?.approximateArrivalTimestamp.getTime()).to.equal(1_700_000_000_123);
    expect(first?.approximateArrivalTimestamp, 'made once, then kept').to.equal(first?.approximateArrivalTimestamp);
  });

  it('a payload that starts with the KPL magic bytes is decoded and split; one that only looks close is plain', () => {
    const magic = Buffer.from([0xf3, 0x89, 0x9a, 0xc2, 1, 2, 3]);
    const near = Buffer.from([0xf3, 0x89, 0x9a, 0xc3, 1, 2, 3]);
    const { records, undecodable } = unpackRecords([wire(1, magic.toString('base64')), wire(2, near.toString('base64'))], undefined);
    // The magic without a valid aggregate after it: delivered raw and reported (as from the SDK's bytes).
    expect(undecodable.map((u) => u.error.fault)).to.deep.equal(['truncated']);
    expect(records.map((r) => Buffer.from(r.data).toString('hex'))).to.deep.equal([magic.toString('hex'), near.toString('hex')]);
  });
});
