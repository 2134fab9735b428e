import { expect } from 'chai';
import { FAST, MemoryGroup } from '../../support/memory-group.js';

// Regression found by the chaos run: a worker frozen (SIGSTOP) beyond its lease TTL, once woken
// up, finished the GetRecords it had in flight and emitted a whole backlog of a shard another
// worker had taken meanwhile — every one of them a duplicate, far beyond one commit interval's
// worth. A lease no write has confirmed for two renewal intervals now emits nothing until a write
// confirms it (or finds it lost).
describe('a zombie woken up after losing its lease (virtual time)', function () {
  this.timeout(30_000);

  it('emits no record of the lost shard, not even the backlog its in-flight read returns', async () => {
    const group = new MemoryGroup(2);
    const a = group.join('a');
    const b = group.join('b');
    await group.scheduler.until(() => group.counts().get('a') === 1 && group.counts().get('b') === 1, 'one shard each', 20_000);
    const aShard = [...group.owners()].find(([, owner]) => owner === 'a')?.[0] ?? '';
    group.stream.putRecords([{ partitionKey: 'x', data: 'before' }], { shardId: aShard });
    await group.scheduler.until(() => a.received.some((r) => r.shardId === aShard), 'a reads its shard', 20_000);
    // Frozen: every call a makes hangs until resume, its timers keep running (virtual time).
    a.pause();
    const backlog = Array.from({ length: 50 }, (_, i) => ({ partitionKey: 'x', data: `backlog-${i}` }));
    group.stream.putRecords(backlog, { shardId: aShard });
    await group.scheduler.until(() => group.owners().get(aShard) === 'b', 'b takes a\'s shard', 4 * FAST.leaseTtlMs);
    await group.scheduler.until(() => b.received.filter((r) => r.shardId === aShard).length >= 50, 'b reads the backlog', 20_000);
    const receivedBefore = a.received.length;
    a.resume();
    await group.scheduler.until(() => a.events.some((e) => e.type === 'lease-lost' && e.shardId === aShard), 'a learns it lost the lease', 20_000);
    await group.scheduler.advanceBy(2000);
    expect(a.received.slice(receivedBefore).filter((r) => r.shardId === aShard).map((r) => new TextDecoder().decode(r.data))).to.deep.equal([]);
    await group.stopAll();
  });

  it('a lease whose renewals were merely slow still delivers once a write confirms it', async () => {
    const group = new MemoryGroup(1);
    const a = group.join('a');
    await group.scheduler.until(() => group.counts().get('a') === 1, 'a holds the shard', 20_000);
    // Frozen for less than the TTL, but for more than two renewal intervals: nobody else takes it.
    a.pause();
    group.stream.putRecords([{ partitionKey: 'x', data: 'late' }]);
    await group.scheduler.advanceBy(0.8 * FAST.leaseTtlMs);
    a.resume();
    await group.scheduler.until(() => a.received.some((r) => new TextDecoder().decode(r.data) === 'late'), 'a delivers the record', 20_000);
    expect(a.events.filter((e) => e.type === 'lease-lost')).to.deep.equal([]);
    await a.kinsumer.stop();
  });
});
