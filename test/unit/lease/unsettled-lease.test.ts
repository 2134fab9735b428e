// A lease lives as long as its owner's life (docs/liveness.md): nobody else takes a lease a live
// member owns. So a write of a member that may have left a row naming its life with no session
// behind it — a capture in flight when the shard stopped being wanted, a capture whose answer was
// lost, a release that could not be written — must be settled by that member itself (the row
// read, and released if it is still this life's); before, such a lease expired after one TTL.
// Virtual time, in-memory stores; the faults are the store's own injection (a lost answer, a failed call).
import { expect } from 'chai';
import { delay } from 'rxjs';
import { KinsumerError, RequestTimeoutError } from '../../../src/index.js';
import type { KinsumerPorts } from '../../../src/ports/backend.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';

function heldBy(group: MemoryGroup, id: string): string[] {
  return [...group.owners()].filter(([, owner]) => owner === id).map(([shardId]) => shardId).sort();
}

/** The store's captures apply when sent, as always, and answer `slow.ms` later. */
function slowCaptures(group: MemoryGroup, slow: { ms: number }): (ports: KinsumerPorts) => KinsumerPorts {
  return (ports) => ({
    ...ports,
    store: new Proxy(ports.store, {
      get: (target, property, receiver): unknown => (property === 'capture'
        ? (shardId: string) => target.capture(shardId).pipe(delay(slow.ms, group.scheduler))
        : Reflect.get(target, property, receiver)),
    }),
  });
}

describe('a lease this life may own with no session is settled by this client (virtual time)', function () {
  this.timeout(60_000);

  it('a capture in flight when the client stops (and hands over what it holds): the lease it took is released before the stop ends', async () => {
    const group = new MemoryGroup(2);
    const a = group.join('a');
    await group.scheduler.until(() => heldBy(group, 'a').length === 2, 'a holds both shards', 20_000);
    const slow = { ms: 0 };
    const b = group.join('b', { wrap: slowCaptures(group, slow) });
    await group.scheduler.until(() => heldBy(group, 'a').length === 1 && heldBy(group, 'b').length === 1, 'one shard each', 20_000);
    // a leaves and hands its shard to b, whose capture is written at once and answered 2 s later;
    // b stops in between: its hand-over checks drop the shard it was capturing.
    slow.ms = 2000;
    const leaving = group.stop(a);
    await group.scheduler.until(() => heldBy(group, 'b').length === 2, 'b\'s capture written', 20_000);
    await Promise.all([leaving, group.stop(b)]);
    expect(heldBy(group, 'b'), 'no row names b once its stop ended').to.deep.equal([]);
  });

  it('a capture whose answer was lost, then a drain: the lease it may have taken is released and another member takes it', async () => {
    const group = new MemoryGroup(2);
    const a = group.join('a');
    await group.scheduler.until(() => heldBy(group, 'a').length === 2, 'a holds both shards', 20_000);
    const b = group.join('b');
    // Armed once a has given a shard up: b's next capture is written, and its answer lost.
    a.kinsumer.events$.subscribe((event) => { if (event.type === 'lease-released') b.store.loseNextResponse(new RequestTimeoutError('capture', 1000), ['capture']); });
    // The drain starts as soon as the lost answer is known: the capture is not tried again.
    b.kinsumer.events$.subscribe((event) => { if (event.type === 'retrying' && event.operation === 'capture') void b.kinsumer.drain(); });
    await group.scheduler.until(() => b.events.some((e) => e.type === 'retrying'), 'b\'s capture answered with a timeout', 20_000);
    expect(heldBy(group, 'b'), 'the lost answer\'s write took the lease').to.have.length(1);
    await group.scheduler.until(() => heldBy(group, 'a').length === 2, 'a holds both shards again', 4 * FAST.leaseTtlMs);
    expect(b.kinsumer.status().state).to.equal('draining');
    expect(b.events.filter((e) => e.type === 'lease-acquired'), 'the draining member captured nothing to settle it').to.deep.equal([]);
    await group.stopAll();
  });

  it('a release that could not be written while the member lives on: released later, and the successor takes the shard', async () => {
    const group = new MemoryGroup(2);
    const a = group.join('a');
    await group.scheduler.until(() => heldBy(group, 'a').length === 2, 'a holds both shards', 20_000);
    a.store.failNext(new KinsumerError('the table refused the release'), ['release']);
    group.join('b');
    await group.scheduler.until(() => a.events.some((e) => e.type === 'error'), 'a\'s hand-over release failed', 20_000);
    await group.scheduler.until(() => heldBy(group, 'b').length === 1 && heldBy(group, 'a').length === 1, 'b holds the shard handed over', 4 * FAST.leaseTtlMs);
    await group.stopAll();
  });
});
