// The names of kinsumer's OpenTelemetry instruments, attributes and spans (design §7.4: binding).
import type { ResolvedOptions, StreamRef } from '../options.js';
import { parseShardKey } from '../ports/stream-key.js';

/** Instrumentation scope of kinsumer's meter and tracer. */
export const SCOPE = 'kinsumer';

/** Metric names. */
export const METRIC = {
  delivered: 'kinsumer.records.delivered',
  acked: 'kinsumer.records.acked',
  checkpoints: 'kinsumer.checkpoints.written',
  retries: 'kinsumer.aws.retries',
  millisBehindLatest: 'kinsumer.shard.millis_behind_latest',
  pending: 'kinsumer.shard.pending',
  leasesHeld: 'kinsumer.leases.held',
} as const;

/** Attribute names. */
export const ATTRIBUTE = {
  shardId: 'kinsumer.shard_id',
  stream: 'kinsumer.stream',
  /** On `kinsumer.aws.retries`: what was retried (`commit`, `getRecords`, `prepare`, ...). */
  operation: 'kinsumer.operation',
  /** On handler spans: the handler call's attempt (1 for the first). */
  attempt: 'kinsumer.attempt',
} as const;

/** The stream's name (the tail of an ARN): the value of `kinsumer.stream` and of span names. */
export function streamName(stream: StreamRef): string {
  if (stream.streamName !== undefined) return stream.streamName;
  const arn = stream.streamArn;
  return arn.slice(arn.lastIndexOf('/') + 1);
}

/**
 * The name of the stream a shard of the group is read from: the group's one stream, or, in a group
 * that reads `streams`, the stream its key names.
 */
export function streamOfShard(options: Pick<ResolvedOptions, 'stream'>, shardId: string): string {
  if (options.stream !== undefined) return streamName(options.stream);
  return parseShardKey(shardId)?.stream.streamName ?? '';
}

/**
 * {@link streamOfShard} of a group's stream option, as a function made outside any client's scope:
 * a meter nobody collects keeps it, and it must not keep a stopped client (R13).
 */
export function shardStreams(stream: StreamRef | undefined): (shardId: string) => string {
  return (shardId) => streamOfShard({ stream }, shardId);
}
