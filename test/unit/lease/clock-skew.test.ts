import { expect } from 'chai';
import { FAST, MemoryGroup } from '../../support/memory-group.js';

function balanced(group: MemoryGroup, counts: number[]): boolean {
  return JSON.stringify([...group.counts().values()].sort()) === JSON.stringify(counts);
}

const lost = (group: MemoryGroup) => group.members.flatMap((m) => m.events.filter((e) => e.type === 'lease-lost').map((e) => `${m.id}:${e.type === 'lease-lost' ? e.shardId : ''}`));

// Expiry compares no clocks across hosts: a member whose wall clock is off (its scheduler's now()
// shifted, its timers on the shared virtual time) writes skewed LastUpdate values, and nobody may
// read them as a time.
describe('clock skew between clients (virtual time, in-memory stores)', function () {
  this.timeout(60_000);

  for (const [label, skewMs] of [['20 s', 20_000], ['5 minutes', 300_000]] as const) {
    it(`a client whose clock runs ${label} ahead takes no lease from a live owner, and the group balances`, async () => {
      const group = new MemoryGroup(4);
      group.join('a');
      await group.scheduler.until(() => group.counts().get('a') === 4, 'a holds all 4 shards', 20_000);
      group.join('b', { skewMs });
      await group.scheduler.until(() => balanced(group, [2, 2]), 'balance 2/2', 10 * FAST.leaseTtlMs);
      await group.scheduler.advanceBy(10 * FAST.leaseTtlMs);
      expect(lost(group), 'leases taken from a live owner').to.deep.equal([]);
      expect(balanced(group, [2, 2]), 'still 2/2 after 10 lease TTLs').to.equal(true);
      await group.stopAll();
    });

    it(`a client whose clock runs ${label} behind is not taken for dead and gets its share`, async () => {
      const group = new MemoryGroup(4);
      group.join('a');
      await group.scheduler.until(() => group.counts().get('a') === 4, 'a holds all 4 shards', 20_000);
      group.join('b', { skewMs: -skewMs });
      await group.scheduler.until(() => balanced(group, [2, 2]), 'balance 2/2', 10 * FAST.leaseTtlMs);
      await group.scheduler.advanceBy(10 * FAST.leaseTtlMs);
      expect(lost(group), 'leases taken from a live owner').to.deep.equal([]);
      expect(balanced(group, [2, 2]), 'still 2/2 after 10 lease TTLs').to.equal(true);
      await group.stopAll();
    });
  }

  it('a client 5 minutes ahead still takes over the shards of a crashed client (after watching them for a TTL)', async () => {
    const group = new MemoryGroup(4);
    const a = group.join('a');
    group.join('b', { skewMs: 300_000 });
    await group.scheduler.until(() => balanced(group, [2, 2]), 'balance 2/2', 10 * FAST.leaseTtlMs);
    a.pause();
    await group.scheduler.until(() => group.counts().get('b') === 4, 'b holds all 4 shards', 10 * FAST.leaseTtlMs);
    a.resume();
    await group.stopAll();
  });
});
