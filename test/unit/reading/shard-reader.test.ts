import { expect } from 'chai';
import fc from 'fast-check';
import { type Subscription, VirtualAction, VirtualTimeScheduler, map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { backoffDelay } from '../../../src/errors/retry-backoff.js';
import { StreamNotFoundError } from '../../../src/errors/kinsumer-errors.js';
import { type ReadShardOptions, readShard } from '../../../src/reading/shard-reader.js';
import { ShardReadError } from '../../../src/reading/read-errors.js';
import { START_SKEW_MARGIN_MS, planStart } from '../../../src/reading/start-position.js';
import type { IteratorStart, StreamPort } from '../../../src/ports/stream.js';
import { MemoryStream, type MemoryStreamOptions, type StreamCall, awsError } from '../../../src/testing/memory-stream.js';
import type { KinsumerEvent, KinsumerRecord } from '../../../src/types.js';
import { aggregate } from '../../support/kpl-aggregate.js';
import { TestTracker } from '../../support/test-tracker.js';
import { at, runTo } from '../../support/virtual-time.js';

const SHARD = 'shardId-000000000000';
const text = (data: Uint8Array) => Buffer.from(data).toString('utf8');
const payloads = (n: number, prefix = 'r') => Array.from({ length: n }, (_, i) => ({ partitionKey: `pk-${i % 3}`, data: `${prefix}${i}` }));

interface Setup {
  readonly streamOptions?: MemoryStreamOptions;
  readonly reader?: Partial<Omit<ReadShardOptions, 'stream' | 'tracker' | 'scheduler' | 'emit'>>;
  /** Ack each record as it arrives. */
  readonly autoAck?: boolean;
  /** Ack each record this long after it arrived. */
  readonly ackAfterMs?: number;
  /** Ack a record as it arrives when this says so. */
  readonly ackIf?: (record: KinsumerRecord) => boolean;
}

/** A reader on a MemoryStream, on virtual time. */
function harness(setup: Setup = {}) {
  const scheduler = new VirtualTimeScheduler(VirtualAction, Number.POSITIVE_INFINITY);
  const stream = new MemoryStream({ clock: () => scheduler.now(), ...setup.streamOptions, ...(setup.streamOptions?.latencyMs ? { scheduler } : {}) });
  const tracker = new TestTracker();
  const events: KinsumerEvent[] = [];
  const received: KinsumerRecord[] = [];
  const receivedAtMs: number[] = [];
  const calls: (StreamCall & { room: number })[] = [];
  const maxInFlightRecords = setup.reader?.maxInFlightRecords ?? 100;
  stream.onCall((call) => calls.push({ ...call, room: maxInFlightRecords - tracker.pending() }));
  const state = { completed: false, error: undefined as unknown };
  let subscription: Subscription | undefined;
  const options = (): ReadShardOptions => ({
    shardId: SHARD, stream, tracker, scheduler, emit: (event) => events.push(event),
    start: { type: 'TRIM_HORIZON' }, throttleDelayMs: 250, maxInFlightRecords, random: () => 0.5,
    ...setup.reader,
  });
  return {
    scheduler, stream, tracker, events, received, receivedAtMs, calls, state,
    start(overrides: Partial<ReadShardOptions> = {}) {
      subscription = readShard({ ...options(), ...overrides }).subscribe({
        next: (record) => {
          received.push(record);
          receivedAtMs.push(scheduler.now());
          if (setup.autoAck === true || setup.ackIf?.(record) === true) record.ack();
          if (setup.ackAfterMs !== undefined) scheduler.schedule(() => record.ack(), setup.ackAfterMs);
        },
        error: (error: unknown) => { state.error = error; },
        complete: () => { state.completed = true; },
      });
    },
    stop() {
      subscription?.unsubscribe();
    },
    runTo: (ms: number) => runTo(scheduler, ms),
    at: (ms: number, work: () => void) => at(scheduler, ms, work),
    getRecordsCalls: () => calls.filter((c) => c.operation === 'getRecords'),
    iteratorCalls: () => calls.filter((c) => c.operation === 'getShardIterator'),
  };
}

describe('readShard (virtual time, MemoryStream)', () => {
  it('emits the shard\'s records in sequence order with their data and metadata, and tracks each', () => {
    const h = harness({ autoAck: true });
    const put = h.stream.putRecords(payloads(30));
    h.start();
    h.runTo(5000);
    h.stop();
    expect(h.received.map((r) => r.sequenceNumber)).to.deep.equal(put.map((p) => p.sequenceNumber));
    expect(h.received.map((r) => text(r.data))).to.deep.equal(payloads(30).map((p) => p.data));
    expect(h.received.map((r) => r.partitionKey)).to.deep.equal(payloads(30).map((p) => p.partitionKey));
    const first = h.received[0] as KinsumerRecord;
    expect(first.shardId).to.equal(SHARD);
    expect(first.subSequenceNumber).to.equal(undefined);
    expect('explicitHashKey' in first).to.equal(false);
    expect(first.approximateArrivalTimestamp).to.deep.equal(h.stream.records(SHARD)[0]?.approximateArrivalTimestamp);
    expect(h.tracker.tracked).to.deep.equal(put.map((p) => ({ sequenceNumber: p.sequenceNumber })));
    expect(h.tracker.inFlight()).to.equal(0);
  });

  it('calls GetRecords at once, then throttleDelayMs apart after a page with records and once a second after an empty one', () => {
    const h = harness({ autoAck: true });
    h.start();
    h.at(1100, () => h.stream.putRecords(payloads(3)));
    h.at(2600, () => h.stream.putRecords(payloads(2)));
    h.runTo(10_000);
    h.stop();
    // Empty at 0 and 1000; the records of 1100 at 2000, then 2250 (empty), 3250 (the records of 2600), 3500 (empty), then once a second.
    expect(h.getRecordsCalls().map((c) => c.atMs)).to.deep.equal([0, 1000, 2000, 2250, 3250, 3500, 4500, 5500, 6500, 7500, 8500, 9500]);
    expect(h.received).to.have.length(5);
  });

  it('a record arriving on a quiet shard at any moment is delivered within 1.5 s of its arrival (GetRecords answering in 100 ms)', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 30_000 }), fc.integer({ min: 0, max: 3 }), (arrivalMs, more) => {
      const h = harness({ autoAck: true, streamOptions: { latencyMs: 100 } });
      h.start();
      h.at(arrivalMs, () => h.stream.putRecords(payloads(1 + more)));
      h.runTo(arrivalMs + 5000);
      h.stop();
      expect(h.received).to.have.length(1 + more);
      expect(Math.max(...h.receivedAtMs) - arrivalMs, `arrived at ${arrivalMs}`).to.be.at.most(1500);
    }), { seed: 31, numRuns: 200 });
  });

  it('reads again at once while MillisBehindLatest > 0, but never more than 5 calls in any second', () => {
    const h = harness({ autoAck: true, reader: { throttleDelayMs: 2000, maxInFlightRecords: 10 } });
    const put = h.stream.putRecords(payloads(200));
    h.runTo(50);
    h.start();
    h.runTo(20_000);
    h.stop();
    const times = h.getRecordsCalls().map((c) => c.atMs);
    const gaps = times.slice(1).map((t, i) => t - (times[i] ?? 0));
    expect(Math.min(...gaps), 'some calls went without waiting for the throttle delay').to.equal(0);
    for (let i = 5; i < times.length; i += 1) expect((times[i] ?? 0) - (times[i - 5] ?? 0)).to.be.at.least(1000);
    expect(h.received.map((r) => r.sequenceNumber)).to.deep.equal(put.map((p) => p.sequenceNumber));
    // The 20 pages of 10 take 4 windows of 5 calls, not 20 x 2 s; the read after the last page is caught up and waits 2 s.
    expect(times.slice(0, 21)).to.deep.equal([...[50, 1050, 2050, 3050].flatMap((t) => [t, t, t, t, t]), 5050]);
  });

  it('asks for exactly the room left under maxInFlightRecords, never more', () => {
    // A consumer that acks each record 300 ms after it got it.
    const h = harness({ reader: { maxInFlightRecords: 10 }, ackAfterMs: 300 });
    // Records from the first call on: the shard is never quiet, polls stay throttleDelayMs apart.
    h.stream.putRecords(payloads(3, 'before-'));
    h.start();
    for (let t = 0; t < 8000; t += 100) h.at(t, () => h.stream.putRecords(payloads(3, `t${t}-`)));
    h.runTo(12_000);
    h.stop();
    const limits = h.getRecordsCalls().map((c) => [c.limit, c.room]);
    expect(limits.length).to.be.greaterThan(10);
    for (const [limit, room] of limits) {
      expect(room).to.be.greaterThan(0);
      expect(limit).to.equal(room);
    }
    expect(limits.some(([limit]) => (limit ?? 0) < 10), 'some calls found part of the room taken').to.equal(true);
    expect(h.received).to.have.length(3 + 80 * 3);
  });

  it('never asks for more than 10,000 records, however much room there is', () => {
    const h = harness({ autoAck: true, reader: { maxInFlightRecords: 50_000 } });
    h.stream.putRecords(payloads(25_000));
    h.start();
    h.runTo(5000);
    h.stop();
    const limits = h.getRecordsCalls().map((c) => c.limit);
    expect(limits[0]).to.equal(10_000);
    expect(Math.max(...limits.map((l) => l ?? 0))).to.equal(10_000);
    expect(h.received).to.have.length(25_000);
  });

  it('a consumer that never acks gets exactly maxInFlightRecords records, with no GetRecords while paused; acks resume reading', () => {
    const h = harness({ reader: { maxInFlightRecords: 7 } });
    h.stream.putRecords(payloads(30));
    h.start();
    h.runTo(1000);
    expect(h.received).to.have.length(7);
    const callsWhilePaused = h.getRecordsCalls().length;
    h.runTo(60_000);
    expect(h.received).to.have.length(7);
    expect(h.getRecordsCalls()).to.have.length(callsWhilePaused);
    h.tracker.ackFirst(3);
    h.runTo(61_000);
    expect(h.received).to.have.length(10);
    expect(h.getRecordsCalls().at(-1)?.limit).to.equal(3);
    h.tracker.ackAll();
    h.runTo(62_000);
    h.tracker.ackAll();
    h.runTo(63_000);
    h.tracker.ackAll();
    h.runTo(64_000);
    h.tracker.ackAll();
    h.runTo(65_000);
    h.stop();
    expect(h.received.map((r) => text(r.data))).to.deep.equal(payloads(30).map((p) => p.data));
  });

  it('one record never acked (all later ones acked): reads no further than maxInFlightRecords past the watermark', () => {
    // R1: acked records behind an unacked one are still pending (the checkpoint cannot pass the gap),
    // so they count against the bound: memory and the replay after a crash stay bounded.
    const h = harness({ reader: { maxInFlightRecords: 100 }, ackIf: (record) => text(record.data) !== 'r0' });
    h.stream.putRecords(payloads(2000));
    h.start();
    h.runTo(60_000);
    h.stop();
    expect(h.received).to.have.length(100);
    expect(h.tracker.pending()).to.equal(100);
    for (const call of h.getRecordsCalls()) expect(call.limit, 'GetRecords asks only for the room under the watermark').to.be.at.most(call.room);
  });

  it('a pause longer than an iterator lives rebuilds the iterator after the last emitted record: no expiry, nothing lost or repeated', () => {
    const h = harness({ reader: { maxInFlightRecords: 5 } });
    const put = h.stream.putRecords(payloads(12));
    h.start();
    h.runTo(1000);
    expect(h.received).to.have.length(5);
    h.at(600_000, () => h.tracker.ackAll());
    h.runTo(600_001);
    h.tracker.ackAll();
    h.runTo(601_000);
    h.tracker.ackAll();
    h.runTo(602_000);
    h.stop();
    expect(h.received.map((r) => r.sequenceNumber)).to.deep.equal(put.map((p) => p.sequenceNumber));
    expect(h.iteratorCalls().map((c) => c.start)).to.deep.equal([
      { type: 'TRIM_HORIZON' },
      { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: put[4]?.sequenceNumber },
    ]);
    expect(h.events.filter((e) => e.type === 'retrying')).to.deep.equal([]);
  });

  it('an ExpiredIteratorException rebuilds the iterator after the last emitted record, reported as a retry', () => {
    // The server expires iterators sooner than the reader expects (1 s against 270 s).
    const h = harness({ streamOptions: { iteratorTtlMs: 1000 }, reader: { maxInFlightRecords: 4 } });
    const put = h.stream.putRecords(payloads(10));
    h.start();
    h.runTo(500);
    h.at(5000, () => h.tracker.ackAll());
    h.runTo(6000);
    h.tracker.ackAll();
    h.runTo(7000);
    h.tracker.ackAll();
    h.runTo(8000);
    h.stop();
    expect(h.received.map((r) => r.sequenceNumber)).to.deep.equal(put.map((p) => p.sequenceNumber));
    const retries = h.events.filter((e) => e.type === 'retrying');
    expect(retries.map((e) => e.type === 'retrying' && [e.operation, e.error.name])).to.deep.equal([['GetRecords', 'ExpiredIteratorException']]);
    expect(h.iteratorCalls().map((c) => c.start)).to.deep.equal([
      { type: 'TRIM_HORIZON' },
      { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: put[3]?.sequenceNumber },
    ]);
  });

  it('R12: a LATEST start takes the stream\'s clock at its first iterator as the group\'s start: told to the tracker, and where a rebuilt iterator starts before any delivery', () => {
    const h = harness({ reader: { start: { type: 'LATEST' } } });
    const streamStarts: Date[] = [];
    h.tracker.streamStart = (streamTime: Date) => { streamStarts.push(streamTime); };
    h.runTo(700);
    const startedAt = h.scheduler.now();
    // The first iterator expires unused: it is rebuilt where the group started, not at a new LATEST.
    h.stream.failNext('getRecords', 1, () => awsError('ExpiredIteratorException'));
    h.start();
    h.runTo(3000);
    h.stream.putRecords(payloads(1, 'new'));
    h.runTo(4000);
    h.stop();
    expect(streamStarts.map((d) => d.getTime())).to.deep.equal([startedAt]);
    expect(h.iteratorCalls().map((c) => c.start).slice(0, 2)).to.deep.equal([{ type: 'LATEST' }, { type: 'AT_TIMESTAMP', timestamp: new Date(startedAt) }]);
    expect(h.received.map((r) => text(r.data))).to.deep.equal(['new0']);
  });

  it('R12: a stream that names no clock (a server without a Date header): the client\'s clock less the five-minute margin, as before', () => {
    const h = harness({ reader: { start: { type: 'LATEST' } } });
    const streamStarts: Date[] = [];
    h.tracker.streamStart = (streamTime: Date) => { streamStarts.push(streamTime); };
    const noClock: StreamPort = Object.assign(Object.create(h.stream) as StreamPort, {
      getShardIterator: (shardId: string, start: IteratorStart) => h.stream.getShardIterator(shardId, start).pipe(map(({ shardIterator }) => ({ shardIterator }))),
    });
    h.runTo(700);
    const requestedAt = h.scheduler.now();
    h.stream.failNext('getRecords', 1, () => awsError('ExpiredIteratorException'));
    h.start({ stream: noClock });
    h.runTo(3000);
    h.stop();
    expect(streamStarts).to.deep.equal([]);
    expect(h.iteratorCalls().map((c) => c.start).slice(0, 2)).to.deep.equal([
      { type: 'LATEST' }, { type: 'AT_TIMESTAMP', timestamp: new Date(requestedAt - START_SKEW_MARGIN_MS) },
    ]);
  });

  it('retries throttling, 5xx and dropped connections with backoff and jitter, reporting each attempt, keeping the call spacing', () => {
    const h = harness({ autoAck: true });
    const put = h.stream.putRecords(payloads(10));
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    h.stream.failNext('getShardIterator', 1, () => awsError('LimitExceededException'));
    h.stream.failNext('getRecords', 3, () => awsError('ProvisionedThroughputExceededException'));
    h.start();
    h.at(3000, () => {
      h.stream.putRecords(payloads(4));
      h.stream.failNext('getRecords', 1, () => awsError('InternalFailure'));
      h.stream.failNext('getRecords', 1, reset);
    });
    h.runTo(10_000);
    h.stop();
    expect(h.received.map((r) => r.sequenceNumber)).to.deep.equal(h.stream.records(SHARD).map((r) => r.sequenceNumber));
    expect(h.received.slice(0, 10).map((r) => r.sequenceNumber)).to.deep.equal(put.map((p) => p.sequenceNumber));
    expect(h.received).to.have.length(14);
    const retries = h.events.flatMap((e) => (e.type === 'retrying' ? [[e.operation, e.attempt, e.delayMs, e.error.name, e.shardId]] : []));
    const delay = (attempt: number) => backoffDelay(attempt, undefined, () => 0.5);
    expect(retries).to.deep.equal([
      ['GetShardIterator', 1, delay(1), 'LimitExceededException', SHARD],
      ['GetRecords', 1, delay(1), 'ProvisionedThroughputExceededException', SHARD],
      ['GetRecords', 2, delay(2), 'ProvisionedThroughputExceededException', SHARD],
      ['GetRecords', 3, delay(3), 'ProvisionedThroughputExceededException', SHARD],
      ['GetRecords', 1, delay(1), 'InternalFailure', SHARD],
      ['GetRecords', 2, delay(2), 'Error', SHARD],
    ]);
    const times = h.getRecordsCalls().map((c) => c.atMs);
    for (let i = 1; i < times.length; i += 1) expect((times[i] ?? 0) - (times[i - 1] ?? 0)).to.be.at.least(250);
  });

  it('a fatal error ends records$ with a typed error keeping the AWS error as cause, without retrying', () => {
    const h = harness({ autoAck: true });
    h.stream.putRecords(payloads(3));
    const denied = awsError('AccessDeniedException');
    h.stream.failNext('getRecords', 1, denied);
    h.start();
    h.runTo(5000);
    expect(h.state.error).to.be.instanceOf(ShardReadError);
    expect((h.state.error as ShardReadError).cause).to.equal(denied);
    expect((h.state.error as ShardReadError).operation).to.equal('GetRecords');
    expect(h.events).to.deep.equal([]);
    expect(h.received).to.deep.equal([]);
  });

  it('a deleted stream ends records$ with StreamNotFoundError', () => {
    const h = harness({ autoAck: true });
    h.stream.putRecords(payloads(3));
    h.start();
    h.runTo(1000);
    h.stream.delete();
    h.runTo(2000);
    expect(h.received).to.have.length(3);
    expect(h.state.error).to.be.instanceOf(StreamNotFoundError);
  });

  it('at the end of a closed shard: finish(last) at once, completion only after every ack, then shard-finished with the children', () => {
    const h = harness();
    const put = h.stream.putRecords(payloads(5));
    const children = h.stream.split(SHARD);
    h.start();
    h.runTo(5000);
    expect(h.received).to.have.length(5);
    expect(h.tracker.finishCalls).to.deep.equal([{ sequenceNumber: put[4]?.sequenceNumber }]);
    expect(h.state.completed).to.equal(false);
    expect(h.events).to.deep.equal([]);
    const callsAtEnd = h.getRecordsCalls().length;
    h.tracker.ackFirst(4);
    h.runTo(6000);
    expect(h.state.completed).to.equal(false);
    h.tracker.ackAll();
    h.runTo(6001);
    expect(h.state.completed).to.equal(true);
    expect(h.events).to.deep.equal([{ type: 'shard-finished', shardId: SHARD, childShardIds: children }]);
    expect(h.getRecordsCalls()).to.have.length(callsAtEnd);
  });

  it('a closed shard whose server names no children (kinesalite) finishes with none', () => {
    const h = harness({ streamOptions: { reportChildShards: false }, autoAck: true });
    h.stream.putRecords(payloads(2));
    h.stream.split(SHARD);
    h.start();
    h.runTo(2000);
    expect(h.received).to.have.length(2);
    expect(h.state.completed).to.equal(true);
    expect(h.events).to.deep.equal([{ type: 'shard-finished', shardId: SHARD, childShardIds: [] }]);
  });

  it('resuming a closed shard after its last record finishes with nothing read: finish(undefined)', () => {
    const h = harness({ autoAck: true });
    const put = h.stream.putRecords(payloads(2));
    h.stream.split(SHARD);
    h.start({ start: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: put[1]?.sequenceNumber ?? '' } });
    h.runTo(2000);
    expect(h.received).to.deep.equal([]);
    expect(h.tracker.finishCalls).to.deep.equal([undefined]);
    expect(h.state.completed).to.equal(true);
  });

  describe('KPL aggregates', () => {
    const users = Array.from({ length: 100 }, (_, i) => ({ partitionKey: `user-${i}`, data: `u${i}` }));

    it('an aggregate of 100 is 100 records with sub-sequence numbers and user partition keys', () => {
      const h = harness({ autoAck: true });
      const [put] = h.stream.putRecords([aggregate(users)]);
      h.start();
      h.runTo(1000);
      h.stop();
      expect(h.received.map((r) => [r.sequenceNumber, r.subSequenceNumber, r.partitionKey, text(r.data)]))
        .to.deep.equal(users.map((u, i) => [put?.sequenceNumber, i, u.partitionKey, u.data]));
      expect(h.tracker.tracked[41]).to.deep.equal({ sequenceNumber: put?.sequenceNumber, subSequenceNumber: 41 });
    });

    it('holds the rest of a page that had more user records than room, and emits it as acks make room', () => {
      const h = harness({ reader: { maxInFlightRecords: 30 } });
      h.stream.putRecords([aggregate(users)]);
      const after = h.stream.putRecords(payloads(5));
      h.start();
      h.runTo(2000);
      expect(h.received).to.have.length(30);
      expect(h.getRecordsCalls()).to.have.length(1);
      h.tracker.ackFirst(10);
      expect(h.received, 'resumed within the ack').to.have.length(40);
      for (let t = 3000; t < 10_000; t += 1000) {
        h.tracker.ackAll();
        h.runTo(t);
      }
      h.stop();
      expect(h.received.map((r) => r.subSequenceNumber)).to.deep.equal([...users.map((_, i) => i), ...after.map(() => undefined)]);
      expect(h.getRecordsCalls().map((c) => c.limit).slice(0, 2)).to.deep.equal([30, 30]);
    });

    it('a checkpoint inside the aggregate resumes at the next sub-record, also when the first iterator has to be rebuilt', () => {
      const seed = new MemoryStream();
      const [put] = seed.putRecords([aggregate(users)]);
      const plan = planStart({ type: 'position', position: { sequenceNumber: put?.sequenceNumber ?? '', subSequenceNumber: 41 } }, 'TRIM_HORIZON');
      const reader = { start: plan.iteratorStart, ...(plan.skipThrough === undefined ? {} : { skipThrough: plan.skipThrough }) };
      const straight = harness({ autoAck: true, reader });
      const rebuilt = harness({ autoAck: true, reader });
      rebuilt.stream.failNext('getRecords', 1, () => awsError('ExpiredIteratorException'));
      for (const run of [straight, rebuilt]) {
        run.stream.putRecords([aggregate(users)]);
        run.start();
        run.runTo(1000);
        run.stop();
      }
      const expected = users.slice(42).map((_, i) => i + 42);
      expect(straight.received.map((r) => r.subSequenceNumber)).to.deep.equal(expected);
      expect(rebuilt.received.map((r) => r.subSequenceNumber)).to.deep.equal(expected);
      expect(plan.iteratorStart).to.deep.equal({ type: 'AT_SEQUENCE_NUMBER', sequenceNumber: put?.sequenceNumber });
      expect(rebuilt.iteratorCalls().map((c) => c.start)).to.deep.equal([plan.iteratorStart, plan.iteratorStart]);
    });

    it('a corrupt aggregate is delivered as its raw record, with a record-undecodable event', () => {
      const h = harness({ autoAck: true });
      const bad = aggregate(users).data.slice();
      bad[bad.length - 1] = (bad[bad.length - 1] ?? 0) ^ 0xff;
      const [put] = h.stream.putRecords([{ partitionKey: 'outer', data: bad }]);
      h.start();
      h.runTo(1000);
      h.stop();
      expect(h.received).to.have.length(1);
      expect(h.received[0]?.data).to.deep.equal(bad);
      expect(h.received[0]?.subSequenceNumber).to.equal(undefined);
      expect(h.events.map((e) => e.type === 'record-undecodable' && [e.shardId, e.sequenceNumber, e.error.name])).to.deep.equal([
        [SHARD, put?.sequenceNumber, 'AggregateDecodeError'],
      ]);
    });
  });

  it('reports eventsFromKinesis per call and eventToClient per record', () => {
    const fromKinesis: [number, string, number][] = [];
    const toClient: [number, number][] = [];
    const h = harness({
      autoAck: true,
      reader: {
        maxInFlightRecords: 2,
        stats: {
          eventsFromKinesis: (count, shardId, behind) => fromKinesis.push([count, shardId, behind]),
          eventToClient: (inserted, retrieved) => toClient.push([inserted.getTime(), retrieved.getTime()]),
        },
      },
    });
    h.stream.putRecords(payloads(3));
    h.runTo(100);
    h.start();
    h.runTo(1000);
    h.stop();
    expect(fromKinesis.slice(0, 2)).to.deep.equal([[2, SHARD, 100], [1, SHARD, 0]]);
    expect(toClient).to.deep.equal([[0, 100], [0, 100], [0, 100]]);
  });

  it('unsubscribing aborts the request in flight and stops every timer', () => {
    const h = harness({ autoAck: true, streamOptions: { latencyMs: 100 } });
    h.stream.putRecords(payloads(3));
    h.start();
    h.runTo(1000);
    expect(h.received).to.have.length(3);
    h.runTo(1050); // a GetRecords is on its way
    const calls = h.getRecordsCalls().length;
    h.stop();
    expect(h.scheduler.actions.every((action) => action.closed)).to.equal(true);
    h.stream.putRecords(payloads(3));
    h.runTo(10_000);
    expect(h.received).to.have.length(3);
    expect(h.getRecordsCalls()).to.have.length(calls);
  });

  describe('marbles', () => {
    const testScheduler = () => new TestScheduler((actual, expected) => { expect(actual).to.deep.equal(expected); });

    it('each record comes out at the first poll after it arrived (polls at 0, 250, 500 ms, then 1500 after the empty page of 500)', () => {
      const scheduler = testScheduler();
      scheduler.run(({ expectObservable }) => {
        const stream = new MemoryStream({ clock: () => scheduler.now() });
        const tracker = new TestTracker();
        stream.putRecords([{ partitionKey: 'p', data: 'a' }]);
        scheduler.schedule(() => stream.putRecords([{ partitionKey: 'p', data: 'b' }]), 100);
        scheduler.schedule(() => stream.putRecords([{ partitionKey: 'p', data: 'c' }]), 600);
        const records$ = readShard({
          shardId: SHARD, stream, tracker, scheduler, emit: () => undefined,
          start: { type: 'TRIM_HORIZON' }, throttleDelayMs: 250, maxInFlightRecords: 10,
        }).pipe(map((r) => { r.ack(); return text(r.data); }));
        expectObservable(records$, '^ 2000ms !').toBe('a 249ms b 1249ms c');
      });
    });

    it('a consumer that never acks gets maxInFlightRecords records, then nothing', () => {
      const scheduler = testScheduler();
      scheduler.run(({ expectObservable }) => {
        const stream = new MemoryStream({ clock: () => scheduler.now() });
        stream.putRecords(payloads(5));
        const records$ = readShard({
          shardId: SHARD, stream, tracker: new TestTracker(), scheduler, emit: () => undefined,
          start: { type: 'TRIM_HORIZON' }, throttleDelayMs: 250, maxInFlightRecords: 2,
        }).pipe(map((r) => text(r.data)));
        expectObservable(records$, '^ 10s !').toBe('(ab)', { a: 'r0', b: 'r1' });
      });
    });
  });
});
