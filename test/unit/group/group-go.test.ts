import { expect } from 'chai';
import { type Subscription, interval } from 'rxjs';
import { nanosFromMillis } from '../../../src/dynamodb/codec.js';
import type { KinsumerEvent, KinsumerRecord, Logger } from '../../../src/types.js';
import { FAST, MemoryGroup, type Member } from '../../support/memory-group.js';

const shard = (n: number) => `shardId-${String(n).padStart(12, '0')}`;

/**
 * Plays a Go kinsumer client in the in-memory tables: its clients row has no `Library` marker (and
 * no `Shards`) and is rewritten every shard check, as Go's full-PutItem heartbeat does; the lease
 * rows of `holds` are owned by it and renewed at the same pace, as its commits do while records flow.
 */
class GoClient {
  #beat: Subscription;

  constructor(private readonly group: MemoryGroup, readonly id: string, private readonly holds: readonly string[] = []) {
    this.#beat = interval(FAST.shardCheckFrequencyMs, group.scheduler).subscribe(() => this.heartbeat());
    this.heartbeat();
  }

  private heartbeat(): void {
    const nowNs = nanosFromMillis(this.group.scheduler.now());
    this.group.coordination.putClient({ id: this.id, name: this.id, lastUpdateNs: nowNs, shardIds: undefined });
    for (const shardId of this.holds) {
      this.group.checkpoints.put({ shardId, checkpoint: undefined, ownerId: this.id, ownerName: this.id, lastUpdateNs: nowNs, finished: false, leaseCounter: 0, lastOwnerId: undefined });
    }
  }

  /** Go's graceful stop: every lease released (owner removed), then the clients row deleted. */
  leave(): void {
    this.#beat.unsubscribe();
    const nowNs = nanosFromMillis(this.group.scheduler.now());
    for (const shardId of this.holds) {
      const row = this.group.checkpoints.row(shardId);
      if (row !== undefined) this.group.checkpoints.put({ ...row, ownerId: undefined, ownerName: undefined, lastUpdateNs: nowNs });
    }
    this.group.coordination.deleteClient(this.id);
  }

  /** The process dies: nothing is written any more. */
  crash(): void {
    this.#beat.unsubscribe();
  }
}

function held(group: MemoryGroup, id: string): string[] {
  return [...group.owners()].filter(([, owner]) => owner === id).map(([shardId]) => shardId).sort();
}

function rebalances(member: Member): Array<Extract<KinsumerEvent, { type: 'rebalance' }>> {
  return member.events.filter((e): e is Extract<KinsumerEvent, { type: 'rebalance' }> => e.type === 'rebalance');
}

function recordingLogger(lines: string[]): Logger {
  const log = (_obj: object, msg?: string) => { if (msg !== undefined) lines.push(msg); };
  return { debug: () => undefined, info: log, warn: log, error: log };
}

// The whole group on virtual time with a played Go client in the tables: the members must compute
// the Go kinsumer's round robin while it is live (it computes nothing else), and return to the
// sticky assignment when it leaves.
describe('group coordination with a Go kinsumer client in the group (virtual time)', function () {
  this.timeout(30_000);

  it('while a Go client is live, members read exactly their round-robin share (position mod sorted live clients) and never take the Go client\'s; rebalance says strategy go', async () => {
    const group = new MemoryGroup(6);
    // Sorted live clients a, b (Go), c: a gets positions 0 and 3, b 1 and 4, c 2 and 5.
    const go = new GoClient(group, 'b', [shard(1), shard(4)]);
    const a = group.join('a');
    const c = group.join('c');
    await group.scheduler.until(() => held(group, 'a').join() === [shard(0), shard(3)].join() && held(group, 'c').join() === [shard(2), shard(5)].join(),
      'a holds 0 and 3, c holds 2 and 5', 20_000);
    await group.scheduler.advanceBy(3 * FAST.leaseTtlMs);
    expect(held(group, 'a')).to.deep.equal([shard(0), shard(3)]);
    expect(held(group, 'b'), 'the Go client keeps its share').to.deep.equal([shard(1), shard(4)]);
    expect(held(group, 'c')).to.deep.equal([shard(2), shard(5)]);
    expect(rebalances(a).at(-1)).to.deep.include({ strategy: 'go', assigned: [shard(0), shard(3)] });
    expect(rebalances(c).at(-1)).to.deep.include({ strategy: 'go', assigned: [shard(2), shard(5)] });
    expect([a, c].flatMap((m) => m.events).filter((e) => e.type === 'lease-lost')).to.deep.equal([]);
    go.leave();
    await group.stopAll();
  });

  it('when the last Go client leaves, the members return to the sticky assignment (3/3, each keeps its shards), rebalance says sticky and the switch is logged', async () => {
    const group = new MemoryGroup(6);
    const go = new GoClient(group, 'b', [shard(1), shard(4)]);
    const logs = { a: [] as string[], c: [] as string[] };
    const a = group.join('a', { extra: { logger: recordingLogger(logs.a) } });
    const c = group.join('c', { extra: { logger: recordingLogger(logs.c) } });
    await group.scheduler.until(() => held(group, 'a').length === 2 && held(group, 'c').length === 2, 'the Go shares', 20_000);
    const before = { a: held(group, 'a'), c: held(group, 'c') };
    expect(a.kinsumer.status().assignment, 'status() while the Go client is live').to.equal('go');
    go.leave();
    await group.scheduler.until(() => held(group, 'a').length === 3 && held(group, 'c').length === 3, 'balance 3/3 after the Go client left', 20_000);
    expect(held(group, 'a')).to.include.members(before.a);
    expect(held(group, 'c')).to.include.members(before.c);
    for (const member of [a, c]) {
      expect(rebalances(member).map((e) => e.strategy), `${member.id}'s rebalances`).to.include('go');
      expect(rebalances(member).at(-1)?.strategy).to.equal('sticky');
      expect(member.kinsumer.status().assignment, `${member.id}'s status()`).to.equal('sticky');
    }
    for (const lines of [logs.a, logs.c]) {
      expect(lines.filter((l) => l.includes('Go kinsumer')), 'the switches, logged').to.deep.equal([
        'kinsumer: Go kinsumer clients are live in the group: assigning shards as the Go kinsumer does (shard list position modulo the sorted live clients)',
        'kinsumer: no Go kinsumer client is live any more: back to the sticky, balanced assignment',
      ]);
    }
    await group.stopAll();
  });

  it('a crashed Go client\'s shards are taken within leaseTtlMs + two shard checks + a capture poll (its leases, known from the round robin, watched from its first missed heartbeat)', async () => {
    const group = new MemoryGroup(6);
    const go = new GoClient(group, 'b', [shard(1), shard(4)]);
    group.join('a');
    group.join('c');
    await group.scheduler.until(() => held(group, 'a').length === 2 && held(group, 'c').length === 2, 'the Go shares', 20_000);
    go.crash();
    const tookMs = await group.scheduler.until(() => held(group, 'a').length + held(group, 'c').length === 6, 'a and c hold all 6', 20_000, 10);
    // Its row does not list what it holds: without the round robin's answer, its leases would be
    // watched only once its row expired, a second TTL later (about 2 × leaseTtlMs).
    expect(tookMs).to.be.at.most(FAST.leaseTtlMs + 2 * FAST.shardCheckFrequencyMs + 1.75 * FAST.throttleDelayMs + 20);
    expect(tookMs).to.be.at.least(FAST.leaseTtlMs - FAST.shardCheckFrequencyMs);
    await group.stopAll();
  });

  it('parents before children also under the Go rule: a member given a child by the round robin captures it only once the parent is finished', async () => {
    const group = new MemoryGroup(2);
    group.stream.putRecords([{ partitionKey: 'k', data: 'last of the parent' }], { shardId: shard(0) });
    let withheld: KinsumerRecord | undefined;
    const a = group.join('a', { ack: (record) => { withheld = record; return false; } });
    const go = new GoClient(group, 'b', [shard(1)]);
    await group.scheduler.until(() => withheld !== undefined, 'a reads the parent', 20_000);
    // Shard list after the split: 0 (closed), 1, 2, 3 (children of 0). Sorted clients a, b: a gets 0 and 2.
    group.stream.split(shard(0));
    await group.scheduler.until(() => rebalances(a).some((e) => e.strategy === 'go' && group.coordination.shardCache()?.shardIds.length === 4),
      'the children in the cached list', 20_000);
    await group.scheduler.advanceBy(4 * FAST.shardCheckFrequencyMs);
    expect(group.owners().get(shard(2)), 'the child, while its parent is not finished').to.equal(undefined);
    withheld?.ack();
    await group.scheduler.until(() => group.owners().get(shard(2)) === 'a', 'a takes the child once the parent is finished', 20_000);
    const order = a.events.filter((e) => (e.type === 'shard-finished' && e.shardId === shard(0)) || (e.type === 'lease-acquired' && e.shardId === shard(2))).map((e) => e.type);
    expect(order).to.deep.equal(['shard-finished', 'lease-acquired']);
    go.leave();
    await group.stopAll();
  });
});
