import { expect } from 'chai';
import { type Observable, type Subscription, NEVER, firstValueFrom, Observable as RxObservable, VirtualAction, VirtualTimeScheduler, map, of, throwError, timer } from 'rxjs';
import { DEFAULT_RENEW_AFTER_MS, planSubscribe, subscribeDelayMs } from '../../../src/reading/fan-out-plan.js';
import { type ReadFanOutOptions, readFanOut } from '../../../src/reading/fan-out-reader.js';
import type { FanOutPort, IteratorStart, RawRecord, ShardEvent, ShardEventPull, StreamConsumerInfo } from '../../../src/ports/stream.js';
import { compareSequenceNumbers } from '../../../src/checkpoint/sequence-number.js';
import { ShardReadError } from '../../../src/reading/read-errors.js';
import { ConfigError, CorruptCheckpointError } from '../../../src/errors/kinsumer-errors.js';
import { prepareReadMode, readerFor } from '../../../src/reading/read-mode.js';
import { readShard } from '../../../src/reading/shard-reader.js';
import { consumerArn, consumerStep, ensureConsumer } from '../../../src/reading/stream-consumer.js';
import { MemoryStream } from '../../../src/testing/memory-stream.js';
import { LeaseLostError } from '../../../src/errors/kinsumer-errors.js';
import { LeaseSession } from '../../../src/lease/lease-session.js';
import { resolveOptions } from '../../../src/options.js';
import { MemoryCheckpointTable, MemoryLeaseStore } from '../../../src/testing/memory-lease-store.js';
import { awsError } from '../../../src/testing/memory-stream.js';
import type { KinsumerEvent, KinsumerRecord } from '../../../src/types.js';
import { aggregate } from '../../support/kpl-aggregate.js';
import { TestTracker } from '../../support/test-tracker.js';
import { at, runTo } from '../../support/virtual-time.js';

// The fan-out reader on virtual time, against an in-memory SubscribeToShard that behaves like
// kinesis-local where the test does not say otherwise: one event a second, a subscription that the
// service ends after a fixed lifetime, ResourceInUseException for 3 s after an abort. End of shard
// is only testable here: kinesis-local 0.6.2 never reports ChildShards and always gives a
// ContinuationSequenceNumber on a split parent, so the final event is scripted.

const SHARD = 'shardId-000000000000';
const ARN = 'arn:aws:kinesis:us-east-1:000000000000:stream/s/consumer/c:1';
const BASE = 49_600_000_000_000_000_000_000_000_000_000_000_000_000_000n;
const text = (data: Uint8Array) => Buffer.from(data).toString('utf8');

interface SubscribeCall {
  readonly atMs: number;
  readonly start: IteratorStart;
  /** `undefined` while open. */
  endedAtMs: number | undefined;
  readonly outcome: 'accepted' | 'in-use' | 'failed';
}

interface FakeOptions {
  /** Time between two events. Default 1000 (kinesis-local). */
  readonly eventIntervalMs?: number;
  /** The service ends a subscription this long after it began. Default 300000. */
  readonly lifetimeMs?: number;
  /** ResourceInUseException this long after a subscription ended. Default 3000 (kinesis-local). */
  readonly inUseAfterEndMs?: number;
  /** Most records in one event. Default 10000. */
  readonly maxEventRecords?: number;
  /** The accepted subscription names the stream's clock (as Kinesis's `Date` header does). Default: it does not. */
  readonly tellsStreamTime?: boolean;
}

/** An in-memory shard behind a FanOutPort, on a virtual clock. */
class FakeFanOut implements FanOutPort {
  readonly records: RawRecord[] = [];
  readonly calls: SubscribeCall[] = [];
  /** Events handed out (pulls that got an answer). */
  pulls = 0;
  /** Events handed out that held records. */
  recordEvents = 0;
  closedWithChildren: readonly string[] | undefined;
  /** The next event of the open subscription is this error instead (a dropped connection). */
  failNextPull: Error | undefined;
  /** The next subscribes fail with these, in order (before any other check). */
  readonly failSubscribes: Error[] = [];
  private busyUntilMs = Number.NEGATIVE_INFINITY;
  private open = 0;

  constructor(private readonly scheduler: VirtualTimeScheduler, private readonly options: FakeOptions = {}) {}

  put(count: number, prefix = 'r'): RawRecord[] {
    const added = Array.from({ length: count }, (_, i) => this.add(Buffer.from(`${prefix}${i}`), `pk-${i % 3}`));
    return added;
  }

  add(data: Uint8Array, partitionKey: string): RawRecord {
    const record: RawRecord = {
      sequenceNumber: (BASE + BigInt(this.records.length) * 1000n).toString(),
      partitionKey,
      data,
      approximateArrivalTimestamp: new Date(this.scheduler.now()),
    };
    this.records.push(record);
    return record;
  }

  openSubscriptions(): number {
    return this.open;
  }

  accepted(): SubscribeCall[] {
    return this.calls.filter((c) => c.outcome === 'accepted');
  }

  describeConsumer(): Observable<StreamConsumerInfo | undefined> {
    return of({ consumerName: 'c', consumerArn: ARN, status: 'ACTIVE' });
  }

  registerConsumer(): Observable<StreamConsumerInfo> {
    return throwError(() => awsError('ResourceInUseException'));
  }

  deregisterConsumer(): Observable<void> {
    return of(undefined);
  }

  subscribeToShard(consumerArn: string, shardId: string, start: IteratorStart): Observable<ShardEventPull> {
    return new RxObservable<ShardEventPull>((subscriber) => {
      const now = this.scheduler.now();
      expect([consumerArn, shardId]).to.deep.equal([ARN, SHARD]);
      const failure = this.failSubscribes.shift();
      if (failure !== undefined || now < this.busyUntilMs || this.open > 0) {
        this.calls.push({ atMs: now, start, endedAtMs: now, outcome: failure === undefined ? 'in-use' : 'failed' });
        subscriber.error(failure ?? awsError('ResourceInUseException'));
        return undefined;
      }
      const call: SubscribeCall = { atMs: now, start, endedAtMs: undefined, outcome: 'accepted' };
      this.calls.push(call);
      this.open += 1;
      let position = this.startIndex(start);
      const intervalMs = this.options.eventIntervalMs ?? 1000;
      const endsAtMs = now + (this.options.lifetimeMs ?? 300_000);
      let lastEventAtMs = now;
      subscriber.next({
        ...(this.options.tellsStreamTime === true ? { streamTime: new Date(now) } : {}),
        next: () => {
          const dueMs = Math.min(Math.max(lastEventAtMs + intervalMs, this.scheduler.now()), endsAtMs);
          return timer(dueMs - this.scheduler.now(), this.scheduler).pipe(map((): ShardEvent | undefined => {
            lastEventAtMs = this.scheduler.now();
            const failure = this.failNextPull;
            this.failNextPull = undefined;
            if (failure !== undefined) throw failure;
            if (lastEventAtMs >= endsAtMs) return undefined;
            this.pulls += 1;
            const batch = this.records.slice(position, position + (this.options.maxEventRecords ?? 10_000));
            position += batch.length;
            if (batch.length > 0) this.recordEvents += 1;
            const atEnd = this.closedWithChildren !== undefined && position >= this.records.length;
            const lastSeq = this.records[position - 1]?.sequenceNumber ?? (BASE - 1n).toString();
            return {
              records: batch,
              continuationSequenceNumber: atEnd ? undefined : lastSeq,
              millisBehindLatest: 0,
              childShardIds: atEnd ? this.closedWithChildren : undefined,
            };
          }));
        },
      });
      return () => {
        this.open -= 1;
        call.endedAtMs = this.scheduler.now();
        this.busyUntilMs = this.scheduler.now() + (this.options.inUseAfterEndMs ?? 3000);
      };
    });
  }

  private startIndex(start: IteratorStart): number {
    const index = (found: number) => (found < 0 ? this.records.length : found);
    switch (start.type) {
      case 'TRIM_HORIZON': return 0;
      case 'LATEST': return this.records.length;
      case 'AT_TIMESTAMP': return index(this.records.findIndex((r) => r.approximateArrivalTimestamp >= start.timestamp));
      case 'AT_SEQUENCE_NUMBER': return index(this.records.findIndex((r) => compareSequenceNumbers(r.sequenceNumber, start.sequenceNumber) >= 0));
      case 'AFTER_SEQUENCE_NUMBER': return index(this.records.findIndex((r) => compareSequenceNumbers(r.sequenceNumber, start.sequenceNumber) > 0));
    }
  }
}

interface Setup {
  readonly fake?: FakeOptions;
  readonly reader?: Partial<Omit<ReadFanOutOptions, 'fanOut' | 'tracker' | 'scheduler' | 'emit'>>;
  readonly autoAck?: boolean;
  /** Ack a record as it arrives when this says so. */
  readonly ackIf?: (record: KinsumerRecord) => boolean;
}

function harness(setup: Setup = {}) {
  const scheduler = new VirtualTimeScheduler(VirtualAction, Number.POSITIVE_INFINITY);
  const fanOut = new FakeFanOut(scheduler, setup.fake);
  const tracker = new TestTracker();
  const events: KinsumerEvent[] = [];
  const received: KinsumerRecord[] = [];
  const state = { completed: false, error: undefined as unknown, mostInFlight: 0 };
  let subscription: Subscription | undefined;
  return {
    scheduler, fanOut, tracker, events, received, state,
    start() {
      subscription = readFanOut({
        shardId: SHARD, fanOut, consumerArn$: of(ARN), tracker, scheduler, emit: (event) => events.push(event),
        start: { type: 'TRIM_HORIZON' }, maxInFlightRecords: 100, random: () => 0.5,
        ...setup.reader,
      }).subscribe({
        next: (record) => {
          received.push(record);
          state.mostInFlight = Math.max(state.mostInFlight, tracker.inFlight());
          if (setup.autoAck === true || setup.ackIf?.(record) === true) record.ack();
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
    retries: () => events.filter((e): e is Extract<KinsumerEvent, { type: 'retrying' }> => e.type === 'retrying'),
  };
}

const sequences = (records: readonly { sequenceNumber: string }[]) => records.map((r) => r.sequenceNumber);

describe('readFanOut (virtual time, in-memory SubscribeToShard)', () => {
  it('emits the shard\'s records in order, tracked, one event a second, from a single subscription', () => {
    const h = harness({ autoAck: true });
    const first = h.fanOut.put(5, 'a');
    h.start();
    h.at(2500, () => h.fanOut.put(3, 'b'));
    h.runTo(10_000);
    h.stop();
    expect(sequences(h.received)).to.deep.equal(sequences(h.fanOut.records));
    expect(h.received.map((r) => text(r.data))).to.deep.equal(['a0', 'a1', 'a2', 'a3', 'a4', 'b0', 'b1', 'b2']);
    expect(h.received[0]?.partitionKey).to.equal(first[0]?.partitionKey);
    expect(h.received[0]?.shardId).to.equal(SHARD);
    expect(h.tracker.tracked).to.deep.equal(h.fanOut.records.map((r) => ({ sequenceNumber: r.sequenceNumber })));
    expect(h.fanOut.calls).to.have.length(1);
    expect(h.fanOut.calls[0]?.start).to.deep.equal({ type: 'TRIM_HORIZON' });
  });

  it('R12: a LATEST start takes the stream\'s clock at its first subscription as the group\'s start (told to the tracker); without one, nothing is told', () => {
    const told = (tellsStreamTime: boolean) => {
      const h = harness({ fake: { tellsStreamTime }, reader: { start: { type: 'LATEST' } } });
      const streamStarts: number[] = [];
      h.tracker.streamStart = (streamTime: Date) => { streamStarts.push(streamTime.getTime()); };
      h.runTo(700);
      h.start();
      h.runTo(3000);
      h.stop();
      expect(h.fanOut.accepted()[0]?.start).to.deep.equal({ type: 'LATEST' });
      return streamStarts;
    };
    expect(told(true)).to.deep.equal([700]);
    expect(told(false)).to.deep.equal([]);
  });

  it('renews the subscription before the service ends it, for as long as it reads, and loses nothing', () => {
    const h = harness({ autoAck: true });
    h.start();
    const lastMs = 20 * 60_000;
    for (let t = 500; t < lastMs; t += 7_000) h.at(t, () => h.fanOut.put(2, `t${t}-`));
    h.runTo(lastMs + 5000);
    h.stop();
    expect(sequences(h.received)).to.deep.equal(sequences(h.fanOut.records));
    const accepted = h.fanOut.accepted();
    // 20 minutes outlive four 5-minute subscriptions.
    expect(accepted.length).to.be.at.least(5);
    for (const call of accepted.slice(0, -1)) {
      expect((call.endedAtMs ?? Infinity) - call.atMs, 'ended by the reader, before the service would').to.equal(DEFAULT_RENEW_AFTER_MS);
    }
    // Each renewal continues where the previous one stood, never from the start again.
    for (const call of accepted.slice(1)) expect(call.start.type).to.equal('AFTER_SEQUENCE_NUMBER');
    // A renewal meets kinesis-local's ResourceInUseException window and backs off through it.
    expect(h.retries().every((r) => r.operation === 'SubscribeToShard' && r.error.name === 'ResourceInUseException')).to.equal(true);
    expect(h.state.error).to.equal(undefined);
  });

  it('resubscribes from the ContinuationSequenceNumber when the service ends the subscription first', () => {
    const h = harness({ autoAck: true, fake: { lifetimeMs: 60_000, inUseAfterEndMs: 0 } });
    h.fanOut.put(3, 'x');
    h.start();
    h.runTo(130_000);
    h.at(130_000, () => h.fanOut.put(2, 'y'));
    h.runTo(140_000);
    h.stop();
    expect(h.received.map((r) => text(r.data))).to.deep.equal(['x0', 'x1', 'x2', 'y0', 'y1']);
    const accepted = h.fanOut.accepted();
    expect(accepted.map((c) => c.atMs)).to.deep.equal([0, 60_000, 120_000]);
    expect(accepted[1]?.start).to.deep.equal({ type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: h.fanOut.records[2]?.sequenceNumber });
  });

  it('at the end of a closed shard: waits for the acks, reports the children, ends the subscription and completes', () => {
    // A recorded end of shard: kinesis-local cannot produce it (see the top of this file).
    const h = harness();
    h.fanOut.put(4);
    h.fanOut.closedWithChildren = ['shardId-000000000001', 'shardId-000000000002'];
    h.start();
    h.runTo(5000);
    expect(h.received).to.have.length(4);
    expect(h.state.completed, 'not before the last ack').to.equal(false);
    expect(h.tracker.finishCalls).to.deep.equal([{ sequenceNumber: h.fanOut.records[3]?.sequenceNumber }]);
    expect(h.fanOut.openSubscriptions(), 'the subscription is ended at the final event').to.equal(0);
    h.tracker.ackAll();
    h.runTo(6000);
    expect(h.state.completed).to.equal(true);
    expect(h.events.filter((e) => e.type === 'shard-finished')).to.deep.equal([
      { type: 'shard-finished', shardId: SHARD, childShardIds: ['shardId-000000000001', 'shardId-000000000002'] },
    ]);
    expect(h.fanOut.calls).to.have.length(1);
  });

  it('an empty closed shard finishes with nothing read', () => {
    const h = harness();
    h.fanOut.closedWithChildren = ['shardId-000000000003'];
    h.start();
    h.runTo(3000);
    expect(h.state.completed).to.equal(true);
    expect(h.tracker.finishCalls).to.deep.equal([undefined]);
  });

  it('never has more than maxInFlightRecords unacked, and pulls no event while there is no room', () => {
    const h = harness({ reader: { maxInFlightRecords: 5 }, fake: { maxEventRecords: 12 } });
    h.fanOut.put(60);
    h.start();
    h.runTo(30_000);
    // The first event held 12 records: 5 emitted, 7 held back, and no second event pulled.
    expect(h.received).to.have.length(5);
    expect(h.fanOut.pulls).to.equal(1);
    expect(h.tracker.ackWaits).to.be.greaterThan(0);
    // A slow consumer: 2 acks a second.
    for (let t = 30_000; t < 120_000; t += 500) h.at(t, () => h.tracker.ackFirst(1));
    h.runTo(120_000);
    h.stop();
    expect(h.state.mostInFlight).to.equal(5);
    expect(sequences(h.received)).to.deep.equal(sequences(h.fanOut.records));
    // 60 records in events of 12: five events, each pulled only once the one before was delivered.
    expect(h.fanOut.recordEvents).to.equal(5);
  });

  it('one record never acked (all later ones acked): pulls no further than maxInFlightRecords past the watermark', () => {
    // R1: acked records behind an unacked one are still pending, so they count against the bound.
    const h = harness({ reader: { maxInFlightRecords: 100 }, fake: { maxEventRecords: 30 }, ackIf: (record) => text(record.data) !== 'r0' });
    h.fanOut.put(2000);
    h.start();
    h.runTo(120_000);
    h.stop();
    expect(h.received).to.have.length(100);
    expect(h.tracker.pending()).to.equal(100);
    // 100 records in events of 30: the fourth event is pulled (room was left), the fifth never.
    expect(h.fanOut.pulls).to.equal(4);
  });

  it('after a dropped connection, resumes right after the last emitted record', () => {
    const h = harness({ autoAck: true, fake: { maxEventRecords: 10, inUseAfterEndMs: 0 } });
    h.fanOut.put(20);
    h.start();
    h.runTo(1500);
    expect(h.received).to.have.length(10);
    // The connection drops while the reader waits for the second event.
    h.fanOut.failNextPull = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    h.runTo(10_000);
    h.stop();
    expect(sequences(h.received)).to.deep.equal(sequences(h.fanOut.records));
    const accepted = h.fanOut.accepted();
    expect(accepted).to.have.length(2);
    expect(accepted[1]?.start).to.deep.equal({ type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: h.fanOut.records[9]?.sequenceNumber });
    expect(h.retries().map((r) => [r.operation, r.error.message])).to.deep.equal([['SubscribeToShard', 'socket hang up']]);
  });

  it('a renewal while records are held back resumes after the last emitted one: the held-back ones come again, once', () => {
    const h = harness({ reader: { maxInFlightRecords: 4, renewAfterMs: 5000 }, fake: { maxEventRecords: 10 } });
    h.fanOut.put(20);
    h.start();
    h.runTo(6000);
    expect(h.received).to.have.length(4);
    expect(h.fanOut.accepted()[0]?.endedAtMs, 'renewed while waiting for acks').to.equal(5000);
    for (let t = 6000; t < 40_000; t += 100) h.at(t, () => h.tracker.ackAll());
    h.runTo(40_000);
    h.stop();
    expect(sequences(h.received)).to.deep.equal(sequences(h.fanOut.records));
    expect(h.state.mostInFlight).to.equal(4);
    expect(h.fanOut.accepted()[1]?.start).to.deep.equal({ type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: h.fanOut.records[3]?.sequenceNumber });
  });

  it('subscribes at most once a second per shard, however fast subscriptions fail', () => {
    const h = harness({ autoAck: true, reader: { backoff: { baseMs: 1, maxMs: 1 } }, fake: { inUseAfterEndMs: 0 } });
    h.fanOut.put(3);
    for (let i = 0; i < 8; i += 1) h.fanOut.failSubscribes.push(awsError('InternalFailureException'));
    h.start();
    h.runTo(20_000);
    h.stop();
    const times = h.fanOut.calls.map((c) => c.atMs);
    expect(times).to.have.length(9);
    for (let i = 1; i < times.length; i += 1) expect((times[i] ?? 0) - (times[i - 1] ?? 0)).to.be.at.least(1000);
    expect(h.received).to.have.length(3);
  });

  it('on ResourceInUseException (a subscription still winding down) backs off and retries until it gets the shard', () => {
    const h = harness({ autoAck: true });
    h.fanOut.put(3);
    // Another subscription of this consumer to the shard, ended at 0: in use until 3000.
    h.at(0, () => h.fanOut.subscribeToShard(ARN, SHARD, { type: 'LATEST' }).subscribe().unsubscribe());
    h.at(1, () => h.start());
    h.runTo(20_000);
    h.stop();
    const refused = h.fanOut.calls.filter((c) => c.outcome === 'in-use');
    expect(refused.length).to.be.at.least(2);
    expect(h.retries().length).to.equal(refused.length);
    for (const retry of h.retries()) expect([retry.operation, retry.error.name]).to.deep.equal(['SubscribeToShard', 'ResourceInUseException']);
    expect(h.fanOut.accepted()).to.have.length(2);
    expect(h.fanOut.accepted()[1]?.atMs).to.be.at.least(3000);
    expect(h.received).to.have.length(3);
  });

  it('gives up with ShardReadError on a fault retrying cannot fix', () => {
    const h = harness();
    h.fanOut.failSubscribes.push(awsError('AccessDeniedException'));
    h.start();
    h.runTo(5000);
    expect(h.state.error).to.be.instanceOf(ShardReadError);
    expect((h.state.error as ShardReadError).operation).to.equal('SubscribeToShard');
    expect(((h.state.error as ShardReadError).cause as Error).name).to.equal('AccessDeniedException');
  });

  it('a checkpoint the service rejects before any delivery is a CorruptCheckpointError of that shard, as in polling', () => {
    const stored = (BASE + 999_999n).toString();
    const h = harness({ reader: { start: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: stored } } });
    h.fanOut.failSubscribes.push(awsError('InvalidArgumentException'));
    h.start();
    h.runTo(5000);
    expect(h.state.error).to.be.instanceOf(CorruptCheckpointError);
    expect((h.state.error as CorruptCheckpointError).shardId).to.equal(SHARD);
    expect((h.state.error as CorruptCheckpointError).attribute).to.equal('SequenceNumber');
    expect(((h.state.error as CorruptCheckpointError).cause as Error).name).to.equal('InvalidArgumentException');
  });

  it('unsubscribing (a lost lease) ends the subscription at once', () => {
    const h = harness({ autoAck: true });
    h.fanOut.put(2);
    h.start();
    h.runTo(1500);
    expect(h.fanOut.openSubscriptions()).to.equal(1);
    h.stop();
    expect(h.fanOut.openSubscriptions()).to.equal(0);
    expect(h.fanOut.calls[0]?.endedAtMs).to.equal(1500);
  });

  it('starts from the checkpoint as polling does, and splits KPL aggregates (skipping what the checkpoint covers)', () => {
    const packed = aggregate(['u0', 'u1', 'u2', 'u3'].map((data) => ({ partitionKey: 'k', data })));
    // Sequence numbers are known before the reader exists: BASE, BASE+1000, ... in put order.
    const aggSeq = (BASE + 2000n).toString();
    const h = harness({
      autoAck: true,
      reader: { start: { type: 'AT_SEQUENCE_NUMBER', sequenceNumber: aggSeq }, skipThrough: { sequenceNumber: aggSeq, subSequenceNumber: 1 } },
    });
    h.fanOut.put(2, 'plain');
    expect(h.fanOut.add(packed.data, packed.partitionKey).sequenceNumber).to.equal(aggSeq);
    h.fanOut.put(1, 'after');
    h.start();
    h.runTo(5000);
    h.stop();
    expect(h.received.map((r) => [text(r.data), r.subSequenceNumber])).to.deep.equal([['u2', 2], ['u3', 3], ['after0', undefined]]);
    expect(h.fanOut.calls[0]?.start).to.deep.equal({ type: 'AT_SEQUENCE_NUMBER', sequenceNumber: aggSeq });
  });
});

describe('fan-out plan (pure)', () => {
  it('one subscribe a second', () => {
    expect(subscribeDelayMs(5000, undefined)).to.equal(0);
    expect(subscribeDelayMs(5000, 4800)).to.equal(800);
    expect(subscribeDelayMs(5000, 3000)).to.equal(0);
  });

  it('continues from the continuation unless delivery went past it, else after the last record, else the origin', () => {
    const origin = { iteratorStart: { type: 'TRIM_HORIZON' } } as const;
    expect(planSubscribe(origin, undefined, undefined, undefined)).to.deep.equal(origin);
    expect(planSubscribe(origin, undefined, '100', new Date(0))).to.deep.equal({ iteratorStart: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: '100' } });
    const last = { position: { sequenceNumber: '200', subSequenceNumber: 1 }, aggregateDone: false };
    expect(planSubscribe(origin, last, '100', new Date(0))).to.deep.equal({
      iteratorStart: { type: 'AT_SEQUENCE_NUMBER', sequenceNumber: '200' }, skipThrough: { sequenceNumber: '200', subSequenceNumber: 1 },
    });
    expect(planSubscribe(origin, { position: { sequenceNumber: '200' }, aggregateDone: true }, '300', new Date(0)))
      .to.deep.equal({ iteratorStart: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: '300' } });
    // A LATEST start that has seen nothing resumes where the group started (the stream's clock at its first subscription).
    expect(planSubscribe({ iteratorStart: { type: 'LATEST' } }, undefined, undefined, new Date(42)))
      .to.deep.equal({ iteratorStart: { type: 'AT_TIMESTAMP', timestamp: new Date(42) } });
  });
});

describe('stream consumer registration (virtual time)', () => {
  /** A consumer registry: CREATING for `creatingMs` after registration. */
  function registry(scheduler: VirtualTimeScheduler, options: { existing?: string; creatingMs?: number; registerError?: Error } = {}) {
    const calls: { op: string; atMs: number }[] = [];
    let registeredAtMs: number | undefined = options.existing === undefined ? undefined : Number.NEGATIVE_INFINITY;
    const info = (): StreamConsumerInfo | undefined => (registeredAtMs === undefined ? undefined : {
      consumerName: 'c', consumerArn: ARN, status: scheduler.now() - registeredAtMs >= (options.creatingMs ?? 2000) ? 'ACTIVE' : 'CREATING',
    });
    const port: FanOutPort = {
      describeConsumer: () => of(undefined).pipe(map(() => { calls.push({ op: 'describe', atMs: scheduler.now() }); return info(); })),
      registerConsumer: () => of(undefined).pipe(map(() => {
        calls.push({ op: 'register', atMs: scheduler.now() });
        if (options.registerError !== undefined) throw options.registerError;
        registeredAtMs = scheduler.now();
        return info() as StreamConsumerInfo;
      })),
      deregisterConsumer: () => of(undefined),
      subscribeToShard: () => NEVER,
    };
    return { port, calls };
  }

  it('registers a missing consumer, then polls (at most 4 a second, growing) until it is ACTIVE', () => {
    const scheduler = new VirtualTimeScheduler(VirtualAction, Number.POSITIVE_INFINITY);
    const { port, calls } = registry(scheduler, { creatingMs: 5000 });
    const arns: string[] = [];
    ensureConsumer({ port, consumerName: 'c', scheduler, emit: () => undefined, random: () => 1 }).subscribe((arn) => arns.push(arn));
    scheduler.flush();
    expect(arns).to.deep.equal([ARN]);
    expect(calls.map((c) => c.op).slice(0, 2)).to.deep.equal(['describe', 'register']);
    expect(calls.filter((c) => c.op === 'register')).to.have.length(1);
    const polls = calls.filter((c) => c.op === 'describe').map((c) => c.atMs);
    const gaps = polls.slice(1).map((t, i) => t - (polls[i] ?? 0));
    for (const gap of gaps) expect(gap).to.be.at.least(250);
    expect(gaps).to.deep.equal([...gaps].sort((a, b) => a - b));
    expect(polls.at(-1)).to.be.at.least(5000);
  });

  it('an existing ACTIVE consumer is used as it is; a registration lost to another client is waited for', () => {
    const scheduler = new VirtualTimeScheduler(VirtualAction, Number.POSITIVE_INFINITY);
    const existing = registry(scheduler, { existing: 'c' });
    const arns: string[] = [];
    ensureConsumer({ port: existing.port, consumerName: 'c', scheduler, emit: () => undefined }).subscribe((arn) => arns.push(arn));
    scheduler.flush();
    expect(existing.calls.map((c) => c.op)).to.deep.equal(['describe']);
    const racing = registry(scheduler, { registerError: awsError('ResourceInUseException') });
    let error: unknown;
    const sub = ensureConsumer({ port: racing.port, consumerName: 'c', scheduler, emit: () => undefined }).subscribe({ error: (e: unknown) => { error = e; } });
    scheduler.maxFrames = scheduler.now() + 3000;
    scheduler.flush();
    sub.unsubscribe();
    expect(error).to.equal(undefined);
    expect(racing.calls.filter((c) => c.op === 'describe').length).to.be.greaterThan(2);
    expect(arns).to.deep.equal([ARN]);
  });

  it('consumerArn shares one registration among the leases of a client', () => {
    const scheduler = new VirtualTimeScheduler(VirtualAction, Number.POSITIVE_INFINITY);
    const { port, calls } = registry(scheduler);
    const options = { port, consumerName: 'c', scheduler, emit: () => undefined };
    const arns: string[] = [];
    consumerArn(options).subscribe((arn) => arns.push(arn));
    consumerArn(options).subscribe((arn) => arns.push(arn));
    scheduler.flush();
    consumerArn(options).subscribe((arn) => arns.push(arn));
    expect(arns).to.deep.equal([ARN, ARN, ARN]);
    expect(calls.filter((c) => c.op === 'register')).to.have.length(1);
    expect(consumerStep(undefined)).to.equal('register');
    expect(consumerStep({ consumerName: 'c', consumerArn: ARN, status: 'DELETING' })).to.equal('wait');
  });
});

describe('readMode: which reader a lease reads with', () => {
  const scheduler = new VirtualTimeScheduler(VirtualAction, Number.POSITIVE_INFINITY);
  const mode = (readMode: 'polling' | 'fan-out') => ({ readMode, consumerName: 'c', scheduler });

  it('polling reads with readShard and prepares nothing', async () => {
    expect(readerFor(mode('polling'), new MemoryStream())).to.equal(readShard);
    await prepareReadMode(mode('polling'), new MemoryStream(), () => undefined);
  });

  it('fan-out reads through the stream\'s fan-out port, and refuses a stream adapter without one', async () => {
    const h = harness({ autoAck: true });
    h.fanOut.put(2);
    const stream = Object.assign(new MemoryStream(), { fanOut: h.fanOut });
    const received: string[] = [];
    const tracker = new TestTracker();
    readerFor(mode('fan-out'), stream)({
      shardId: SHARD, stream, tracker, start: { type: 'TRIM_HORIZON' }, throttleDelayMs: 250, maxInFlightRecords: 10,
      scheduler: h.scheduler, emit: () => undefined,
    }).subscribe((record) => received.push(record.sequenceNumber));
    h.runTo(2000);
    expect(received).to.deep.equal(sequences(h.fanOut.records));
    let error: unknown;
    readerFor(mode('fan-out'), new MemoryStream())({
      shardId: SHARD, stream, tracker, start: { type: 'TRIM_HORIZON' }, throttleDelayMs: 250, maxInFlightRecords: 10, scheduler, emit: () => undefined,
    }).subscribe({ error: (e: unknown) => { error = e; } });
    expect(error).to.be.instanceOf(ConfigError);
    expect((error as ConfigError).option).to.equal('readMode');
    const refused = await prepareReadMode(mode('fan-out'), new MemoryStream(), () => undefined).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(ConfigError);
  });
});

describe('fan-out in a lease session', () => {
  it('a lease lost to another client ends the shard\'s subscription', async () => {
    const h = harness();
    h.fanOut.put(3);
    const table = new MemoryCheckpointTable();
    const store = (clientId: string) => new MemoryLeaseStore({ clientId, leaseTtlMs: 3000, now: () => h.scheduler.now(), table });
    const mine = store('me');
    const held = await firstValueFrom(mine.capture(SHARD));
    if (held === undefined) throw new Error('not captured');
    const options = resolveOptions({
      streamName: 's', applicationName: 'app', readMode: 'fan-out', leaseTtlMs: 3000, commitFrequencyMs: 500, shardCheckFrequencyMs: 1000,
      leaderActionFrequencyMs: 1000, scheduler: h.scheduler,
      kinesis: { send: () => Promise.reject(new Error('unused')) } as never, dynamodb: { send: () => Promise.reject(new Error('unused')) } as never,
    });
    const events: KinsumerEvent[] = [];
    const session = new LeaseSession(held, [], {
      store: mine, stream: Object.assign(new MemoryStream(), { fanOut: h.fanOut }), options, emit: (event) => events.push(event),
      fail: (e) => { throw e; },
    });
    const received: KinsumerRecord[] = [];
    let error: unknown;
    session.lease.records$.subscribe({ next: (record) => { received.push(record); record.ack(); }, error: (e: unknown) => { error = e; } });
    h.runTo(2000);
    expect(received).to.have.length(3);
    expect(h.fanOut.openSubscriptions()).to.equal(1);
    // Another client takes the shard over (an operator's forced reset moves the lease counter).
    await firstValueFrom(store('other').resetCheckpoint(SHARD, undefined, { force: true }), { defaultValue: undefined });
    h.runTo(5000);
    await session.done;
    expect(error).to.be.instanceOf(LeaseLostError);
    expect(h.fanOut.openSubscriptions(), 'the subscription ended with the lease').to.equal(0);
  });
});
