import { expect } from 'chai';
import { firstValueFrom, map } from 'rxjs';
import type { KinsumerPorts } from '../../../src/ports/backend.js';
import type { IteratorStart, StreamPort } from '../../../src/ports/stream.js';
import type { KinsumerRecord } from '../../../src/types.js';
import { type Member, MemoryGroup } from '../../support/memory-group.js';

const dataOf = (records: readonly KinsumerRecord[]) => records.map((r) => new TextDecoder().decode(r.data));

/**
 * The stream's clock told 2 s early: the most the Kinesis adapter's reading can be (its answer's
 * `Date` header counts whole seconds, and the adapter takes a second off), where the in-memory stream is exact.
 */
function twoSecondsEarly(ports: KinsumerPorts): KinsumerPorts {
  const { stream } = ports;
  const getShardIterator = (shardId: string, start: IteratorStart) => stream.getShardIterator(shardId, start).pipe(
    map((issued) => (issued.streamTime === undefined ? issued : { ...issued, streamTime: new Date(issued.streamTime.getTime() - 2000) })),
  );
  return { ...ports, stream: Object.assign(Object.create(stream) as StreamPort, { getShardIterator }) };
}

/** One client reads r0-r2 of the one shard and commits past them. */
async function readAndCommit(join: Parameters<MemoryGroup['join']>[1] = {}): Promise<{ group: MemoryGroup; shard: string; a: Member }> {
  const group = new MemoryGroup(1);
  const [shard] = group.stream.shardIds() as [string];
  const put = group.stream.putRecords(['r0', 'r1', 'r2'].map((data) => ({ partitionKey: 'k', data })));
  const a = group.join('a', join);
  const last = put.at(-1)?.sequenceNumber;
  const checkpointed = () => a.events.some((e) => e.type === 'checkpoint' && e.checkpoint?.sequenceNumber === last);
  await group.scheduler.until(() => dataOf(a.received).length === 3 && checkpointed(), 'a reads and commits r0-r2', 20_000);
  return { group, shard, a };
}

/** `a` stops gracefully before any new record; `b` takes the shard; one record is put: what `b` receives. */
async function handOffThenRead(group: MemoryGroup, shard: string, a: Member): Promise<string[]> {
  await group.stop(a);
  const b = group.join('b');
  await group.scheduler.until(() => group.owners().get(shard) === 'b', 'b captures', 20_000);
  group.stream.putRecords([{ partitionKey: 'k', data: 'after' }]);
  await group.scheduler.until(() => dataOf(b.received).includes('after'), 'b reads the new record', 20_000);
  await b.kinsumer.stop();
  return dataOf(b.received);
}

// Found by the simulator (seeds 67, 68, 104): a LATEST start is kept as AT_TIMESTAMP of its capture
// less a five-minute margin for client clock skew, so a hand-off before the first new record reads
// from five minutes back. After an operator's reset to LATEST, that re-delivered records the group
// had acked before the reset — after a graceful hand-off, where nothing acked may come again. A reset
// to LATEST now keeps the checkpoint it replaces as a floor: nothing at or before it is read again.
describe('a reset to LATEST keeps the replaced checkpoint as a floor (virtual time)', function () {
  this.timeout(60_000);

  it('a graceful hand-off after a reset to LATEST delivers none of the records acked before the reset', async () => {
    const { group, shard, a } = await readAndCommit();
    // The operator: every shard to LATEST, while a holds it (forced).
    await firstValueFrom(a.store.resetCheckpoint(shard, { type: 'LATEST' }, { force: true }), { defaultValue: undefined });
    await group.scheduler.until(() => a.events.filter((e) => e.type === 'lease-acquired').length === 2, 'a captures again, at LATEST', 20_000);
    await group.scheduler.advanceBy(1_000);
    // A deploy before any new record: a hands the shard to b gracefully.
    expect(await handOffThenRead(group, shard, a)).to.deep.equal(['after']);
  });

  // Found by the simulator (seed 1164): the floor was a position only. A reset to a timestamp
  // replaces the position; a reset to LATEST after it then had no floor, and the kept start (five
  // minutes early) re-read what the group had acked before the first reset. The timestamp a reset
  // to LATEST replaces is a floor too: the kept start is never earlier than it.
  it('a reset to LATEST after a reset to a timestamp re-reads nothing from before that timestamp', async () => {
    const { group, shard, a } = await readAndCommit();
    await group.scheduler.advanceBy(10_000);
    const captures = () => a.events.filter((e) => e.type === 'lease-acquired').length;
    // The operator rewinds to a time after r0-r2 (nothing to read again), then moves on to LATEST.
    await firstValueFrom(a.store.resetCheckpoint(shard, { type: 'AT_TIMESTAMP', timestamp: new Date(group.scheduler.now() - 1_000) }, { force: true }), { defaultValue: undefined });
    await group.scheduler.until(() => captures() === 2, 'a captures again, at the timestamp', 20_000);
    await group.scheduler.advanceBy(1_000);
    await firstValueFrom(a.store.resetCheckpoint(shard, { type: 'LATEST' }, { force: true }), { defaultValue: undefined });
    await group.scheduler.until(() => captures() === 3, 'a captures again, at LATEST', 20_000);
    await group.scheduler.advanceBy(1_000);
    expect(await handOffThenRead(group, shard, a)).to.deep.equal(['after']);
  });

  /**
   * `a` stops after r0-r2; a backlog is put; `gapMs` later an operator resets to LATEST; `c` (its
   * ports wrapped by `wrap`) captures at LATEST and receives nothing; what `d` then receives after a
   * graceful hand-off and one new record.
   */
  async function backlogResetHandOff(options: { readonly gapMs: number; readonly wrap?: (ports: KinsumerPorts) => KinsumerPorts }) {
    const { group, shard, a } = await readAndCommit();
    await group.stop(a);
    group.stream.putRecords(Array.from({ length: 3 }, (_, i) => ({ partitionKey: 'k', data: `backlog${i}` })));
    await group.scheduler.advanceBy(options.gapMs);
    const resetAtMs = group.scheduler.now();
    await firstValueFrom(a.store.resetCheckpoint(shard, { type: 'LATEST' }, { force: false }), { defaultValue: undefined });
    const c = group.join('c', options.wrap === undefined ? {} : { wrap: options.wrap });
    await group.scheduler.until(() => group.owners().get(shard) === 'c', 'c captures at LATEST', 20_000);
    const capturedAfterMs = group.scheduler.now() - resetAtMs;
    await group.scheduler.advanceBy(1_000);
    return { capturedAfterMs, c: dataOf(c.received), d: await handOffThenRead(group, shard, c) };
  }

  // R12 (review-3 scratch test reset-backlog): the floor was the replaced position only, and the
  // start kept after the reset was the capture's client clock less five minutes. A backlog put after
  // the last commit and skipped by the reset came back at the next hand-off if no new record arrived
  // in between. The kept start is now the stream's clock at the first LATEST iterator, and the
  // reset's own moment is a time floor.
  it('R12: a reset to LATEST, then a graceful hand-off before any new record: the backlog the reset skipped is not delivered', async () => {
    const { c, d } = await backlogResetHandOff({ gapMs: 60_000 });
    expect([c, d], 'c (LATEST), then d').to.deep.equal([[], ['after']]);
  });

  // R12: the start the next owner keeps is the stream's clock at its first iterator, at most 2 s
  // early on Kinesis. A capture within those 2 s of a reset would keep a start before the reset,
  // and a hand-off would deliver what arrived just before it; the reset's own moment is a time
  // floor, so it does not.
  it('R12: the reset\'s moment is a time floor: a backlog put just before a reset to LATEST stays skipped after a hand-off, though the stream\'s clock is known 2 s early', async () => {
    const { capturedAfterMs, c, d } = await backlogResetHandOff({ gapMs: 100, wrap: twoSecondsEarly });
    expect(capturedAfterMs, 'captured within 2 s of the reset').to.be.below(2000);
    expect([c, d], 'c (LATEST), then d').to.deep.equal([[], ['after']]);
  });

  // Design §8.3: a reset's start is the moment its write was accepted, and every record that
  // arrived after it is delivered. The next owner opened LATEST at its capture, so records put
  // between the reset and that capture (consumers stopped for a deploy, reset, started minutes
  // later) were skipped. A reset to LATEST now stores its moment, and the next owner reads from it.
  it('R12: every record put between a reset to LATEST and the next capture is delivered, none put before the reset', async () => {
    const { group, shard, a } = await readAndCommit();
    await group.stop(a);
    group.stream.putRecords([{ partitionKey: 'k', data: 'backlog' }]);
    await group.scheduler.advanceBy(5_000);
    await firstValueFrom(a.store.resetCheckpoint(shard, { type: 'LATEST' }, { force: false }), { defaultValue: undefined });
    await group.scheduler.advanceBy(1);
    group.stream.putRecords(['between0', 'between1'].map((data) => ({ partitionKey: 'k', data })));
    await group.scheduler.advanceBy(60_000);
    const c = group.join('c');
    await group.scheduler.until(() => dataOf(c.received).length >= 2, 'c reads what came after the reset', 20_000);
    await group.scheduler.advanceBy(1_000);
    expect(dataOf(c.received)).to.deep.equal(['between0', 'between1']);
    expect(await handOffThenRead(group, shard, c), 'after a graceful hand-off').to.deep.equal(['after']);
  });
});
