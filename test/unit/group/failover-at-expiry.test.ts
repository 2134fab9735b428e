// Failover at expiry (design §9.3, issue 32 item 2): from a crash to the first record of its shards
// on another member at most leaseTtlMs + 1 s — and never before the crashed member's last heartbeat
// is leaseTtlMs old (a frozen member is not taken for dead early). At the default timings, on
// virtual time, with the successor watching the member for a minute first (as members of a running
// fleet have), the member dying at several phases of its heartbeat cycle.
import { expect } from 'chai';
import { millisFromNanos } from '../../../src/dynamodb/codec.js';
import { MemoryGroup } from '../../support/memory-group.js';
import { DEFAULT_TIMINGS, heldBy, produceEvery } from '../../support/default-timings.js';

describe('crash failover at expiry, default timings (virtual time)', function () {
  this.timeout(120_000);

  for (const freezeAfterMs of [10, 1300, 2600, 3900, 4990]) {
    it(`a frozen member's shards are read by the survivor within leaseTtlMs + 1 s, not before its last heartbeat is leaseTtlMs old (frozen ${freezeAfterMs} ms after a heartbeat)`, async () => {
      const group = new MemoryGroup(4, DEFAULT_TIMINGS);
      const producing = produceEvery(group, 20);
      const a = group.join('a');
      await group.scheduler.advanceBy(1717);
      const b = group.join('b');
      await group.scheduler.until(() => heldBy(group, 'a').length === 2 && heldBy(group, 'b').length === 2, 'balance 2/2', 60_000);
      await group.scheduler.advanceBy(60_000);
      // a's heartbeats, as its clients row shows them: freeze it freezeAfterMs after one.
      const lastBeatAt = () => millisFromNanos(group.coordination.client('a')?.lastUpdateNs ?? 0n);
      const beat = lastBeatAt();
      await group.scheduler.until(() => lastBeatAt() !== beat, 'a\'s next heartbeat', 2 * DEFAULT_TIMINGS.leaseTtlMs, 1);
      await group.scheduler.advanceBy(freezeAfterMs);
      const moving = heldBy(group, 'a');
      const receivedBefore = b.received.length;
      const capturedAt: number[] = [];
      b.kinsumer.events$.subscribe((e) => { if (e.type === 'lease-acquired' && moving.includes(e.shardId)) capturedAt.push(group.scheduler.now()); });
      const frozenAt = group.scheduler.now();
      const lastHeartbeatAt = lastBeatAt();
      a.pause();
      await group.scheduler.until(
        () => moving.every((shardId) => b.received.slice(receivedBefore).some((r) => r.shardId === shardId)),
        'b reads every shard a held', 60_000, 10,
      );
      const tookMs = group.scheduler.now() - frozenAt;
      expect(tookMs, `frozen → b's first record of each of ${moving.join(', ')} (ms of virtual time)`).to.be.at.most(DEFAULT_TIMINGS.leaseTtlMs + 1000);
      // Never taken for dead early: every capture of a's shards comes leaseTtlMs or more after a's last heartbeat.
      expect(capturedAt.length).to.equal(moving.length);
      for (const at of capturedAt) expect(at - lastHeartbeatAt, 'capture after a\'s last heartbeat (ms)').to.be.at.least(DEFAULT_TIMINGS.leaseTtlMs);
      producing.unsubscribe();
      a.resume();
      await group.stopAll();
    });
  }
});
