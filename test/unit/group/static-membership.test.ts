// Static membership (design §9.3, issue 32 item 1): a process started with the clientId of a
// registered member takes its place at once — its incarnation raised, its leases captured fenced,
// no wait for expiry — and the old instance, if it still runs, ends with ClientReplacedError and
// stops emitting as soon as it learns (its next heartbeat, at most renewIntervalMs after the
// take-over). Virtual time, in-memory stores, the default timings the README states the bound for.
import { expect } from 'chai';
import { ClientReplacedError, DEFAULTS, KinsumerError } from '../../../src/index.js';
import { MemoryGroup } from '../../support/memory-group.js';
import { DEFAULT_TIMINGS, produceEvery } from '../../support/default-timings.js';

const RENEW_INTERVAL_MS = DEFAULTS.leaseTtlMs / 3;

describe('static membership: a restart with the same clientId (virtual time)', function () {
  this.timeout(60_000);

  it('after a crash (the old process frozen for good), the new process reads every shard within a second of its start', async () => {
    const group = new MemoryGroup(2, DEFAULT_TIMINGS);
    const producing = produceEvery(group, 20);
    const old = group.join('same');
    await group.scheduler.until(() => group.counts().get('same') === 2, 'the old process holds both shards', 30_000);
    await group.scheduler.advanceBy(2 * DEFAULT_TIMINGS.shardCheckFrequencyMs + 777);
    old.pause(); // SIGKILL: nothing more from it, its rows stay as they were
    await group.scheduler.advanceBy(100);
    const fresh = group.join('same');
    const tookMs = await group.scheduler.until(
      () => group.stream.shardIds().every((shardId) => fresh.received.some((r) => r.shardId === shardId)),
      'the new process reads both shards', 4 * DEFAULT_TIMINGS.leaseTtlMs, 10,
    );
    expect(tookMs, 'start → first record of every shard (ms of virtual time)').to.be.at.most(1000);
    const counters = fresh.events.flatMap((e) => (e.type === 'lease-acquired' ? [e.fencingToken] : []));
    expect(counters.length, 'each shard captured once').to.equal(2);
    producing.unsubscribe();
    await group.stopAll();
  });

  it('while the old process still runs, the new one takes its place at once; the old one ends with ClientReplacedError and emits nothing after its next heartbeat', async () => {
    const group = new MemoryGroup(2, DEFAULT_TIMINGS);
    const producing = produceEvery(group, 20);
    const old = group.join('same', { keepFailure: true });
    const oldReceivedAt: number[] = [];
    old.kinsumer.records$.subscribe({ next: () => oldReceivedAt.push(group.scheduler.now()), error: () => undefined });
    await group.scheduler.until(() => group.counts().get('same') === 2, 'the old process holds both shards', 30_000);
    await group.scheduler.advanceBy(2 * DEFAULT_TIMINGS.shardCheckFrequencyMs + 1234);
    const startedAt = group.scheduler.now();
    const fresh = group.join('same');
    const tookMs = await group.scheduler.until(
      () => group.stream.shardIds().every((shardId) => fresh.received.some((r) => r.shardId === shardId)),
      'the new process reads both shards', 4 * DEFAULT_TIMINGS.leaseTtlMs, 10,
    );
    expect(tookMs, 'start → first record of every shard (ms of virtual time)').to.be.at.most(1000);
    const firstCaptureAt = startedAt + tookMs;
    await group.scheduler.until(() => old.failure !== undefined, 'the old process to fail', 2 * RENEW_INTERVAL_MS, 10);
    expect(old.failure).to.be.instanceOf(ClientReplacedError);
    expect(old.failure).to.be.instanceOf(KinsumerError);
    // It learns at its next heartbeat: within one renewal interval (plus the call) of the take-over.
    const lastOldRecordAt = Math.max(...oldReceivedAt);
    expect(lastOldRecordAt - firstCaptureAt, 'the old process emitted at most until its next heartbeat').to.be.at.most(RENEW_INTERVAL_MS + 100);
    await group.scheduler.advanceBy(DEFAULT_TIMINGS.leaseTtlMs);
    expect(Math.max(...oldReceivedAt)).to.equal(lastOldRecordAt);
    expect(fresh.errors).to.deep.equal([]);
    expect(group.counts().get('same')).to.equal(2);
    producing.unsubscribe();
    await group.stopAll();
  });
});
