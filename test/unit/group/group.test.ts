import { expect } from 'chai';
import { CorruptCheckpointError } from '../../../src/index.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';

function balanced(group: MemoryGroup, counts: number[]): boolean {
  return JSON.stringify([...group.counts().values()].sort()) === JSON.stringify(counts);
}

// Whole-group behaviour on virtual time: the real client code (coordinator, assignment, leases,
// checkpointer, reader) with in-memory stores and stream in place of the AWS adapters.
describe('group coordination on virtual time (in-memory stores and stream)', function () {
  this.timeout(30_000);

  it('two clients split 6 shards 3/3 and receive every record exactly once', async () => {
    const group = new MemoryGroup(6);
    group.stream.putRecords(Array.from({ length: 120 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    group.join('a');
    group.join('b');
    await group.scheduler.until(() => group.receivedData().length >= 120 && balanced(group, [3, 3]), 'all records, 3/3', 20_000);
    expect(new Set(group.receivedData()).size).to.equal(120);
    expect(group.receivedData()).to.have.length(120);
    await group.stopAll();
  });

  it('a stopped client leaves nothing scheduled (no timer holds the process open after stop())', async () => {
    const group = new MemoryGroup(2);
    group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    group.join('a');
    await group.scheduler.until(() => group.receivedData().length >= 10, 'all records', 20_000);
    await group.stopAll();
    expect(group.scheduler.actions.map((a) => a.delay)).to.deep.equal([]);
  });

  it('a corrupt checkpoint row is reported once and looked at again at the shard-check pace, not every capture poll', async () => {
    const group = new MemoryGroup(1);
    const member = group.join('a');
    const corrupt = new CorruptCheckpointError('shardId-000000000000', 'SequenceNumber', 'is not a sequence number: "x"');
    for (let i = 0; i < 1000; i += 1) member.store.failNext(corrupt, ['capture']);
    await group.scheduler.until(() => member.store.calls.capture > 0, 'the first capture', 10_000);
    const windowMs = 20 * FAST.shardCheckFrequencyMs;
    await group.scheduler.advanceBy(windowMs);
    // At the capture poll (throttleDelayMs) it would be ~windowMs / 200 = 50 attempts.
    expect(member.store.calls.capture).to.be.within(2, windowMs / FAST.shardCheckFrequencyMs + 2);
    expect(member.events.filter((e) => e.type === 'error' && e.error === corrupt)).to.have.length(1);
    await member.kinsumer.stop();
  });

  it('a transient fault of the heartbeat is retried with backoff (retrying, numbered), and of the coordination check at the next tick', async () => {
    const group = new MemoryGroup(2);
    const member = group.join('a');
    const throttled = Object.assign(new Error('slow down'), { name: 'ProvisionedThroughputExceededException' });
    member.membership.failNext(throttled, ['heartbeat']);
    member.membership.failNext(throttled, ['heartbeat']);
    member.membership.failNext(throttled, ['liveClients']);
    await group.scheduler.until(() => group.counts().get('a') === 2, 'both shards held after the faults', 20_000);
    const reported = member.events.filter((e) => e.type === 'retrying' || e.type === 'error')
      .map((e) => (e.type === 'retrying' ? [e.type, e.operation, e.attempt, e.error] : [e.type, e.error]));
    expect(reported).to.deep.equal([
      ['retrying', 'heartbeat', 1, throttled],
      ['retrying', 'heartbeat', 2, throttled],
      ['retrying', 'coordination check', 1, throttled],
    ]);
    // The heartbeat backs off from 100 ms (full jitter), never beyond a renewal interval; the check waits for its next tick.
    const delays = member.events.flatMap((e) => (e.type === 'retrying' ? [e.delayMs] : []));
    expect(delays[0]).to.be.at.most(100);
    expect(delays[1]).to.be.at.most(200);
    expect(delays[2]).to.equal(FAST.shardCheckFrequencyMs);
    await member.kinsumer.stop();
  });

  it('a crashed client\'s shards are taken within leaseTtlMs + one shard check + a capture poll (their successor reads their rows at every check)', async () => {
    // A long shard check (lease TTL = 2 × check). The survivor judges by its own observation: the
    // dead client's row expires one TTL after the survivor first saw its last heartbeat (up to one
    // check after it was written); its leases, whose rows the survivor reads at every check (it is
    // their successor), one TTL after it first saw their last change, also up to one check after it.
    // A check timed to the row's expiry then hands the shards over without waiting for the next
    // periodic check.
    const timings = { shardCheckFrequencyMs: 1500, leaseTtlMs: 3000, leaderActionFrequencyMs: 1500 };
    const group = new MemoryGroup(4, timings);
    const a = group.join('a');
    // Out of phase: b's checks fall 700 ms after a's heartbeats.
    await group.scheduler.advanceBy(700);
    group.join('b');
    await group.scheduler.until(() => balanced(group, [2, 2]), 'balance 2/2', 20_000);
    a.pause(); // a frozen process: no heartbeat, no renewal from now on
    const tookMs = await group.scheduler.until(() => group.counts().get('b') === 4, 'b holds all 4 shards', 20_000, 10);
    // Reading the leases only once the client looks dead (a missed heartbeat) would be one check more.
    expect(tookMs).to.be.at.most(timings.leaseTtlMs + timings.shardCheckFrequencyMs + 1.75 * FAST.throttleDelayMs + 20);
    // Never before the last renewal (at most a third of a TTL before the freeze) stood still for a TTL.
    expect(tookMs).to.be.at.least(timings.leaseTtlMs - timings.leaseTtlMs / 3);
    a.resume();
    await group.stopAll();
  });

  it('the leader\'s crash: the next lowest id takes the lock within leaseTtlMs + 3 shard checks (it watches the lock from the leader\'s first missed heartbeat)', async () => {
    const group = new MemoryGroup(2);
    const a = group.join('a');
    const b = group.join('b');
    await group.scheduler.until(() => a.events.some((e) => e.type === 'leader-acquired') && balanced(group, [1, 1]), 'a leads, 1/1', 20_000);
    a.pause();
    const tookMs = await group.scheduler.until(() => b.events.some((e) => e.type === 'leader-acquired'), 'b leads', 20_000, 10);
    // Watching the lock only once b is the lowest live id would cost a second TTL (about 2 × TTL).
    expect(tookMs).to.be.at.most(FAST.leaseTtlMs + 3 * FAST.shardCheckFrequencyMs + 50);
    expect(tookMs).to.be.at.least(FAST.leaseTtlMs);
    a.resume();
    await group.stopAll();
  });

  it('a third client joining takes exactly two shards (2/2/2), moved without redelivering acked records', async () => {
    const group = new MemoryGroup(6);
    group.stream.putRecords(Array.from({ length: 60 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    group.join('a');
    group.join('b');
    await group.scheduler.until(() => group.receivedData().length >= 60, 'first batch', 20_000);
    const before = group.owners();
    group.join('c');
    await group.scheduler.until(() => group.counts().get('c') === 2 && [...group.counts().values()].every((n) => n === 2), 'balance 2/2/2', 20_000);
    const after = group.owners();
    const moved = [...after].filter(([shard, owner]) => before.get(shard) !== owner);
    expect(moved.map(([, owner]) => owner)).to.deep.equal(['c', 'c']);
    group.stream.putRecords(Array.from({ length: 60 }, (_, i) => ({ partitionKey: `k${i}`, data: `s${i}` })));
    await group.scheduler.until(() => group.receivedData().length >= 120, 'second batch', 20_000);
    expect(group.receivedData()).to.have.length(120);
    expect(new Set(group.receivedData()).size).to.equal(120);
    await group.stopAll();
  });

  it('idle shards keep their owner across many lease TTLs (the lease is renewed without new data)', async () => {
    const group = new MemoryGroup(4);
    group.join('a');
    group.join('b');
    await group.scheduler.until(() => balanced(group, [2, 2]), 'all shards owned, 2/2', 20_000);
    const owners = group.owners();
    const counters = new Map(group.checkpoints.rows().map((r) => [r.shardId, r.leaseCounter]));
    await group.scheduler.advanceBy(10 * FAST.leaseTtlMs);
    expect(group.owners()).to.deep.equal(owners);
    expect(new Map(group.checkpoints.rows().map((r) => [r.shardId, r.leaseCounter]))).to.deep.equal(counters);
    expect(group.members.flatMap((m) => m.events).filter((e) => e.type === 'lease-lost')).to.deep.equal([]);
    await group.stopAll();
  });

  it('a graceful stop hands every shard over with no acked record delivered again', async () => {
    const group = new MemoryGroup(4);
    group.stream.putRecords(Array.from({ length: 40 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    const a = group.join('a');
    group.join('b');
    await group.scheduler.until(() => group.receivedData().length >= 40, 'all records', 20_000);
    await group.stop(a);
    expect([...group.owners().values()].filter((o) => o === 'a')).to.deep.equal([]);
    // Handed over during the stop: each lease released once b was ready, taken at b's next capture poll.
    const handoff = await group.scheduler.until(() => group.counts().get('b') === 4, 'b owns all', 20_000);
    expect(handoff).to.be.at.most(1.25 * FAST.throttleDelayMs);
    group.stream.putRecords(Array.from({ length: 40 }, (_, i) => ({ partitionKey: `k${i}`, data: `s${i}` })));
    await group.scheduler.until(() => group.receivedData().length >= 80, 'second batch', 20_000);
    expect(group.receivedData()).to.have.length(80);
    await group.stopAll();
  });

  it('a paused client (zombie) loses its shards after the TTL and, resumed, cannot move their checkpoints', async () => {
    const group = new MemoryGroup(2);
    const a = group.join('a');
    const b = group.join('b');
    await group.scheduler.until(() => group.counts().get('a') === 1 && group.counts().get('b') === 1, 'one shard each', 20_000);
    const aShard = [...group.owners()].find(([, owner]) => owner === 'a')?.[0] ?? '';
    a.pause();
    await group.scheduler.until(() => group.owners().get(aShard) === 'b', 'b takes a\'s shard', 4 * FAST.leaseTtlMs);
    group.stream.putRecords([{ partitionKey: 'x', data: 'after takeover' }], { shardId: aShard });
    await group.scheduler.until(() => b.received.some((r) => r.shardId === aShard), 'b reads it', 20_000);
    const rowBefore = group.checkpoints.row(aShard);
    a.resume();
    await group.scheduler.until(() => a.events.some((e) => e.type === 'lease-lost' && e.shardId === aShard), 'a learns it lost the lease', 20_000);
    await group.scheduler.advanceBy(2000);
    const row = group.checkpoints.row(aShard);
    expect(row?.ownerId).to.equal('b');
    expect(row?.leaseCounter).to.equal(rowBefore?.leaseCounter);
    await group.stopAll();
  });
});

describe('graceful end of a lease with records never acked (virtual time)', () => {
  it('stop() waits at most the drain bound, commits what was acked and releases, without a timeout error', async () => {
    const group = new MemoryGroup(1, { shutdownTimeoutMs: 4000 });
    group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    // Acks r0..r5; r6 is never acked, so the checkpoint must stop at r5 whatever comes after.
    const member = group.join('a', { ack: (r) => Number(new TextDecoder().decode(r.data).slice(1)) !== 6 });
    await group.scheduler.until(() => member.received.length === 10, 'all received', 20_000);
    const started = group.scheduler.now();
    let settled: unknown = 'pending';
    void member.kinsumer.stop().then(() => { settled = 'resolved'; }, (e: unknown) => { settled = e; });
    await group.scheduler.until(() => settled !== 'pending', 'stop to settle', 10_000);
    expect(settled).to.equal('resolved');
    // 0.75 × min(shutdownTimeoutMs 4000, leaseTtlMs 3000) = 2250 ms of waiting for the missing ack.
    expect(group.scheduler.now() - started).to.be.within(2250, 4000);
    const row = group.checkpoints.rows()[0];
    expect(row?.ownerId).to.equal(undefined);
    const fifth = member.received[5];
    expect(row?.checkpoint).to.deep.equal({ type: 'position', position: { sequenceNumber: fifth?.sequenceNumber } });
  });
});

describe('what a member\'s clients row says it holds (virtual time)', () => {
  it('a capture or a release shows in the member\'s row within a capture poll, not at its next check: the others\' next check sees the holdings as they are', async () => {
    // A long shard check, so a capture poll and a check are far apart.
    const timings = { shardCheckFrequencyMs: 2000, leaseTtlMs: 6000, leaderActionFrequencyMs: 2000 };
    const group = new MemoryGroup(4, timings);
    group.join('a');
    await group.scheduler.until(() => group.counts().get('a') === 4, 'a holds all 4', 20_000);
    // Half a check after a's: b's first check assigns it two of a's shards; a gives them up at its next check, b then captures them.
    await group.scheduler.advanceBy(timings.shardCheckFrequencyMs / 2);
    group.join('b');
    await group.scheduler.until(() => group.counts().get('b') === 2, 'b captures two shards', timings.shardCheckFrequencyMs);
    const captured = group.scheduler.now();
    await group.scheduler.advanceBy(2 * FAST.throttleDelayMs);
    // Both are mid-way between their checks: only a write outside the checks can show the change.
    expect(group.scheduler.now() - captured).to.be.below(timings.shardCheckFrequencyMs / 2);
    expect(group.coordination.client('a')?.shardIds, 'a\'s row').to.deep.equal(held(group, 'a'));
    expect(group.coordination.client('b')?.shardIds, 'b\'s row').to.deep.equal(held(group, 'b'));
    await group.stopAll();
  });
});

function held(group: MemoryGroup, id: string): string[] {
  return [...group.owners()].filter(([, owner]) => owner === id).map(([shardId]) => shardId).sort();
}
