import type { KinsumerEvent, ShardStatus } from '../types.js';

/** The event a stop begins with. */
export type DrainingEvent = Extract<KinsumerEvent, { type: 'draining' }>;

/** How a stop waits for acks: at most `drainMs` (0: not at all); with `quietMs`, only while acks keep coming. */
export interface StopWait {
  readonly drainMs: number;
  /** Set when nobody is subscribed any more: the wait ends after this long without an ack. */
  readonly quietMs?: number;
}

/**
 * Says what a stop waits for, so a stop that takes the whole drain bound (a record nobody acks)
 * is never silent: the held shards, the unacked records per shard, and how long it waits for them.
 * `undefined` when the client holds no lease (nothing to drain or release).
 */
export function drainingEvent(shards: readonly ShardStatus[], wait: StopWait): DrainingEvent | undefined {
  if (shards.length === 0) return undefined;
  const unacked = Object.fromEntries(shards.filter((s) => s.inFlight > 0).map((s) => [s.shardId, s.inFlight] as const));
  return {
    type: 'draining',
    shardIds: shards.map((s) => s.shardId),
    unacked,
    boundMs: wait.drainMs,
    ...(wait.quietMs === undefined || wait.drainMs <= 0 ? {} : { quietMs: wait.quietMs }),
  };
}
