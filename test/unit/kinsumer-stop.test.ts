// How a client starts and stops when things go wrong (design §7.4, newcomer trial §3): a start that
// cannot reach the group fails with StartTimeoutError; a stop says what it waits for, and after the
// application's pipeline errored it does not wait for acks nobody can give. Virtual time.
import { expect } from 'chai';
import { ReplaySubject, concatMap, delay, throwError } from 'rxjs';
import { StartTimeoutError } from '../../src/index.js';
import { drainBoundMs } from '../../src/lease/lease-session.js';
import type { HeldLease } from '../../src/ports/lease-store.js';
import { awsError } from '../../src/testing/memory-stream.js';
import { type LogLine as Line, capturingLogger } from '../support/log-lines.js';
import { FAST, MemoryGroup } from '../support/memory-group.js';
import { override } from '../support/port-wrappers.js';

const DRAIN_BOUND_MS = drainBoundMs(FAST);

describe('stop() (virtual time)', function () {
  this.timeout(30_000);

  it('after the handler threw on record 10 of 50, the stop does not sit out the drain bound: what was acked is committed, the lease released', async () => {
    const group = new MemoryGroup(1);
    group.stream.putRecords(Array.from({ length: 50 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    const lines: Line[] = [];
    let handled = 0;
    const member = group.join('a', {
      keepFailure: true,
      extra: { logger: capturingLogger(lines) },
      pipeline: concatMap(async (record) => {
        handled += 1;
        await Promise.resolve();
        if (handled === 10) throw new Error('boom in handler');
        record.ack();
      }),
    });
    await group.scheduler.until(() => member.failure !== undefined, 'the handler to fail', 10_000, 10);
    const failedAtMs = group.scheduler.now();
    let settled: unknown = 'pending';
    void member.kinsumer.stop().then(() => { settled = 'resolved'; }, (error: unknown) => { settled = error; });
    await group.scheduler.until(() => settled !== 'pending', 'stop() to settle', 10_000, 10);
    expect(settled).to.equal('resolved');
    // Virtual time: the stop is over before the drain bound would have run out.
    expect(group.scheduler.now() - failedAtMs).to.be.below(DRAIN_BOUND_MS);
    const row = group.checkpoints.rows()[0];
    expect(row?.ownerId).to.equal(undefined);
    expect(row?.checkpoint).to.deep.equal({ type: 'position', position: { sequenceNumber: member.received[8]?.sequenceNumber } });
    const said = lines.filter((l) => l.level === 'info' && /stopping/.test(l.msg ?? ''));
    expect(said.map((l) => l.obj)).to.deep.equal([{
      shards: ['shardId-000000000000'], unacked: { 'shardId-000000000000': 41 }, drainBoundMs: DRAIN_BOUND_MS, quietMs: FAST.commitFrequencyMs,
    }]);
    expect(said[0]?.msg).to.contain('nobody subscribed').and.contain('41 unacked records');
  });

  it('stop() called from the subscriber\'s error callback (before the unsubscribe) does not sit out the drain bound either', async () => {
    const group = new MemoryGroup(1);
    group.stream.putRecords(Array.from({ length: 50 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    let handled = 0;
    let failedAtMs = Number.NaN;
    let settled: unknown = 'pending';
    const member = group.join('a', {
      keepFailure: true,
      pipeline: concatMap(async (record) => {
        handled += 1;
        await Promise.resolve();
        if (handled === 10) throw new Error('boom in handler');
        record.ack();
      }),
      onError: (_error, kinsumer) => {
        failedAtMs = group.scheduler.now();
        void kinsumer.stop().then(() => { settled = 'resolved'; }, (error: unknown) => { settled = error; });
      },
    });
    await group.scheduler.until(() => settled !== 'pending', 'stop() to settle', 10_000, 10);
    expect(settled).to.equal('resolved');
    expect(group.scheduler.now() - failedAtMs).to.be.below(DRAIN_BOUND_MS);
    expect(group.checkpoints.rows()[0]?.checkpoint).to.deep.equal({ type: 'position', position: { sequenceNumber: member.received[8]?.sequenceNumber } });
  });

  it('says at info what it waits for (shards, unacked records per shard, the drain bound), then waits that bound for acks', async () => {
    const group = new MemoryGroup(2);
    group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    const lines: Line[] = [];
    const member = group.join('a', { extra: { logger: capturingLogger(lines) }, ack: () => false });
    await group.scheduler.until(() => member.received.length === 10, 'every record', 10_000);
    const perShard = Object.fromEntries(['shardId-000000000000', 'shardId-000000000001']
      .map((id) => [id, member.received.filter((r) => r.shardId === id).length] as const).filter(([, n]) => n > 0));
    const startedAtMs = group.scheduler.now();
    let settled = false;
    void member.kinsumer.stop().then(() => { settled = true; });
    const said = lines.filter((l) => l.level === 'info' && /stopping/.test(l.msg ?? ''));
    expect(said.map((l) => l.obj)).to.deep.equal([{ shards: ['shardId-000000000000', 'shardId-000000000001'], unacked: perShard, drainBoundMs: DRAIN_BOUND_MS }]);
    expect(said[0]?.msg).to.contain(`${DRAIN_BOUND_MS} ms`).and.contain('10 unacked records');
    await group.scheduler.until(() => settled, 'stop()', 10_000);
    expect(group.scheduler.now() - startedAtMs).to.be.at.least(DRAIN_BOUND_MS);
  });
});

describe('startTimeoutMs (virtual time)', function () {
  this.timeout(30_000);

  it('a client that cannot join the group within startTimeoutMs errors records$ with StartTimeoutError, the last error as its cause', async () => {
    const group = new MemoryGroup(1, { startTimeoutMs: 4000 });
    const failure = awsError('InternalServerError');
    const member = group.join('a', {
      keepFailure: true,
      wrap: (ports) => ({ ...ports, membership: override(ports.membership, { heartbeat: () => throwError(() => failure) }) }),
    });
    let leasesError: unknown;
    member.kinsumer.leases$.subscribe({ error: (error: unknown) => { leasesError = error; } });
    await group.scheduler.until(() => member.failure !== undefined, 'records$ to fail', 20_000);
    expect(member.failure).to.be.instanceOf(StartTimeoutError);
    expect((member.failure as StartTimeoutError).cause).to.equal(failure);
    expect((member.failure as StartTimeoutError).timeoutMs).to.equal(4000);
    expect(leasesError).to.equal(member.failure);
    expect(member.kinsumer.status().state).to.equal('failed');
  });

  it('the stop() after a failed start reports nothing more: a client that never reached the group has none to leave', async () => {
    const group = new MemoryGroup(1, { startTimeoutMs: 2000 });
    const unreachable = awsError('InternalServerError');
    const down = () => throwError(() => unreachable);
    const member = group.join('a', {
      keepFailure: true,
      wrap: (ports) => ({
        ...ports,
        membership: override(ports.membership, { heartbeat: down, deregister: down }),
        metadata: override(ports.metadata, { stepDown: down, bumpGroupEpoch: down }),
      }),
    });
    await group.scheduler.until(() => member.failure !== undefined, 'records$ to fail', 20_000);
    expect(member.failure).to.be.instanceOf(StartTimeoutError);
    await member.kinsumer.stop();
    // The failure stops the client at once (its stop() only awaits that): nothing after the failure's own event.
    const failedAt = member.events.findIndex((e) => e.type === 'error' && e.error === member.failure);
    expect(member.events.slice(failedAt + 1).map((e) => (e.type === 'error' ? `error: ${e.error.message}` : e.type))).to.deep.equal([]);
  });

  it('a client that started in time is not bound by it', async () => {
    const group = new MemoryGroup(1, { startTimeoutMs: 2000 });
    const member = group.join('a');
    await group.scheduler.advanceBy(5 * 2000);
    expect(member.failure).to.equal(undefined);
    expect(member.kinsumer.status().state).to.equal('running');
    await member.kinsumer.stop();
  });
});

describe('stop() with a capture in flight (virtual time)', function () {
  this.timeout(30_000);

  it('a capture the store applied while stop() began is released too: no lease is left owned after stop()', async () => {
    const group = new MemoryGroup(1);
    let captures = 0;
    const member = group.join('a', {
      wrap: (ports) => ({
        ...ports,
        store: override(ports.store, {
          // The store applies the capture at once; its answer takes 100 ms to come back (a slow network).
          capture: (shardId: string) => {
            captures += 1;
            const applied = new ReplaySubject<HeldLease | undefined>();
            ports.store.capture(shardId).subscribe(applied);
            return applied.pipe(delay(100, group.scheduler));
          },
        }),
      }),
    });
    await group.scheduler.until(() => captures === 1, 'a capture sent', 10_000, 1);
    expect(group.owners().get('shardId-000000000000')).to.equal('a');
    let stopped = false;
    void member.kinsumer.stop().then(() => { stopped = true; });
    await group.scheduler.until(() => stopped, 'stop()', 10_000);
    expect(group.owners().get('shardId-000000000000')).to.equal(undefined);
  });
});
