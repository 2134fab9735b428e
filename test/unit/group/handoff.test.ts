import { expect } from 'chai';
import { type Subscription, delay, timer } from 'rxjs';
import type { KinsumerEvent } from '../../../src/types.js';
import { MemoryGroup, type Member } from '../../support/memory-group.js';
import { DEFAULT_TIMINGS, heldBy } from '../../support/default-timings.js';
import { epochPollMs } from '../../../src/group/coordinator.js';
import { override } from '../../support/port-wrappers.js';

/** A member's events with the virtual time each was emitted at. */
function timedEvents(group: MemoryGroup, member: Member): Array<{ readonly atMs: number; readonly event: KinsumerEvent }> {
  const log: Array<{ atMs: number; event: KinsumerEvent }> = [];
  member.kinsumer.events$.subscribe((event) => log.push({ atMs: group.scheduler.now(), event }));
  return log;
}

/** A record into every shard every `everyMs` of virtual time, so a new owner always has one to deliver at once. */
function produce(group: MemoryGroup, everyMs: number): Subscription {
  let n = 0;
  return timer(0, everyMs, group.scheduler).subscribe(() => {
    for (const shardId of group.stream.openShardIds()) {
      group.stream.putRecords([{ partitionKey: `k${n}`, data: `r${n}` }], { shardId });
      n += 1;
    }
  });
}

/** Per shard, when `member` received a record of it from now on: the last one (`which: 'last'`) or the first. */
function receivedTimes(group: MemoryGroup, member: Member, which: 'first' | 'last'): Map<string, number> {
  const at = new Map<string, number>();
  member.kinsumer.records$.subscribe({
    next: (record) => { if (which === 'last' || !at.has(record.shardId)) at.set(record.shardId, group.scheduler.now()); },
    error: () => undefined,
  });
  return at;
}

// Hand-off and failover at the DEFAULT timings, on virtual time with the real client code over the
// in-memory stores (no latency): what is left is the coordination's own pacing, not the network.
describe('graceful hand-off at default timings (virtual time)', function () {
  this.timeout(60_000);

  // The stop falls at several phases of the successor's shard-check cycle. The stop hands each
  // lease over once the successor wants it (it learns of the stop at its next poll of the group
  // epoch): the shard goes unread only from the release to the successor's next capture poll.
  for (const phaseMs of [100, 1700, 3300, 4900]) {
    it(`stop(): each shard unread under half a second (release → the successor's first record), the stop within an epoch poll and a check (stop ${phaseMs} ms into the successor's check cycle), captured only after the release, each shard moved once`, async () => {
      const group = new MemoryGroup(4, DEFAULT_TIMINGS);
      const producing = produce(group, 20);
      const a = group.join('a');
      await group.scheduler.advanceBy(1234);
      const b = group.join('b');
      const bJoinedAt = group.scheduler.now();
      const aEvents = timedEvents(group, a);
      const bEvents = timedEvents(group, b);
      await group.scheduler.until(() => heldBy(group, 'a').length === 2 && heldBy(group, 'b').length === 2, 'balance 2/2', 60_000);
      // Settle for a few checks (the balance must be stable before the stop), then reach the phase.
      await group.scheduler.advanceBy(3 * DEFAULT_TIMINGS.shardCheckFrequencyMs);
      const cycle = DEFAULT_TIMINGS.shardCheckFrequencyMs;
      const intoCycle = (group.scheduler.now() - bJoinedAt) % cycle;
      await group.scheduler.advanceBy((phaseMs - intoCycle + cycle) % cycle);
      const moving = heldBy(group, 'a');
      const counters = new Map(group.checkpoints.rows().map((row) => [row.shardId, row.leaseCounter]));
      const aAt = receivedTimes(group, a, 'last');
      const bAt = receivedTimes(group, b, 'first');
      const stoppedAt = group.scheduler.now();
      let stopped = false;
      void a.kinsumer.stop().then(() => { stopped = true; });
      await group.scheduler.until(() => stopped && moving.every((shardId) => bAt.has(shardId)), 'the stop, and b\'s first record of each shard a held', 30_000, 10);
      expect(group.scheduler.now() - stoppedAt, 'stop() (ms of virtual time)').to.be.at.most(epochPollMs(DEFAULT_TIMINGS) + 2 * DEFAULT_TIMINGS.throttleDelayMs + 250);
      for (const shardId of moving) {
        const unreadMs = (bAt.get(shardId) ?? Infinity) - (aAt.get(shardId) ?? -Infinity);
        expect(unreadMs, `${shardId} unread between a's last record and b's first (ms)`).to.be.below(500);
        // The release is the signal: b captures each shard only after a released it.
        const released = aEvents.find((e) => e.event.type === 'lease-released' && e.event.shardId === shardId);
        const acquired = bEvents.find((e) => e.event.type === 'lease-acquired' && e.event.shardId === shardId && e.atMs >= stoppedAt);
        expect(released, `a released ${shardId}`).to.not.equal(undefined);
        expect(acquired, `b captured ${shardId}`).to.not.equal(undefined);
        expect(acquired?.atMs).to.be.at.least(released?.atMs ?? Number.POSITIVE_INFINITY);
      }
      // No flapping: three checks later every shard moved at most once (a's to b, once; b's stayed).
      await group.scheduler.advanceBy(3 * DEFAULT_TIMINGS.shardCheckFrequencyMs);
      for (const row of group.checkpoints.rows()) {
        expect(row.ownerId, row.shardId).to.equal('b');
        expect(row.leaseCounter, row.shardId).to.equal((counters.get(row.shardId) ?? 0) + (moving.includes(row.shardId) ? 1 : 0));
      }
      expect(b.events.filter((e) => e.type === 'lease-lost')).to.deep.equal([]);
      producing.unsubscribe();
      await group.stopAll();
    });
  }
});

describe('graceful hand-off of a parent shard at default timings (virtual time)', function () {
  this.timeout(60_000);

  it('the successor takes the unfinished parent first and its children only after the parent finished (nobody reads a child early)', async () => {
    const group = new MemoryGroup(2, DEFAULT_TIMINGS);
    const producing = produce(group, 20);
    const parent = 'shardId-000000000000';
    // a never acks the parent's records, so it cannot finish the parent: the successor must.
    const a = group.join('a', { ack: (record) => record.shardId !== parent, extra: { maxInFlightRecords: 5, shutdownTimeoutMs: 1000 } });
    const aEvents = timedEvents(group, a);
    await group.scheduler.until(() => heldBy(group, 'a').length === 2, 'a holds both shards', 30_000);
    const b = group.join('b');
    const bEvents = timedEvents(group, b);
    await group.scheduler.until(() => heldBy(group, 'a').length === 1 && heldBy(group, 'b').length === 1, 'balance 1/1', 60_000);
    if (group.owners().get(parent) !== 'a') throw new Error(`the test expects a to hold ${parent}`);
    const children = group.stream.split(parent);
    // The leader lists the shards again: the cache knows the children (not eligible yet).
    await group.scheduler.advanceBy(2 * DEFAULT_TIMINGS.leaderActionFrequencyMs);
    expect(group.owners().has(children[0]), 'no child captured while its parent is unfinished').to.equal(false);
    const stopping = a.kinsumer.stop();
    await group.scheduler.until(() => children.every((child) => b.received.some((r) => r.shardId === child)), 'b reads both children', 60_000);
    await stopping;
    const finished = bEvents.find((e) => e.event.type === 'shard-finished' && e.event.shardId === parent);
    expect(finished, 'b finished the parent').to.not.equal(undefined);
    for (const child of children) {
      const captures = [...aEvents, ...bEvents].filter((e) => e.event.type === 'lease-acquired' && e.event.shardId === child);
      expect(captures.length, `${child} captured once`).to.equal(1);
      expect(captures[0]?.atMs, `${child} captured after ${parent} finished`).to.be.at.least(finished?.atMs ?? Number.POSITIVE_INFINITY);
    }
    const order = b.received.map((r) => r.shardId);
    const lastParent = order.lastIndexOf(parent);
    for (const child of children) expect(order.indexOf(child), `${child} read after the parent's last record`).to.be.above(lastParent);
    producing.unsubscribe();
    await b.kinsumer.stop();
  });
});

describe('a departure announced while a check is running (virtual time)', function () {
  this.timeout(60_000);

  it('brings another check right after the running one, which read the clients table before the departure', async () => {
    const group = new MemoryGroup(2, DEFAULT_TIMINGS);
    const producing = produce(group, 20);
    const scanDelayMs = 1500;
    const scans: number[] = [];
    group.join('a');
    await group.scheduler.until(() => heldBy(group, 'a').length === 2, 'a holds both shards', 30_000);
    // b's clients-table scans read the rows when sent and answer 1.5 s later: a slow check.
    const b = group.join('b', {
      wrap: (ports) => ({
        ...ports,
        membership: override(ports.membership, {
          liveClients: () => {
            scans.push(group.scheduler.now());
            return ports.membership.liveClients().pipe(delay(scanDelayMs, group.scheduler));
          },
        }),
      }),
    });
    await group.scheduler.until(() => heldBy(group, 'a').length === 1 && heldBy(group, 'b').length === 1, 'balance 1/1', 60_000);
    await group.scheduler.advanceBy(2 * DEFAULT_TIMINGS.shardCheckFrequencyMs);
    const scansBefore = scans.length;
    await group.scheduler.until(() => scans.length > scansBefore, 'b\'s next check', 2 * DEFAULT_TIMINGS.shardCheckFrequencyMs, 10);
    const scanAt = scans.at(-1) ?? 0;
    const moving = heldBy(group, 'a');
    const receivedBefore = b.received.length;
    const a = group.members.find((m) => m.id === 'a');
    let stopped = false;
    void a?.kinsumer.stop().then(() => { stopped = true; });
    const tookMs = await group.scheduler.until(() => moving.every((shardId) => b.received.slice(receivedBefore).some((r) => r.shardId === shardId)), 'b reads a\'s shard', 30_000, 10);
    await group.scheduler.until(() => stopped, 'a stops', 10_000, 10);
    // The running check answers with a still in the group; another check follows it at once.
    // Waiting for the next periodic check instead would take a shard check more.
    expect(group.scheduler.now() - tookMs - scanAt, 'the stop fell into the running check').to.be.below(scanDelayMs);
    // The follow-up check, then the hand-over: b's capture (half a poll), its wants published, a's
    // next hand-over check (a poll), the release, b's next capture poll (1.25 polls).
    expect(tookMs).to.be.at.most(2 * scanDelayMs + 3.25 * DEFAULT_TIMINGS.throttleDelayMs);
    producing.unsubscribe();
    await group.stopAll();
  });
});

describe('a check due while another one runs (virtual time)', function () {
  this.timeout(60_000);

  it('is run right after it: a crashed member\'s row expiring during a periodic check is not left to the next periodic check', async () => {
    // b's checks fall 100 ms before a's heartbeats; the check that first sees a's last heartbeat
    // starts with a slow heartbeat (300 ms), so a's row expires for b 300 ms after a periodic
    // check, which is still running then (b's lease-row reads take 400 ms).
    const slowHeartbeatMs = 300;
    const slowReadMs = 400;
    let slowHeartbeats = 0;
    const group = new MemoryGroup(2, DEFAULT_TIMINGS);
    const producing = produce(group, 20);
    const aJoinedAt = group.scheduler.now();
    const a = group.join('a');
    await group.scheduler.advanceBy(DEFAULT_TIMINGS.shardCheckFrequencyMs - 100);
    const b = group.join('b', {
      wrap: (ports) => ({
        ...ports,
        membership: override(ports.membership, {
          heartbeat: (held) => {
            const answer = ports.membership.heartbeat(held);
            if (slowHeartbeats === 0) return answer;
            slowHeartbeats -= 1;
            return answer.pipe(delay(slowHeartbeatMs, group.scheduler));
          },
        }),
        store: override(ports.store, { readMany: (ids) => ports.store.readMany(ids).pipe(delay(slowReadMs, group.scheduler)) }),
      }),
    });
    await group.scheduler.until(() => heldBy(group, 'a').length === 1 && heldBy(group, 'b').length === 1, 'balance 1/1', 60_000);
    await group.scheduler.advanceBy(2 * DEFAULT_TIMINGS.shardCheckFrequencyMs);
    const cycle = DEFAULT_TIMINGS.shardCheckFrequencyMs;
    await group.scheduler.advanceBy((10 - ((group.scheduler.now() - aJoinedAt) % cycle) + cycle) % cycle);
    const moving = heldBy(group, 'a');
    const receivedBefore = b.received.length;
    a.pause();
    slowHeartbeats = 1;
    const tookMs = await group.scheduler.until(() => moving.every((shardId) => b.received.slice(receivedBefore).some((r) => r.shardId === shardId)), 'b reads a\'s shard', 60_000, 10);
    // The bound, plus what the slow calls add; the next periodic check would add most of a check.
    const boundMs = DEFAULT_TIMINGS.leaseTtlMs + DEFAULT_TIMINGS.shardCheckFrequencyMs + 1.25 * DEFAULT_TIMINGS.throttleDelayMs;
    expect(tookMs).to.be.at.most(boundMs + slowHeartbeatMs + slowReadMs + 50);
    producing.unsubscribe();
    a.resume();
    await group.stopAll();
  });
});
