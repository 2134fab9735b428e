// When a member's next shard check reads the clients table. Its reads are also what it learns the
// other members' heartbeat times from (src/group/beat-observer.ts): a read that lands just after a
// heartbeat bounds it tightly, one that lands just before bounds it from below. So, instead of a
// fixed phase, each check is aimed at the expected next heartbeat of the member it is least sure
// of among those whose shards it would take over (each aim halves the uncertainty: a bisection),
// within half a period of the regular pace — the same number of reads, no more. Once it knows
// them to within PRECISION_MS, it keeps the regular pace. Pure.

/** Aiming stops once a member's heartbeats are known to within this. */
export const PRECISION_MS = 50;

/** A member whose shards this client would take over, as its last read left it. */
export interface WatchedBeat {
  /** When (ms from now) this client expects the member's next heartbeat. */
  readonly nextBeatInMs: number;
  /** How far apart the bounds on its heartbeat times are. */
  readonly uncertaintyMs: number;
  /** How often it heartbeats. */
  readonly periodMs: number;
}

/**
 * The delay before the next check: `checkEveryMs`, or, when a watched member's heartbeats are not
 * yet known to within {@link PRECISION_MS}, the moment of its next expected heartbeat (the least
 * known member first) shifted by whole periods into [checkEveryMs / 2, 3 × checkEveryMs / 2].
 */
export function nextCheckInMs(checkEveryMs: number, watched: readonly WatchedBeat[]): number {
  const target = [...watched].filter((w) => w.uncertaintyMs > PRECISION_MS && w.periodMs > 0).sort((a, b) => b.uncertaintyMs - a.uncertaintyMs)[0];
  if (target === undefined) return checkEveryMs;
  const earliest = checkEveryMs / 2;
  const latest = (3 * checkEveryMs) / 2;
  let aim = target.nextBeatInMs;
  if (aim < earliest) aim += Math.ceil((earliest - aim) / target.periodMs) * target.periodMs;
  if (aim > latest) aim -= Math.floor((aim - earliest) / target.periodMs) * target.periodMs;
  return aim >= earliest && aim <= latest ? Math.round(aim) : checkEveryMs;
}
