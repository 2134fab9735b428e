// The streams an import or an export moves, and how each names its shards in kinsumer's table:
// a one-stream group's rows are shard ids; a `streams` group's are keys
// `<account>:<stream>:<creationEpoch>:<shardId>` (ports/stream-key.ts), of the stream as it is now.
import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { firstValueFrom } from 'rxjs';
import { StreamNotFoundError } from '../errors/kinsumer-errors.js';
import { KinesisStream, type StreamSummary } from '../kinesis/kinesis.js';
import type { StreamRef } from '../options.js';
import { type StreamIdentity, accountOfArn, nameOf, parseShardKey, shardKey, streamIdentity } from '../ports/stream-key.js';
import type { ShardInfo } from '../ports/stream.js';
import type { StreamIdentity as KclStream } from './stream-leases.js';

/** A stream moved, as it is now. */
export interface StreamTarget {
  /** As given (or, for `'all'`, its name). */
  readonly entry: string;
  readonly stream: KinesisStream;
  readonly summary: StreamSummary;
  /** Its shards by their own ids, in ListShards order. */
  readonly shards: readonly ShardInfo[];
  /** Which KCL leases are its (name, account, creation time). */
  readonly kcl: KclStream;
  /** A `streams` group's name of it; `undefined` for a one-stream group. */
  readonly identity: StreamIdentity | undefined;
}

/** The stream of a one-stream group: its "not found" is an error, as it always was. */
export async function oneStream(kinesis: KinesisClient, ref: StreamRef): Promise<StreamTarget> {
  const stream = new KinesisStream(kinesis, ref);
  const [summary, shards] = await Promise.all([firstValueFrom(stream.describeSummary()), firstValueFrom(stream.listShards())]);
  return { entry: stream.streamLabel, stream, summary, shards, kcl: kclStream(summary), identity: undefined };
}

/** The streams of a `streams` group, as they are now; those not found are named apart (nothing of them to read). */
export async function manyStreams(kinesis: KinesisClient, entries: readonly string[]): Promise<{ readonly targets: StreamTarget[]; readonly missing: string[] }> {
  const found = await Promise.all(entries.map(async (entry): Promise<StreamTarget | string> => {
    try {
      const target = await oneStream(kinesis, entry.startsWith('arn:') ? { streamArn: entry } : { streamName: entry });
      const { streamArn, creationTimestamp } = target.summary;
      if (creationTimestamp === undefined) throw new StreamNotFoundError(entry, { cause: new Error('DescribeStreamSummary named no creation time') });
      return { ...target, entry, identity: streamIdentity(accountOfArn(streamArn) ?? '', nameOf(streamArn), creationTimestamp) };
    } catch (error) {
      if (error instanceof StreamNotFoundError) return entry;
      throw error;
    }
  }));
  return {
    targets: found.filter((t): t is StreamTarget => typeof t !== 'string'),
    missing: found.filter((t): t is string => typeof t === 'string'),
  };
}

/** kinsumer's row key of a shard of `target`. */
export function rowKey(target: StreamTarget, shardId: string): string {
  return target.identity === undefined ? shardId : shardKey(target.identity, shardId);
}

/** kinsumer's rows of `target`, by the shard's own id (a one-stream group's rows are all its stream's). */
export function rowsOf<T>(target: StreamTarget, rows: ReadonlyMap<string, T>): Map<string, T> {
  const { identity } = target;
  if (identity === undefined) return new Map(rows);
  const own = new Map<string, T>();
  for (const [key, row] of rows) {
    const parsed = parseShardKey(key);
    if (parsed?.stream.serialized === identity.serialized) own.set(parsed.shardId, row);
  }
  return own;
}

function kclStream(summary: StreamSummary): KclStream {
  return { streamName: summary.streamName, accountId: accountOfArn(summary.streamArn), creationMs: summary.creationTimestamp?.getTime() };
}
