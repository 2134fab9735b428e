import { expect } from 'chai';
import type { KinsumerSettings } from '../../../src/index.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';

const lost = (group: MemoryGroup) => group.members.flatMap((m) => m.events.filter((e) => e.type === 'lease-lost').map((e) => `${m.id}:${e.type === 'lease-lost' ? e.shardId : ''}`));

// R10 (review-3): a STEP of one host's wall clock (NTP, a manual `date`, a hypervisor catching up),
// not a constant skew (clock-skew.test.ts). The member's scheduler now() is its wall clock, as
// asyncScheduler's is Date.now(); its timers and its monotonic clock (clock.elapsedNow) keep the
// shared virtual time, as setTimeout and performance.now() do. Every "for how long" must be timed
// on the monotonic one.
describe('a wall-clock step on one member (virtual time, in-memory stores)', function () {
  this.timeout(60_000);

  async function oneShardEach(stepMs: () => number, peer: Partial<KinsumerSettings> = {}) {
    const group = new MemoryGroup(2);
    const a = group.join('a', { skewMs: stepMs });
    const b = group.join('b', { extra: peer });
    await group.scheduler.until(() => group.counts().get('a') === 1 && group.counts().get('b') === 1, 'one shard each', 10 * FAST.leaseTtlMs);
    const shardOf = (id: string) => [...group.owners()].find(([, owner]) => owner === id)?.[0] ?? '';
    return { group, a, b, aShard: shardOf('a'), bShard: shardOf('b') };
  }

  it('a member whose wall clock steps back 60 s keeps reading at its pace (poll delays are monotonic)', async () => {
    const step = { ms: 0 };
    const { group, a, b, aShard, bShard } = await oneShardEach(() => step.ms);
    step.ms = -60_000;
    // 10 s of traffic, a record into each shard every 100 ms, then 1 s to read the last ones.
    for (let i = 0; i < 100; i += 1) {
      group.stream.putRecords([{ partitionKey: 'k', data: `a${i}` }], { shardId: aShard });
      group.stream.putRecords([{ partitionKey: 'k', data: `b${i}` }], { shardId: bShard });
      await group.scheduler.advanceBy(100);
    }
    await group.scheduler.advanceBy(1000);
    const read = (member: typeof a, shardId: string) => member.received.filter((r) => r.shardId === shardId).length;
    expect([read(a, aShard), read(b, bShard)], 'records read in 11 s: the stepped member, its peer').to.deep.equal([100, 100]);
    await group.stopAll();
  });

  it('a member whose wall clock keeps jumping 20 s forward takes no lease from its live peer', async () => {
    const step = { ms: 0 };
    // The peer heartbeats every 1.5 s, the stepped member reads the clients every 0.5 s: it sees one
    // version of the peer's row several times, with a jump in between.
    const { group } = await oneShardEach(() => step.ms, { shardCheckFrequencyMs: 1500, leaderActionFrequencyMs: 1500 });
    for (let elapsedMs = 0; elapsedMs < 10 * FAST.leaseTtlMs; elapsedMs += 100) {
      step.ms += 20_000;
      await group.scheduler.advanceBy(100);
    }
    expect(lost(group), 'leases taken from a live owner').to.deep.equal([]);
    expect([...group.counts()].sort(), 'still one shard each').to.deep.equal([['a', 1], ['b', 1]]);
    await group.stopAll();
  });
});
