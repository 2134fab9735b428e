// What the group tests of issue 32 share: the library's default timings (the bounds they state —
// hand-off, failover, drain, DynamoDB calls — are for those), a steady producer on virtual time,
// and who holds what.
import { EMPTY, type Subscription, defer, repeat, timer } from 'rxjs';
import { DEFAULTS } from '../../src/index.js';
import type { MemoryGroup } from './memory-group.js';

/** The default timings, which the hand-off, failover and cost bounds are stated for. */
export const DEFAULT_TIMINGS = {
  throttleDelayMs: DEFAULTS.throttleDelayMs,
  commitFrequencyMs: DEFAULTS.commitFrequencyMs,
  shardCheckFrequencyMs: DEFAULTS.shardCheckFrequencyMs,
  leaderActionFrequencyMs: DEFAULTS.leaderActionFrequencyMs,
  leaseTtlMs: DEFAULTS.leaseTtlMs,
  shutdownTimeoutMs: DEFAULTS.shutdownTimeoutMs,
} as const;

/** A record into every open shard every `everyMs` of virtual time. */
export function produceEvery(group: MemoryGroup, everyMs: number): Subscription {
  let n = 0;
  // A fresh timer each time: a periodic one chains its VirtualActions, and unsubscribing a chain
  // thousands deep overflows the stack.
  return defer(() => {
    for (const shardId of group.stream.openShardIds()) {
      group.stream.putRecords([{ partitionKey: `k${n}`, data: `r${n}` }], { shardId });
      n += 1;
    }
    return EMPTY;
  }).pipe(repeat({ delay: () => timer(everyMs, group.scheduler) })).subscribe();
}

/** The shards `id` holds, sorted. */
export function heldBy(group: MemoryGroup, id: string): string[] {
  return [...group.owners()].filter(([, owner]) => owner === id).map(([shardId]) => shardId).sort();
}
