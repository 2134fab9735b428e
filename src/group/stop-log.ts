import type { ShardStatus } from '../types.js';

/** What `stop()` logs at info before it gives its leases back: the object and the message. */
export interface StopLog {
  readonly obj: {
    readonly shards: readonly string[];
    readonly unacked?: Readonly<Record<string, number>>;
    readonly drainBoundMs?: number;
    readonly quietMs?: number;
  };
  readonly msg: string;
}

/** How a stop waits for acks: at most `drainMs` (0: not at all); with `quietMs`, only while acks keep coming. */
export interface StopWait {
  readonly drainMs: number;
  /** Set when nobody is subscribed any more: the wait ends after this long without an ack. */
  readonly quietMs?: number;
}

/**
 * Says what a stop waits for, so a stop that takes the whole drain bound (a record nobody acks)
 * is never silent: the held shards, the unacked records per shard, and how long it waits for them.
 */
export function stopLog(shards: readonly ShardStatus[], wait: StopWait): StopLog {
  const ids = shards.map((s) => s.shardId);
  const waiting = shards.filter((s) => s.inFlight > 0);
  const unacked = Object.fromEntries(waiting.map((s) => [s.shardId, s.inFlight] as const));
  const count = waiting.reduce((sum, s) => sum + s.inFlight, 0);
  const leases = `${ids.length} lease${ids.length === 1 ? '' : 's'}`;
  if (count === 0) return { obj: { shards: ids }, msg: `kinsumer: stopping: final commits and releases of ${leases}` };
  const records = `${count} unacked record${count === 1 ? '' : 's'}`;
  const { drainMs, quietMs } = wait;
  if (drainMs <= 0) {
    return {
      obj: { shards: ids, unacked },
      msg: `kinsumer: stopping after a fatal error: not waiting for ${records} (they go to the next owner); final commits and releases of ${leases}`,
    };
  }
  if (quietMs !== undefined) {
    return {
      obj: { shards: ids, unacked, drainBoundMs: drainMs, quietMs },
      msg: `kinsumer: stopping with nobody subscribed (the pipeline ended, perhaps by an error): waiting for ${records} only while acks keep coming `
        + `(${quietMs} ms without one, ${drainMs} ms in all), then final commits and releases of ${leases}`,
    };
  }
  return {
    obj: { shards: ids, unacked, drainBoundMs: drainMs },
    msg: `kinsumer: stopping: waiting up to ${drainMs} ms for ${records} to be acked, then final commits and releases of ${leases}`,
  };
}
