import { expect } from 'chai';
import { type CheckerSettings, InvariantChecker } from './checker.js';
import { Proc, SEQ } from './checker-fixtures.js';
import { MemoryProbe } from './memory-probe.js';
import type { Delivery } from './checker-state.js';

// The checker's rules on hand-made observations: each rule fires on the history that breaks it,
// and stays quiet on the nearest history that does not.

const T0 = 1_000_000;
const SETTINGS: CheckerSettings = {
  startMs: T0, leaseTtlMs: 3000, renewIntervalMs: 1000, maxInFlightRecords: 3, start: 'TRIM_HORIZON', startTimestampMs: T0, ownershipBoundMs: 10_000, startBoundMs: 2000,
};


function world(settings: Partial<CheckerSettings> = {}): { checker: InvariantChecker; put: (n: number, atMs?: number) => void } {
  const checker = new InvariantChecker({ ...SETTINGS, ...settings });
  checker.shardCreated('s0', []);
  return { checker, put: (n, atMs = T0) => checker.recordPut('s0', SEQ(n), atMs) };
}

const names = (checker: InvariantChecker) => checker.violations.map((v) => v.invariant);

/** `process` captures s0 with `counter` and opens its session at `atMs`. */
function hold(checker: InvariantChecker, process: Proc, counter: number, atMs: number): void {
  checker.captured(process, 's0', counter, atMs);
  checker.sessionOpened(process, 's0', counter, atMs);
}

/**
 * a#1 holds s0 and is delivered records 1 and 2; `mark` (an ack, or the operator's settling) comes
 * for 2 before a#1's release is built and for 1 after it; b#1 then captures s0.
 */
function releasedBetween(mark: (checker: InvariantChecker, delivery: Delivery, atMs: number) => void): { checker: InvariantChecker; b: Proc } {
  const { checker, put } = world();
  const [a, b] = [new Proc('a#1'), new Proc('b#1')];
  put(1);
  put(2);
  hold(checker, a, 1, T0);
  const [one, two] = [1, 2].map((n) => checker.delivered(a, 's0', SEQ(n), T0));
  mark(checker, two!, T0 + 10);
  checker.wrote(a, 's0', 'release', 1, undefined, false, T0 + 30, T0 + 20);
  mark(checker, one!, T0 + 25);
  hold(checker, b, 2, T0 + 100);
  return { checker, b };
}

describe('simulation checker rules', () => {
  it('fenced-write: a write accepted under a counter a later capture replaced', () => {
    const { checker } = world();
    const [a, b] = [new Proc('a#1'), new Proc('b#1')];
    hold(checker, a, 1, T0);
    a.state = 'frozen';
    hold(checker, b, 2, T0 + 100);
    checker.wrote(b, 's0', 'renew', 2, undefined, false, T0 + 200);
    expect(names(checker)).to.deep.equal([]);
    checker.wrote(a, 's0', 'renew', 1, undefined, false, T0 + 300);
    expect(names(checker)).to.deep.equal(['fenced-write']);
  });

  it('fenced-write: a write accepted from the owner of before an operator reset', () => {
    const { checker } = world();
    const a = new Proc('a#1');
    hold(checker, a, 1, T0);
    checker.reset('s0', { type: 'TRIM_HORIZON' }, false);
    checker.wrote(a, 's0', 'commit', 1, { type: 'position', sequence: 5n }, false, T0 + 10);
    expect(names(checker)).to.deep.equal(['fenced-write']);
  });

  it('live-lease-taken: only from an owner that runs and renewed within the TTL', () => {
    const { checker } = world();
    const [a, b, c] = [new Proc('a#1'), new Proc('b#1'), new Proc('c#1')];
    hold(checker, a, 1, T0);
    a.state = 'frozen';
    hold(checker, b, 2, T0 + 100);
    expect(names(checker), 'from a frozen owner').to.deep.equal([]);
    hold(checker, c, 3, T0 + 100 + 3000);
    expect(names(checker), 'from an owner silent for a whole TTL').to.deep.equal([]);
    checker.wrote(c, 's0', 'renew', 3, undefined, false, T0 + 4000);
    hold(checker, b, 4, T0 + 4500);
    expect(names(checker)).to.deep.equal(['live-lease-taken']);
  });

  it('static membership: a second process of one clientId takes the live first one\'s lease at once (not live-lease-taken; twin-emission judges the first)', () => {
    const { checker } = world();
    hold(checker, new Proc('a#1', 'a'), 1, T0);
    hold(checker, new Proc('a#2', 'a'), 2, T0 + 100);
    expect(names(checker)).to.deep.equal([]);
  });

  it('backlog-bound: one never-acked record, the next ones acked, one more than maxInFlightRecords delivered', () => {
    const { checker, put } = world();
    const a = new Proc('a#1');
    for (let n = 1; n <= 5; n += 1) put(n);
    hold(checker, a, 1, T0);
    checker.delivered(a, 's0', SEQ(1), T0);
    for (let n = 2; n <= 3; n += 1) checker.acked(checker.delivered(a, 's0', SEQ(n), T0), T0);
    expect(names(checker)).to.deep.equal([]);
    checker.delivered(a, 's0', SEQ(4), T0);
    expect(names(checker)).to.deep.equal(['backlog-bound']);
  });

  it('graceful-redelivery: a record acked before a release is delivered to the next owner; not one acked after', () => {
    const { checker, b } = releasedBetween((c, delivery, atMs) => c.acked(delivery, atMs));
    checker.delivered(b, 's0', SEQ(1), T0 + 100);
    expect(names(checker), 'acked after the release was built').to.deep.equal([]);
    checker.delivered(b, 's0', SEQ(2), T0 + 100);
    expect(names(checker)).to.deep.equal(['graceful-redelivery']);
  });

  it('committed-redelivery: the lease holder delivers a record under a committed checkpoint', () => {
    const { checker, put } = world();
    const [a, b] = [new Proc('a#1'), new Proc('b#1')];
    put(1);
    put(2);
    hold(checker, a, 1, T0);
    checker.acked(checker.delivered(a, 's0', SEQ(1), T0), T0);
    checker.wrote(a, 's0', 'commit', 1, { type: 'position', sequence: BigInt(SEQ(1)) }, false, T0 + 10);
    a.state = 'crashed';
    hold(checker, b, 2, T0 + 5000);
    checker.delivered(b, 's0', SEQ(2), T0 + 5000);
    expect(names(checker)).to.deep.equal([]);
    checker.delivered(b, 's0', SEQ(1), T0 + 5001);
    expect(names(checker)).to.include('committed-redelivery');
  });

  it('order, first-delivery-order and parents-first', () => {
    const { checker, put } = world();
    checker.shardCreated('child', ['s0']);
    checker.recordPut('child', SEQ(9), T0);
    const a = new Proc('a#1');
    for (let n = 1; n <= 3; n += 1) put(n);
    hold(checker, a, 1, T0);
    checker.delivered(a, 's0', SEQ(2), T0);
    checker.delivered(a, 's0', SEQ(1), T0);
    checker.captured(a, 'child', 1, T0);
    checker.sessionOpened(a, 'child', 1, T0);
    checker.delivered(a, 'child', SEQ(9), T0);
    expect(names(checker)).to.deep.equal(['order', 'first-delivery-order', 'parents-first']);
  });

  it('zombie-emission: a fenced owner delivers two renewal intervals after its last write', () => {
    const { checker, put } = world();
    const [a, b] = [new Proc('a#1'), new Proc('b#1')];
    put(1);
    put(2);
    hold(checker, a, 1, T0);
    a.state = 'frozen';
    hold(checker, b, 2, T0 + 3500);
    a.state = 'running';
    checker.delivered(a, 's0', SEQ(1), T0 + 1999);
    expect(names(checker)).to.deep.equal([]);
    checker.delivered(a, 's0', SEQ(2), T0 + 3600);
    expect(names(checker)).to.deep.equal(['zombie-emission']);
  });

  it('lost-record: TRIM_HORIZON owes every record; LATEST only those after its first read', () => {
    const trim = world();
    trim.put(1);
    trim.checker.checkNothingLost(T0);
    expect(names(trim.checker)).to.deep.equal(['lost-record']);

    const latest = world({ start: 'LATEST' });
    latest.put(1);
    latest.checker.iteratorIssued('s0', 1);
    latest.checker.checkNothingLost(T0);
    expect(names(latest.checker), 'a record before the first read').to.deep.equal([]);
    latest.put(2);
    latest.checker.checkNothingLost(T0);
    expect(names(latest.checker)).to.deep.equal(['lost-record']);
  });

  it('lost-record: after a reset to LATEST, every record put after the reset\'s accepted write is owed, not only those after the next iterator', () => {
    const { checker, put } = world({ start: 'LATEST' });
    checker.iteratorIssued('s0', 0);
    put(1, T0 + 1000);
    checker.reset('s0', { type: 'LATEST' }, false, T0 + 10_000);
    put(2, T0 + 10_500);
    checker.iteratorIssued('s0', 2, T0 + 12_000);
    checker.checkNothingLost(T0 + 20_000);
    // Record 1 was owed before the reset (put after the first read) and is not acked either: the
    // reset forgave it; record 2, put after the reset but before the next iterator, is owed (§8.3).
    expect(checker.violations.map((v) => v.message).join('\n')).to.match(/1 of 2 records never acked, the first …00000002 /);
  });

  it('lost-record: a LATEST group owes every record of a child of a shard it was reading, but after a reset of the parent to LATEST (finished or not) only what came after the reset', () => {
    const read = world({ start: 'LATEST' });
    read.checker.iteratorIssued('s0', 0);
    read.checker.shardCreated('child', ['s0']);
    read.checker.recordPut('child', SEQ(9), T0);
    read.checker.iteratorIssued('child', 1);
    read.checker.checkNothingLost(T0);
    expect(names(read.checker), 'a child record put before the child\'s first read').to.deep.equal(['lost-record']);

    const unread = world({ start: 'LATEST' });
    unread.checker.shardCreated('child', ['s0']);
    unread.checker.recordPut('child', SEQ(9), T0);
    unread.checker.iteratorIssued('child', 1);
    unread.checker.checkNothingLost(T0);
    expect(names(unread.checker), 'parents the group never read: the child starts at its first read').to.deep.equal([]);

    for (const finished of [false, true]) {
      const reset = world({ start: 'LATEST' });
      reset.checker.iteratorIssued('s0', 0);
      reset.checker.shardCreated('child', ['s0']);
      reset.checker.recordPut('child', SEQ(9), T0);
      reset.checker.reset('s0', { type: 'LATEST' }, finished, T0 + 10_000);
      reset.checker.iteratorIssued('child', 1, T0 + 20_000);
      reset.checker.checkNothingLost(T0 + 20_000);
      expect(names(reset.checker), `the parent (finished: ${finished}) reset to LATEST: not the child's records before the reset`).to.deep.equal([]);
      reset.checker.recordPut('child', SEQ(10), T0 + 10_500);
      reset.checker.checkNothingLost(T0 + 20_000);
      expect(names(reset.checker), `the parent (finished: ${finished}) reset to LATEST: the child's records after the reset`).to.deep.equal(['lost-record']);
    }
  });

  it('unowned-shard: once calm, a readable shard without a live owner for longer than the bound', () => {
    const { checker } = world();
    const a = new Proc('a#1');
    hold(checker, a, 1, T0);
    a.state = 'crashed';
    checker.calm(T0 + 1000);
    checker.checkOwnership(T0 + 1000);
    checker.checkOwnership(T0 + 11_000);
    expect(names(checker)).to.deep.equal([]);
    checker.checkOwnership(T0 + 11_001);
    expect(names(checker)).to.deep.equal(['unowned-shard']);
  });
  it('before-start: a LATEST group delivers a record older than its first LATEST iterator by more than the bound', () => {
    const { checker, put } = world({ start: 'LATEST' });
    const [a, b] = [new Proc('a#1'), new Proc('b#1')];
    put(1, T0 - 60_000);
    put(2, T0 - 1500);
    checker.iteratorIssued('s0', 2, T0, true);
    hold(checker, a, 1, T0);
    checker.wrote(a, 's0', 'release', 1, undefined, false, T0 + 10);
    hold(checker, b, 2, T0 + 100);
    checker.delivered(b, 's0', SEQ(2), T0 + 100);
    expect(names(checker), 'within the bound').to.deep.equal([]);
    checker.delivered(b, 's0', SEQ(1), T0 + 100);
    expect(names(checker)).to.include('before-start');
  });

  it('before-start: the first iterator is not LATEST (a timestamp, the horizon): no start on that shard', () => {
    const { checker, put } = world({ start: 'LATEST' });
    const a = new Proc('a#1');
    put(1, T0 - 60_000);
    checker.iteratorIssued('s0', 1, T0, false);
    hold(checker, a, 1, T0);
    checker.delivered(a, 's0', SEQ(1), T0 + 100);
    expect(names(checker)).to.deep.equal([]);
  });

  it('before-start: after a reset to LATEST, a later lease delivers what the reset skipped; a fenced one may', () => {
    const { checker, put } = world();
    const [a, b] = [new Proc('a#1'), new Proc('b#1')];
    put(1, T0);
    put(2, T0 + 5000);
    hold(checker, a, 1, T0);
    checker.wrote(a, 's0', 'renew', 1, undefined, false, T0 + 9500);
    checker.reset('s0', { type: 'LATEST' }, false, T0 + 10_000);
    checker.delivered(a, 's0', SEQ(1), T0 + 10_001);
    expect(names(checker), 'the fenced owner').to.deep.equal([]);
    hold(checker, b, 2, T0 + 11_000);
    checker.delivered(b, 's0', SEQ(2), T0 + 11_000);
    expect(names(checker)).to.deep.equal(['before-start']);
  });

  it('committed-redelivery and order with KPL sub-records: a checkpoint inside an aggregate covers the sub-records up to it', () => {
    const { checker } = world();
    const [a, b] = [new Proc('a#1'), new Proc('b#1')];
    checker.recordPut('s0', SEQ(1), T0, 3);
    hold(checker, a, 1, T0);
    for (const sub of [0, 1]) checker.acked(checker.delivered(a, 's0', SEQ(1), T0, sub), T0);
    checker.wrote(a, 's0', 'commit', 1, { type: 'position', sequence: BigInt(SEQ(1)), sub: 1 }, false, T0 + 10);
    a.state = 'crashed';
    hold(checker, b, 2, T0 + 5000);
    checker.delivered(b, 's0', SEQ(1), T0 + 5000, 2);
    expect(names(checker), 'the sub-record after the checkpoint').to.deep.equal([]);
    checker.delivered(b, 's0', SEQ(1), T0 + 5001, 1);
    expect(names(checker)).to.deep.equal(['order', 'committed-redelivery']);
  });

  it('key-order: under partitionKey, a second call of one key while the first runs, or a later record first', () => {
    const { checker, put } = world();
    const a = new Proc('a#1');
    for (let n = 1; n <= 3; n += 1) put(n);
    hold(checker, a, 1, T0);
    const [one, two, three] = [1, 2, 3].map((n) => checker.delivered(a, 's0', SEQ(n), T0));
    const endOne = checker.handlers.called([one!], 'partitionKey', 'k', 1, T0);
    checker.handlers.called([three!], 'partitionKey', 'other', 1, T0);
    expect(names(checker), 'another key runs beside it').to.deep.equal([]);
    checker.handlers.called([two!], 'partitionKey', 'k', 1, T0);
    expect(names(checker)).to.deep.equal(['key-order']);
    endOne();
    const { checker: second, put: put2 } = world();
    for (let n = 1; n <= 2; n += 1) put2(n);
    hold(second, a, 1, T0);
    const [first, later] = [1, 2].map((n) => second.delivered(a, 's0', SEQ(n), T0));
    second.handlers.called([later!], 'shard', '', 1, T0)();
    second.handlers.called([later!], 'shard', '', 2, T0)();
    expect(names(second), 'a retry of the same record').to.deep.equal([]);
    second.handlers.called([first!], 'shard', '', 1, T0)();
    expect(names(second)).to.deep.equal(['key-order']);
  });

  it("key-order: 'none' promises no order", () => {
    const { checker, put } = world();
    const a = new Proc('a#1');
    put(1);
    put(2);
    hold(checker, a, 1, T0);
    const [one, two] = [1, 2].map((n) => checker.delivered(a, 's0', SEQ(n), T0));
    checker.handlers.called([two!], 'none', '', 1, T0);
    checker.handlers.called([one!], 'none', '', 1, T0);
    expect(names(checker)).to.deep.equal([]);
  });

  it('settled-rehandled: a record settled before a graceful release is handed to the next lease\'s handler; not one settled after', () => {
    const { checker, b } = releasedBetween((c, delivery, atMs) => c.handlers.settled(delivery, atMs));
    // Delivered again (never acked, as far as the table knows): only the handler call tells.
    const [again1, again2] = [1, 2].map((n) => checker.delivered(b, 's0', SEQ(n), T0 + 100));
    checker.handlers.called([again1!], 'none', '', 1, T0 + 100);
    expect(names(checker), 'settled after the release was built').to.deep.equal([]);
    checker.handlers.called([again2!], 'none', '', 1, T0 + 100);
    expect(names(checker)).to.deep.equal(['settled-rehandled']);
  });

  it('read-stall: a child counts from its parent\'s end, not from the calm', () => {
    const { checker } = world();
    const a = new Proc('a#1');
    checker.shardCreated('child', ['s0']);
    checker.recordPut('child', SEQ(9), T0);
    hold(checker, a, 1, T0);
    checker.calm(T0 + 1000);
    checker.wrote(a, 's0', 'commit', 1, undefined, true, T0 + 60_000);
    checker.checkProgress(T0 + 62_000);
    expect(names(checker), 'readable for 2 s').to.deep.equal([]);
    checker.checkProgress(T0 + 80_001);
    expect(names(checker)).to.deep.equal(['read-stall']);
  });

  it('read-stall: once calm, a readable shard that owes records gets no ack for two ownership bounds', () => {
    const { checker, put } = world();
    const a = new Proc('a#1');
    put(1, T0);
    hold(checker, a, 1, T0);
    checker.calm(T0 + 1000);
    checker.checkProgress(T0 + 21_000);
    expect(names(checker)).to.deep.equal([]);
    checker.checkProgress(T0 + 21_001);
    expect(names(checker)).to.deep.equal(['read-stall']);
    const acked = world();
    acked.put(1, T0);
    hold(acked.checker, a, 1, T0);
    acked.checker.acked(acked.checker.delivered(a, 's0', SEQ(1), T0), T0 + 500);
    acked.checker.calm(T0 + 1000);
    acked.checker.checkProgress(T0 + 100_000);
    expect(names(acked.checker), 'nothing owed').to.deep.equal([]);
  });

  it('retained-memory: more than 2 × maxInFlightRecords delivered records of a shard reachable after a collection', async () => {
    const { checker } = world();
    const a = new Proc('a#1');
    const probe = new MemoryProbe(checker, SETTINGS.maxInFlightRecords);
    const kept = Array.from({ length: 2 * SETTINGS.maxInFlightRecords }, (_, i) => ({ i }));
    for (const record of kept) probe.watch(a, 's0', record);
    for (let i = 0; i < 100; i += 1) probe.watch(a, 's0', { i });
    await probe.measure(T0);
    expect(names(checker), 'garbage collected, the bound kept').to.deep.equal([]);
    probe.watch(a, 's0', kept);
    await probe.measure(T0);
    expect(names(checker)).to.deep.equal(['retained-memory']);
    expect(kept.length).to.equal(2 * SETTINGS.maxInFlightRecords);
  });

  it('retained-memory: what the handler holds (a slow queue, a running call) is not the library\'s', async () => {
    const { checker, put } = world();
    const a = new Proc('a#1');
    const probe = new MemoryProbe(checker, SETTINGS.maxInFlightRecords);
    hold(checker, a, 1, T0);
    const held = Array.from({ length: 3 * SETTINGS.maxInFlightRecords }, (_, i) => {
      put(i + 1);
      const delivery = checker.delivered(a, 's0', SEQ(i + 1), T0);
      delivery.heldByHandler = true;
      const record = { i };
      probe.watch(a, 's0', record, delivery);
      return { record, delivery };
    });
    const memory = () => names(checker).filter((n) => n === 'retained-memory');
    await probe.measure(T0);
    expect(memory()).to.deep.equal([]);
    for (const { delivery } of held) delivery.heldByHandler = false;
    await probe.measure(T0);
    expect(memory()).to.deep.equal(['retained-memory']);
    expect(held.length).to.equal(3 * SETTINGS.maxInFlightRecords);
  });
});
