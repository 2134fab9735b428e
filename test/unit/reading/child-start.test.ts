import { expect } from 'chai';
import { firstValueFrom, of } from 'rxjs';
import type { KinsumerRecord } from '../../../src/types.js';
import { MemoryGroup } from '../../support/memory-group.js';

const dataOf = (records: readonly KinsumerRecord[]) => records.map((r) => new TextDecoder().decode(r.data));

// A child shard has no checkpoint when it is first captured, so `initialPosition` used to decide its
// start. For a LATEST (or timestamp) group that skipped every record put into the child between the
// split and the child's capture (it waits for its parent to be finished first): lost records at every
// reshard. A child starts where its parents' group started.
describe('children of a reshard start where their parents\' group started (virtual time)', function () {
  this.timeout(60_000);

  for (const initialPosition of ['LATEST', 'timestamp'] as const) {
    it(`${initialPosition} group: records put into the children before they are captured are delivered`, async () => {
      const group = new MemoryGroup(1, { initialPosition: initialPosition === 'LATEST' ? 'LATEST' : { timestamp: new Date(1_000) } });
      const [parent] = group.stream.shardIds() as [string];
      const a = group.join('a');
      await group.scheduler.until(() => group.counts().get('a') === 1, 'a holds the shard', 20_000);
      await group.scheduler.advanceBy(1_000);
      group.stream.putRecords([{ partitionKey: 'k', data: 'parent' }], { shardId: parent });
      await group.scheduler.until(() => dataOf(a.received).includes('parent'), 'the parent record', 20_000);
      const children = group.stream.split(parent);
      // At once, before the parent is read to its end, finished, and its children captured.
      for (const child of children) group.stream.putRecords([{ partitionKey: 'k', data: `early-${child}` }], { shardId: child });
      await group.scheduler.until(() => children.every((c) => group.owners().get(c) === 'a'), 'a holds both children', 20_000);
      for (const child of children) group.stream.putRecords([{ partitionKey: 'k', data: `late-${child}` }], { shardId: child });
      await group.scheduler.until(() => children.every((c) => dataOf(a.received).includes(`late-${c}`)), 'the late records', 20_000);
      expect([...dataOf(a.received)].sort()).to.deep.equal(['parent', ...children.flatMap((c) => [`early-${c}`, `late-${c}`])].sort());
      await a.kinsumer.stop();
    });
  }

  // R15 (review-4): a finished parent reset to LATEST before its children are captured. Finished
  // shards are never captured again, so nothing rewrites the parent's LATEST row as a time; the
  // children start at the reset's moment (startOf), not at the tip at their own capture, and not at
  // TRIM_HORIZON in a TRIM_HORIZON group either: what the children held at the reset is skipped, as
  // on the parent (and as export-kcl writes it).
  for (const initialPosition of ['LATEST', 'TRIM_HORIZON'] as const) {
    it(`${initialPosition} group: a finished parent reset to LATEST before its children are captured: the children start at the reset's moment`, async () => {
      const group = new MemoryGroup(1, { initialPosition });
      const [parent] = group.stream.shardIds() as [string];
      let children: readonly string[] = [];
      let holdChildren = true;
      // Holds the window open (the children's capture answers "not available" until released), as a
      // slow shard check or a busy client does.
      const a = group.join('a', {
        wrap: (ports) => ({
          ...ports,
          store: new Proxy(ports.store, {
            get: (target, property, receiver) => (property === 'capture'
              ? (shardId: string) => (holdChildren && children.includes(shardId) ? of(undefined) : target.capture(shardId))
              : Reflect.get(target, property, receiver) as unknown),
          }),
        }),
      });
      await group.scheduler.until(() => group.counts().get('a') === 1, 'a holds the shard', 20_000);
      await group.scheduler.advanceBy(1_000);
      group.stream.putRecords([{ partitionKey: 'k', data: 'parent' }], { shardId: parent });
      await group.scheduler.until(() => dataOf(a.received).includes('parent'), 'the parent record', 20_000);
      children = group.stream.split(parent);
      for (const child of children) group.stream.putRecords([{ partitionKey: 'k', data: `before-reset-${child}` }], { shardId: child });
      await group.scheduler.until(() => group.checkpoints.row(parent)?.finished === true, 'the parent is finished', 20_000);
      // Later than the 2 s a kept start may reach back (design §8.3).
      await group.scheduler.advanceBy(5_000);
      await firstValueFrom(a.store.resetCheckpoint(parent, { type: 'LATEST' }, { force: false }), { defaultValue: undefined });
      await group.scheduler.advanceBy(1_000);
      for (const child of children) group.stream.putRecords([{ partitionKey: 'k', data: `after-reset-${child}` }], { shardId: child });
      await group.scheduler.advanceBy(5_000);
      holdChildren = false;
      await group.scheduler.until(() => children.every((c) => group.owners().get(c) === 'a'), 'a holds both children', 20_000);
      for (const child of children) group.stream.putRecords([{ partitionKey: 'k', data: `late-${child}` }], { shardId: child });
      await group.scheduler.until(() => children.every((c) => dataOf(a.received).includes(`late-${c}`)), 'the late records', 20_000);
      expect([...dataOf(a.received)].sort()).to.deep.equal(['parent', ...children.flatMap((c) => [`after-reset-${c}`, `late-${c}`])].sort());
      await a.kinsumer.stop();
    });
  }

  it('LATEST group on a stream resharded before the group began: the old children are not read from their beginning', async () => {
    const group = new MemoryGroup(1, { initialPosition: 'LATEST' });
    const [parent] = group.stream.shardIds() as [string];
    const children = group.stream.split(parent);
    for (const child of children) group.stream.putRecords([{ partitionKey: 'k', data: `history-${child}` }], { shardId: child });
    // Long before the group starts: further back than the margin a kept start allows for clock skew.
    await group.scheduler.advanceBy(600_000);
    const a = group.join('a');
    await group.scheduler.until(() => children.every((c) => group.owners().get(c) === 'a'), 'a holds both children', 20_000);
    await group.scheduler.advanceBy(2_000);
    for (const child of children) group.stream.putRecords([{ partitionKey: 'k', data: `new-${child}` }], { shardId: child });
    await group.scheduler.until(() => children.every((c) => dataOf(a.received).includes(`new-${c}`)), 'the new records', 20_000);
    expect([...dataOf(a.received)].sort()).to.deep.equal(children.map((c) => `new-${c}`).sort());
    await a.kinsumer.stop();
  });
});
