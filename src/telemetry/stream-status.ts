// `status()` per stream: the held shards of each stream summed up. Pure.
import type { ShardStatus } from './status.js';

/** One stream in `KinsumerStatus.streams`: what this client holds of it. */
export interface StreamStatus {
  /** The stream's name. */
  readonly streamName: string;
  /** Shards of it this client holds. */
  readonly shards: number;
  /** Records emitted and not yet under the checkpoint, over those shards. */
  readonly pending: number;
  /** Records emitted and not acked yet, over those shards. */
  readonly inFlight: number;
  /** The largest `millisBehindLatest` of those shards; `undefined` before any was read. */
  readonly millisBehindLatest: number | undefined;
}

/** Per stream of `shards`, in the order the streams first appear. */
export function streamStatuses(shards: readonly ShardStatus[]): StreamStatus[] {
  const byStream = new Map<string, { shards: number; pending: number; inFlight: number; millisBehindLatest: number | undefined }>();
  for (const shard of shards) {
    const sum = byStream.get(shard.streamName) ?? { shards: 0, pending: 0, inFlight: 0, millisBehindLatest: undefined };
    sum.shards += 1;
    sum.pending += shard.pending;
    sum.inFlight += shard.inFlight;
    if (shard.millisBehindLatest !== undefined) sum.millisBehindLatest = Math.max(sum.millisBehindLatest ?? 0, shard.millisBehindLatest);
    byStream.set(shard.streamName, sum);
  }
  return [...byStream].map(([streamName, sum]) => ({ streamName, ...sum }));
}
