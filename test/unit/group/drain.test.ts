// Drain (design §9.3, issue 32 item 3): consumer.drain() hands every lease over gracefully — each
// released only once its successor is ready to take it, so no shard goes unread for long — takes
// none, shows the member as `draining`, and makes stop() immediate. Virtual time, in-memory stores.
import { expect } from 'chai';
import type { KinsumerEvent } from '../../../src/types.js';
import { MemoryGroup, type Member } from '../../support/memory-group.js';
import { DEFAULT_TIMINGS, heldBy, produceEvery } from '../../support/default-timings.js';

function timedEvents(group: MemoryGroup, member: Member): Array<{ readonly atMs: number; readonly event: KinsumerEvent }> {
  const log: Array<{ atMs: number; event: KinsumerEvent }> = [];
  member.kinsumer.events$.subscribe((event) => log.push({ atMs: group.scheduler.now(), event }));
  return log;
}

/** The last record `member` received of `shardId` before `beforeMs`, and the first after: the gap the hand-over left. */
function receivedAt(group: MemoryGroup, member: Member): Map<unknown, number> {
  const at = new Map<unknown, number>();
  member.kinsumer.records$.subscribe({ next: (record) => at.set(record, group.scheduler.now()), error: () => undefined });
  return at;
}

describe('drain() (virtual time, default timings)', function () {
  this.timeout(120_000);

  it('hands every lease over gracefully (each shard unread for under half a second), takes none, shows draining, and stop() is then immediate', async () => {
    const group = new MemoryGroup(4, DEFAULT_TIMINGS);
    const producing = produceEvery(group, 20);
    const a = group.join('a');
    await group.scheduler.advanceBy(1234);
    const b = group.join('b');
    await group.scheduler.until(() => heldBy(group, 'a').length === 2 && heldBy(group, 'b').length === 2, 'balance 2/2', 60_000);
    await group.scheduler.advanceBy(3 * DEFAULT_TIMINGS.shardCheckFrequencyMs + 321);
    const moving = heldBy(group, 'a');
    const aEvents = timedEvents(group, a);
    const bEvents = timedEvents(group, b);
    const aAt = receivedAt(group, a);
    const bAt = receivedAt(group, b);
    let drained = false;
    const drainedAt = group.scheduler.now();
    void a.kinsumer.drain().then(() => { drained = true; });
    await group.scheduler.advanceBy(1);
    expect(a.kinsumer.status().state).to.equal('draining');
    await group.scheduler.until(() => drained, 'a hands every lease over', 30_000, 10);
    await group.scheduler.until(() => heldBy(group, 'b').length === 4, 'b takes every shard', 2000, 10);
    for (const shardId of moving) {
      const released = aEvents.find((e) => e.event.type === 'lease-released' && e.event.shardId === shardId);
      const acquired = bEvents.find((e) => e.event.type === 'lease-acquired' && e.event.shardId === shardId);
      expect(released, `a released ${shardId}`).to.not.equal(undefined);
      expect(acquired?.atMs, `b captured ${shardId} after a released it`).to.be.at.least(released?.atMs ?? Infinity);
      // The shard went unread only between a's last record and b's first.
      const lastOnA = Math.max(...[...aAt].filter(([r]) => (r as { shardId: string }).shardId === shardId).map(([, t]) => t));
      const firstOnB = Math.min(...[...bAt].filter(([r]) => (r as { shardId: string }).shardId === shardId).map(([, t]) => t));
      expect(firstOnB - lastOnA, `${shardId} unread (ms)`).to.be.below(500);
    }
    expect(aEvents.filter((e) => e.event.type === 'lease-acquired'), 'a draining member takes nothing').to.deep.equal([]);
    expect(aEvents.filter((e) => e.event.type === 'lease-lost'), 'nothing was taken from it').to.deep.equal([]);
    expect(a.kinsumer.status().state).to.equal('draining');
    expect(a.kinsumer.status().shards).to.deep.equal([]);
    // Drained: stop() has nothing to hand over or release.
    const stopAt = group.scheduler.now();
    let stopped = false;
    void a.kinsumer.stop().then(() => { stopped = true; });
    await group.scheduler.until(() => stopped, 'a stops', 1000, 1);
    expect(group.scheduler.now() - stopAt, 'stop() after drain() (ms of virtual time)').to.be.at.most(50);
    expect(drainedAt).to.be.below(stopAt);
    producing.unsubscribe();
    await group.stopAll();
  });

  it('a member that drains takes no shard however the group changes, and keeps (and reads) what nobody else can take', async () => {
    const group = new MemoryGroup(2, DEFAULT_TIMINGS);
    const producing = produceEvery(group, 20);
    const a = group.join('a');
    await group.scheduler.until(() => heldBy(group, 'a').length === 2, 'a holds both', 30_000);
    void a.kinsumer.drain();
    await group.scheduler.advanceBy(3 * DEFAULT_TIMINGS.shardCheckFrequencyMs);
    // Alone in the group: nobody to hand over to, so it keeps reading.
    expect(heldBy(group, 'a').length).to.equal(2);
    const before = a.received.length;
    await group.scheduler.advanceBy(2000);
    expect(a.received.length).to.be.above(before);
    const b = group.join('b');
    await group.scheduler.until(() => heldBy(group, 'b').length === 2, 'b takes both', 30_000);
    b.pause();
    await group.scheduler.advanceBy(3 * DEFAULT_TIMINGS.leaseTtlMs);
    expect(a.events.filter((e) => e.type === 'lease-acquired').length, 'a took nothing back').to.equal(2);
    producing.unsubscribe();
    b.resume();
    await group.stopAll();
  });
});
