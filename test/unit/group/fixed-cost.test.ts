// The fixed cost of a stable group (issue 31 item 5): what an idle shard and a client cost in
// DynamoDB calls, counted at the in-memory stores over ten minutes of virtual time at the default
// timings, after the group settled. Goals: an idle shard writes at most one keep-alive a minute
// (its liveness comes from its owner's client row); a client's own calls are at most half of the
// ~300 a minute they were (perf-4: 240 of them group-epoch reads).
import { expect } from 'chai';
import { DEFAULTS } from '../../../src/index.js';
import { MemoryGroup } from '../../support/memory-group.js';
import { DEFAULT_TIMINGS } from '../../support/default-timings.js';

describe('DynamoDB calls of a stable, idle group (virtual time, default timings)', function () {
  this.timeout(120_000);

  it('an idle shard: at most one lease-row write a minute; a client: at most 150 calls a minute of its own', async () => {
    const group = new MemoryGroup(8, DEFAULT_TIMINGS);
    const members = ['a', 'b'].map((id) => group.join(id));
    await group.scheduler.until(() => group.counts().get('a') === 4 && group.counts().get('b') === 4, 'balance 4/4', 120_000);
    await group.scheduler.advanceBy(2 * DEFAULTS.leaderActionFrequencyMs);
    const sum = (calls: Partial<Record<string, number>>) => Object.values(calls).reduce((s: number, n) => s + (n ?? 0), 0);
    // A shard's calls: its lease row's writes and reads (captures, commits, renewals). A client's
    // own: the clients and metadata tables, and the lease rows its checks read (readMany).
    const count = () => members.map((m) => ({
      shards: sum(m.store.calls) - m.store.calls.readMany,
      own: sum(m.membership.calls) + sum(m.metadata.calls) + m.store.calls.readMany,
    }));
    const before = count();
    const minutes = 10;
    await group.scheduler.advanceBy(minutes * 60_000);
    const after = count();
    const perShard = after.reduce((s, c, i) => s + c.shards - (before[i]?.shards ?? 0), 0) / 8 / minutes;
    expect(perShard, 'checkpoints-table calls per idle shard per minute').to.be.at.most(1);
    for (const [i, member] of members.entries()) {
      const own = ((after[i]?.own ?? 0) - (before[i]?.own ?? 0)) / minutes;
      expect(own, `${member.id}: its own calls per minute`).to.be.at.most(150);
    }
    await group.stopAll();
  });
});
