// The checker's rules of lives (liveness-rules.ts) on hand-made observations: each fires on the
// history that breaks it and stays quiet on the nearest one that does not.
import { expect } from 'chai';
import { type CheckerSettings, InvariantChecker } from './checker.js';
import { Proc, SEQ } from './checker-fixtures.js';

const T0 = 1_000_000;
/** TTL 3 s, heartbeats every second: a fenced lease may deliver up to 2 s after its last confirmation. */
const SETTINGS: CheckerSettings = {
  startMs: T0, leaseTtlMs: 3000, renewIntervalMs: 1000, maxInFlightRecords: 100, start: 'TRIM_HORIZON', startTimestampMs: T0, ownershipBoundMs: 60_000,
  startBoundMs: 2000, failoverBoundMs: 3500,
};


function world(): InvariantChecker {
  const checker = new InvariantChecker(SETTINGS);
  checker.shardCreated('s0', []);
  for (let n = 1; n <= 20; n += 1) checker.recordPut('s0', SEQ(n), T0);
  return checker;
}

const names = (checker: InvariantChecker) => checker.violations.map((v) => v.invariant);

/** `process` captures s0 in life `incarnation` with `counter` at `atMs` and opens its session. */
function hold(checker: InvariantChecker, process: Proc, counter: number, atMs: number, incarnation?: number): void {
  checker.captured(process, 's0', counter, atMs, incarnation);
  checker.sessionOpened(process, 's0', counter, atMs);
}

describe('the checker\'s rules of lives (hand-made histories)', () => {
  it('live-lease-taken: a lease kept by its life\'s heartbeats is live while they come, not once they stopped a TTL ago', () => {
    const checker = world();
    const [a, b, c] = [new Proc('a#1'), new Proc('b#1'), new Proc('c#1')];
    checker.lives.heartbeat(a, 1, T0, T0);
    hold(checker, a, 1, T0, 1);
    // No write of the row since the capture, but a's heartbeats (sent 2.9 s and 5.9 s in).
    checker.lives.heartbeat(a, 1, T0 + 2900, T0 + 2905);
    checker.lives.heartbeat(a, 1, T0 + 5900, T0 + 5905);
    hold(checker, b, 2, T0 + 8900, 1);
    expect(names(checker), 'a TTL after its last heartbeat\'s send: not live').to.deep.equal([]);
    checker.lives.heartbeat(b, 1, T0 + 9000, T0 + 9001);
    hold(checker, c, 3, T0 + 11_999, 1);
    expect(names(checker), '2999 ms after b\'s heartbeat').to.deep.equal(['live-lease-taken']);
  });

  it('live-lease-taken: a commit accepted while its life\'s heartbeats failed keeps nothing alive (the lease row\'s writes no longer keep a lease)', () => {
    const checker = world();
    const [a, b] = [new Proc('a#1'), new Proc('b#1')];
    checker.lives.heartbeat(a, 1, T0, T0);
    hold(checker, a, 1, T0, 1);
    // a's heartbeats fail from here on; its commits still go through, the last 100 ms before b's capture.
    checker.wrote(a, 's0', 'commit', 1, undefined, false, T0 + 2900);
    hold(checker, b, 2, T0 + 3000, 1);
    expect(names(checker), 'a TTL after a\'s last heartbeat').to.deep.equal([]);
  });

  it('zombie-emission: a fenced lease delivers while its last heartbeat before the fence is under two intervals old, not after; later heartbeats do not count', () => {
    const checker = world();
    const [a, b] = [new Proc('a#1'), new Proc('b#1')];
    checker.lives.heartbeat(a, 1, T0, T0);
    hold(checker, a, 1, T0, 1);
    checker.lives.heartbeat(a, 1, T0 + 1000, T0 + 1001);
    a.state = 'frozen';
    hold(checker, b, 2, T0 + 4100, 1);
    a.state = 'running';
    checker.delivered(a, 's0', SEQ(1), T0 + 2999);
    expect(names(checker)).to.deep.equal([]);
    // A heartbeat accepted after the fence would have to be refused: it confirms nothing.
    checker.lives.heartbeat(a, 1, T0 + 4200, T0 + 4201);
    checker.delivered(a, 's0', SEQ(2), T0 + 4300);
    expect(names(checker)).to.deep.equal(['zombie-emission']);
  });

  it('twin-emission: once another process of its clientId took its place, a process delivers only within two intervals of its last heartbeat before that', () => {
    const checker = world();
    const [old, fresh] = [new Proc('a#1', 'a'), new Proc('a#2', 'a')];
    checker.lives.heartbeat(old, 1, T0, T0);
    hold(checker, old, 1, T0, 1);
    checker.lives.heartbeat(old, 1, T0 + 1000, T0 + 1000);
    checker.lives.heartbeat(fresh, 2, T0 + 1500, T0 + 1500);
    checker.delivered(old, 's0', SEQ(1), T0 + 2900);
    expect(names(checker), 'within two intervals of its last heartbeat').to.deep.equal([]);
    checker.delivered(old, 's0', SEQ(2), T0 + 3000);
    expect(names(checker)).to.deep.equal(['twin-emission']);
  });

  it('drain-took: a capture a draining process asked for is refused by the rule; one asked for before it began to drain is not', () => {
    const checker = world();
    const a = new Proc('a#1');
    checker.lives.draining(a, T0 + 100);
    checker.captured(a, 's0', 1, T0 + 150, 1, T0 + 90);
    expect(names(checker), 'asked for before').to.deep.equal([]);
    checker.captured(a, 's0', 2, T0 + 250, 1, T0 + 200);
    expect(names(checker)).to.deep.equal(['drain-took']);
  });

  it('crash-failover: the shards of a timed crash must be captured by another within the bound of its last heartbeat\'s send', () => {
    const checker = world();
    const [a, b] = [new Proc('a#1'), new Proc('b#1')];
    checker.lives.heartbeat(a, 1, T0, T0);
    hold(checker, a, 1, T0, 1);
    checker.crashTimed(a, T0 + 10);
    a.state = 'crashed';
    checker.checkFailover(T0 + 3500);
    expect(names(checker), 'at the bound').to.deep.equal([]);
    hold(checker, b, 2, T0 + 3400, 1);
    checker.checkFailover(T0 + 3501);
    expect(names(checker), 'taken in time').to.deep.equal([]);

    const late = world();
    const [c, d] = [new Proc('c#1'), new Proc('d#1')];
    late.lives.heartbeat(c, 1, T0, T0);
    hold(late, c, 1, T0, 1);
    late.crashTimed(c, T0 + 10);
    c.state = 'crashed';
    late.checkFailover(T0 + 3501);
    hold(late, d, 2, T0 + 3600, 1);
    expect(names(late)).to.deep.equal(['crash-failover']);
  });
});
