import { expect } from 'chai';
import { type Subscription, asyncScheduler } from 'rxjs';
import { KinesisStream } from '../../../src/kinesis/kinesis.js';
import type { StreamPort } from '../../../src/ports/stream.js';
import { type ReadShardOptions, readShard } from '../../../src/reading/shard-reader.js';
import { planStart } from '../../../src/reading/start-position.js';
import {
  adjacentOpenShards, createStream, localKinesisClient, mergeShards, openShardIds, putRecords, splitShard,
} from '../../../src/testing/index.js';
import type { KinsumerEvent, KinsumerRecord } from '../../../src/types.js';
import { type FaultProxy, startFaultProxy } from '../../support/fault-proxy.js';
import { aggregate } from '../../support/kpl-aggregate.js';
import { eventually, uniqueName, useLocalAws } from '../../support/local.js';
import { TestTracker } from '../../support/test-tracker.js';

const text = (data: Uint8Array) => Buffer.from(data).toString('utf8');
const records = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => ({ partitionKey: `pk-${i % 5}`, data: `${prefix}-${i}` }));
// Small backoff: the faults are many and the test should not spend its time asleep.
const BACKOFF = { baseMs: 20, maxMs: 400 };

interface Reading {
  readonly tracker: TestTracker;
  readonly received: KinsumerRecord[];
  readonly events: KinsumerEvent[];
  readonly state: { completed: boolean; error: unknown };
  readonly subscription: Subscription;
}

/** Reads a shard on the real scheduler; `autoAck` acks each record as it arrives. */
function read(stream: StreamPort, shardId: string, autoAck: boolean, options: Partial<ReadShardOptions> = {}): Reading {
  const tracker = new TestTracker();
  const received: KinsumerRecord[] = [];
  const events: KinsumerEvent[] = [];
  const state = { completed: false, error: undefined as unknown };
  const subscription = readShard({
    shardId, stream, tracker, scheduler: asyncScheduler, emit: (event) => events.push(event),
    start: { type: 'TRIM_HORIZON' }, throttleDelayMs: 200, maxInFlightRecords: 1000, backoff: BACKOFF,
    ...options,
  }).subscribe({
    next: (record) => {
      received.push(record);
      if (autoAck) record.ack();
    },
    error: (error: unknown) => { state.error = error; },
    complete: () => { state.completed = true; },
  });
  return { tracker, received, events, state, subscription };
}

describe('readShard on kinesalite', function () {
  this.timeout(60_000);
  const local = useLocalAws();
  const readings: Reading[] = [];
  const proxies: FaultProxy[] = [];
  afterEach(async () => {
    for (const reading of readings.splice(0)) reading.subscription.unsubscribe();
    await Promise.all(proxies.splice(0).map((p) => p.stop()));
  });
  const reading = (...args: Parameters<typeof read>): Reading => {
    const started = read(...args);
    readings.push(started);
    return started;
  };
  const newStream = async (shards = 1) => {
    const name = uniqueName('reader');
    await createStream(local().kinesis, name, shards);
    return { name, port: new KinesisStream(local().kinesis, { streamName: name }), shardIds: await openShardIds(local().kinesis, name) };
  };
  /** The stream through a fault proxy, with a client that makes one attempt per call. */
  const viaProxy = async (name: string) => {
    const proxy = await startFaultProxy({ target: local().endpoints.kinesis, seed: 42 });
    proxies.push(proxy);
    const client = localKinesisClient(local(), { endpoint: proxy.endpoint, maxAttempts: 1 });
    return { proxy, port: new KinesisStream(client, { streamName: name }) };
  };
  const fail = (r: Reading) => () => {
    const { error } = r.state;
    if (error !== undefined) throw error instanceof Error ? error : new Error('the reader failed', { cause: error });
  };

  it('emits a shard\'s records in sequence order with their data and metadata', async () => {
    const { name, port, shardIds: [shardId = ''] } = await newStream();
    const before = Date.now();
    const put = await putRecords(local().kinesis, name, records(50, 'order'));
    const after = Date.now();
    const r = reading(port, shardId, true);
    await eventually(() => { fail(r)(); return r.received.length === 50; }, '50 records');
    expect(r.received.map((x) => x.sequenceNumber)).to.deep.equal(put.map((p) => p.sequenceNumber));
    expect(r.received.map((x) => text(x.data))).to.deep.equal(records(50, 'order').map((x) => x.data));
    expect(r.received.map((x) => x.partitionKey)).to.deep.equal(records(50, 'order').map((x) => x.partitionKey));
    for (const x of r.received) {
      expect(x.shardId).to.equal(shardId);
      expect(x.subSequenceNumber).to.equal(undefined);
      expect(x.explicitHashKey).to.equal(undefined);
      expect(x.data).to.be.instanceOf(Uint8Array);
      // kinesalite keeps arrival times in seconds with a fraction: allow its rounding.
      expect(x.approximateArrivalTimestamp.getTime()).to.be.within(before - 5, after + 5);
    }
    expect(r.tracker.tracked).to.deep.equal(put.map((p) => ({ sequenceNumber: p.sequenceNumber })));
  });

  it('a consumer that never acks receives exactly maxInFlightRecords records; after acks it continues', async () => {
    const { name, port, shardIds: [shardId = ''] } = await newStream();
    const put = await putRecords(local().kinesis, name, records(30, 'slow'));
    const r = reading(port, shardId, false, { maxInFlightRecords: 7 });
    // Parked: 7 emitted and the reader waiting on acks$, its only way on.
    await eventually(() => { fail(r)(); return r.received.length === 7 && r.tracker.ackWaits > 0; }, 'the reader to stop at 7 and wait for acks');
    expect(r.received).to.have.length(7);
    r.tracker.ackFirst(3);
    await eventually(() => r.received.length === 10, '3 more records after 3 acks');
    expect(r.received).to.have.length(10);
    await eventually(() => { r.tracker.ackAll(); return r.received.length === 30; }, 'the rest after acking everything');
    expect(r.received.map((x) => x.sequenceNumber)).to.deep.equal(put.map((p) => p.sequenceNumber));
  });

  it('survives injected throttling, expired iterators, 500s and dropped connections with no record lost or repeated', async () => {
    const { name, shardIds: [shardId = ''] } = await newStream();
    const { proxy, port } = await viaProxy(name);
    // One of each for certain, then at seeded random rates.
    proxy.script('GetRecords', 1, { kind: 'error', error: 'ProvisionedThroughputExceededException' });
    proxy.script('GetRecords', 1, { kind: 'error', error: 'ExpiredIteratorException' });
    proxy.script('GetRecords', 1, { kind: 'error', error: 'InternalFailure' });
    proxy.script('GetRecords', 1, { kind: 'drop' });
    proxy.script('GetShardIterator', 1, { kind: 'error', error: 'LimitExceededException' });
    proxy.setRules([
      { operation: 'GetRecords', rate: 0.2, fault: { kind: 'error', error: 'ProvisionedThroughputExceededException' } },
      { operation: 'GetRecords', rate: 0.15, fault: { kind: 'error', error: 'ExpiredIteratorException' } },
      { operation: 'GetRecords', rate: 0.05, fault: { kind: 'error', error: 'InternalFailure' } },
      { operation: 'GetRecords', rate: 0.05, fault: { kind: 'drop' } },
      { operation: 'GetShardIterator', rate: 0.2, fault: { kind: 'error', error: 'LimitExceededException' } },
    ]);
    const put = await putRecords(local().kinesis, name, records(400, 'chaos'));
    const r = reading(port, shardId, true, { maxInFlightRecords: 37 });
    await eventually(() => { fail(r)(); return r.received.length >= 400; }, '400 records through the faults', 40_000);
    expect(r.received.map((x) => x.sequenceNumber)).to.deep.equal(put.map((p) => p.sequenceNumber));
    const counts = proxy.counts();
    for (const fault of ['ProvisionedThroughputExceededException', 'ExpiredIteratorException', 'InternalFailure', 'drop', 'LimitExceededException']) {
      expect(counts.byFault[fault] ?? 0, `${fault} injected`).to.be.greaterThan(0);
    }
    // Every injected fault was one retry, reported; every expired iterator was rebuilt.
    const retries = r.events.filter((e) => e.type === 'retrying');
    expect(retries).to.have.length((counts.faults.GetRecords ?? 0) + (counts.faults.GetShardIterator ?? 0));
    expect(counts.calls.GetShardIterator).to.equal(1 + (counts.byFault.ExpiredIteratorException ?? 0) + (counts.byFault.LimitExceededException ?? 0));
  });

  it('rebuilds its iterator after the last emitted record whenever the held one is too old', async () => {
    const { name, shardIds: [shardId = ''] } = await newStream();
    const { proxy, port } = await viaProxy(name);
    const put = await putRecords(local().kinesis, name, records(60, 'aged'));
    // Every held iterator counts as too old: each read goes through AFTER_SEQUENCE_NUMBER of the last record.
    const r = reading(port, shardId, true, { maxInFlightRecords: 9, iteratorMaxAgeMs: 1 });
    await eventually(() => { fail(r)(); return r.received.length >= 60; }, '60 records');
    expect(r.received.map((x) => x.sequenceNumber)).to.deep.equal(put.map((p) => p.sequenceNumber));
    const { calls } = proxy.counts();
    expect(calls.GetShardIterator).to.be.at.least(7);
    expect(calls.GetShardIterator).to.equal(calls.GetRecords);
  });

  it('unsubscribing aborts the GetRecords in flight', async () => {
    const { name, shardIds: [shardId = ''] } = await newStream();
    const { proxy, port } = await viaProxy(name);
    proxy.script('GetRecords', 1, { kind: 'latency', ms: 30_000 });
    const r = read(port, shardId, true);
    await eventually(() => proxy.counts().calls.GetRecords === 1, 'the delayed GetRecords to reach the proxy');
    r.subscription.unsubscribe();
    await eventually(() => proxy.counts().aborted === 1, 'the proxy to see the request aborted');
    expect(r.state).to.deep.equal({ completed: false, error: undefined });
  });

  describe('start positions', () => {
    it('TRIM_HORIZON from the oldest record, AT_TIMESTAMP from the first at or after the time, LATEST from what comes next', async () => {
      const { name, shardIds: [shardId = ''] } = await newStream();
      const port = new KinesisStream(local().kinesis, { streamName: name });
      const early = await putRecords(local().kinesis, name, records(3, 'early'));
      const probe = reading(port, shardId, true);
      await eventually(() => probe.received.length === 3, 'the early records');
      const boundary = new Date(Math.max(...probe.received.map((x) => x.approximateArrivalTimestamp.getTime())) + 1);
      await eventually(() => Date.now() > boundary.getTime() + 1, 'the clock to pass the boundary');

      // A proxy of its own counts the LATEST reader's calls: its first GetRecords follows the
      // answer to GetShardIterator, so from then on where LATEST was is fixed.
      const own = await viaProxy(name);
      const latest = reading(own.port, shardId, true, { start: { type: 'LATEST' } });
      await eventually(() => (own.proxy.counts().calls.GetRecords ?? 0) > 0, 'the LATEST reader to have polled');
      const late = await putRecords(local().kinesis, name, records(4, 'late'));

      const fromTimestamp = reading(port, shardId, true, { start: { type: 'AT_TIMESTAMP', timestamp: boundary } });
      const trimHorizon = reading(port, shardId, true, { start: { type: 'TRIM_HORIZON' } });
      await eventually(() => latest.received.length >= 4 && fromTimestamp.received.length >= 4 && trimHorizon.received.length >= 7, 'every reader to catch up');
      const sequence = (r: Reading) => r.received.map((x) => x.sequenceNumber);
      expect(sequence(trimHorizon)).to.deep.equal([...early, ...late].map((p) => p.sequenceNumber));
      expect(sequence(fromTimestamp)).to.deep.equal(late.map((p) => p.sequenceNumber));
      expect(sequence(latest)).to.deep.equal(late.map((p) => p.sequenceNumber));
    });

    it('a checkpoint resumes at the next record: read AT the checkpoint\'s own record, which is passed over, and no data-lost (the stream keeps it)', async () => {
      const { name, port, shardIds: [shardId = ''] } = await newStream();
      const put = await putRecords(local().kinesis, name, records(10, 'resume'));
      const plan = planStart({ type: 'position', position: { sequenceNumber: put[3]?.sequenceNumber ?? '' } }, 'LATEST');
      expect(plan.iteratorStart.type).to.equal('AT_SEQUENCE_NUMBER');
      const r = reading(port, shardId, true, { start: plan.iteratorStart, ...(plan.skipThrough === undefined ? {} : { skipThrough: plan.skipThrough }) });
      await eventually(() => { fail(r)(); return r.received.length === 6; }, '6 records');
      expect(r.received.map((x) => x.sequenceNumber)).to.deep.equal(put.slice(4).map((p) => p.sequenceNumber));
      expect(r.events.filter((e) => e.type === 'data-lost')).to.deep.equal([]);
    });
  });

  describe('closed shards', () => {
    it('after a split: the parent completes once its last record is acked and Finished is written', async () => {
      const { name, port, shardIds: [parent = ''] } = await newStream();
      const put = await putRecords(local().kinesis, name, records(5, 'parent'));
      await splitShard(local().kinesis, name, parent);
      const r = reading(port, parent, false);
      await eventually(() => { fail(r)(); return r.tracker.finishCalls.length === 1; }, 'the reader to reach the end of the shard');
      expect(r.received.map((x) => x.sequenceNumber)).to.deep.equal(put.map((p) => p.sequenceNumber));
      expect(r.tracker.finishCalls).to.deep.equal([{ sequenceNumber: put[4]?.sequenceNumber }]);
      expect(r.state.completed).to.equal(false);
      r.tracker.ackFirst(4);
      expect(r.state.completed).to.equal(false);
      r.tracker.ackAll();
      await eventually(() => r.state.completed, 'completion after the last ack');
      // kinesalite names no children at the end of a shard (kinesis-local does: see the conformance suite).
      expect(r.events).to.deep.equal([{ type: 'shard-finished', shardId: parent, childShardIds: [] }]);
    });

    it('after a merge: each parent completes after its last ack', async () => {
      const { name, port } = await newStream(2);
      const [a, b] = await adjacentOpenShards(local().kinesis, name);
      const put = await putRecords(local().kinesis, name, records(20, 'merge'));
      await mergeShards(local().kinesis, name, a, b);
      const readers = [reading(port, a, false), reading(port, b, false)];
      await eventually(() => readers.every((r) => r.tracker.finishCalls.length === 1), 'both parents to reach their end');
      expect(readers.every((r) => !r.state.completed)).to.equal(true);
      for (const r of readers) r.tracker.ackAll();
      await eventually(() => readers.every((r) => r.state.completed), 'both parents to complete');
      const all = readers.flatMap((r) => r.received.map((x) => x.sequenceNumber));
      expect([...all].sort()).to.deep.equal(put.map((p) => p.sequenceNumber).sort());
      for (const [i, r] of readers.entries()) {
        expect(r.received.length, `parent ${i} had records`).to.be.greaterThan(0);
        expect(r.received.map((x) => x.sequenceNumber)).to.deep.equal(put.filter((p) => p.shardId === [a, b][i]).map((p) => p.sequenceNumber));
      }
    });
  });

  describe('KPL', () => {
    const users = Array.from({ length: 100 }, (_, i) => ({ partitionKey: `user-${i}`, data: `user record ${i}` }));

    it('an aggregate of 100 user records is delivered as 100 records; a checkpoint inside it resumes at the next sub-record', async () => {
      const { name, port, shardIds: [shardId = ''] } = await newStream();
      const [put] = await putRecords(local().kinesis, name, [aggregate(users), { partitionKey: 'plain', data: 'after the aggregate' }]);
      const whole = reading(port, shardId, true);
      await eventually(() => { fail(whole)(); return whole.received.length === 101; }, '101 records');
      expect(whole.received.slice(0, 100).map((x) => [x.sequenceNumber, x.subSequenceNumber, x.partitionKey, text(x.data)]))
        .to.deep.equal(users.map((u, i) => [put?.sequenceNumber, i, u.partitionKey, u.data]));
      expect(text(whole.received[100]?.data ?? new Uint8Array())).to.equal('after the aggregate');

      const plan = planStart({ type: 'position', position: { sequenceNumber: put?.sequenceNumber ?? '', subSequenceNumber: 41 } }, 'TRIM_HORIZON');
      const resumed = reading(port, shardId, true, { start: plan.iteratorStart, ...(plan.skipThrough ? { skipThrough: plan.skipThrough } : {}) });
      await eventually(() => { fail(resumed)(); return resumed.received.length === 59; }, '59 records');
      expect(resumed.received.map((x) => x.subSequenceNumber)).to.deep.equal([...users.slice(42).map((_, i) => i + 42), undefined]);
    });

    it('a corrupt aggregate is delivered as the raw record with a record-undecodable event', async () => {
      const { name, port, shardIds: [shardId = ''] } = await newStream();
      const bad = aggregate(users.slice(0, 3)).data.slice();
      bad[bad.length - 1] = (bad[bad.length - 1] ?? 0) ^ 0xff;
      const [put] = await putRecords(local().kinesis, name, [{ partitionKey: 'broken', data: bad }]);
      const r = reading(port, shardId, true);
      await eventually(() => r.received.length === 1, 'the raw record');
      expect([...(r.received[0]?.data ?? [])]).to.deep.equal([...bad]);
      expect(r.events.map((e) => e.type === 'record-undecodable' && [e.sequenceNumber, e.error.name])).to.deep.equal([[put?.sequenceNumber, 'AggregateDecodeError']]);
    });
  });
});
