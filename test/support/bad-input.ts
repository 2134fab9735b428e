// Shared pieces of the bad-input suites: a fresh stream and tables per test, and a recorder of
// what a consumer's records$ and events$ did.
import { type Shard } from '@aws-sdk/client-kinesis';
import { type Kinsumer, createTables, type KinsumerEvent, type KinsumerOptions, type KinsumerRecord } from '../../src/index.js';
import { createStream, listShards, type LocalAws } from '../../src/testing/index.js';
import { uniqueName } from './local.js';
import { FAST } from './memory-group.js';

/** Options of a consumer on a fresh stream (and, unless told otherwise, fresh tables). */
export type FreshOptions = KinsumerOptions & { readonly streamName: string };

/** Creates a stream of `shards` shards and the application's tables; returns consumer options. */
export async function freshSetup(local: LocalAws, prefix: string, options: { shards?: number; tables?: boolean } = {}): Promise<FreshOptions> {
  const streamName = uniqueName(prefix);
  const applicationName = uniqueName(`${prefix}-app`);
  await createStream(local.kinesis, streamName, options.shards ?? 1);
  if (options.tables ?? true) await createTables({ dynamodb: local.dynamodb, applicationName });
  return { ...FAST, streamName, applicationName, kinesis: local.kinesis, dynamodb: local.dynamodb };
}

/** The explicit hash key that routes a record to each shard, by shard id. */
export async function hashKeysByShard(local: LocalAws, streamName: string): Promise<Map<string, string>> {
  const shards: Shard[] = await listShards(local.kinesis, streamName);
  return new Map(shards.map((s) => [s.ShardId ?? '', s.HashKeyRange?.StartingHashKey ?? '0']));
}

/** How a records$ subscription ended, if it did. */
export type Outcome = { readonly kind: 'running' } | { readonly kind: 'complete' } | { readonly kind: 'error'; readonly error: unknown };

/** A consumer whose records$ (acking each record unless `ack` says no) and events$ are recorded. */
export interface Recorded {
  readonly consumer: Kinsumer;
  readonly records: KinsumerRecord[];
  readonly events: KinsumerEvent[];
  outcome(): Outcome;
  /** `true` once events$ completed (the instance is stopped for good). */
  eventsComplete(): boolean;
  /** The `error` events, as [shardId, error] pairs. */
  errors(): Array<{ readonly shardId: string | undefined; readonly error: Error }>;
}

/** Starts `consumer` (subscribes events$, then records$) and records what happens. */
export function record(consumer: Kinsumer, ack: (record: KinsumerRecord) => boolean = () => true): Recorded {
  const records: KinsumerRecord[] = [];
  const events: KinsumerEvent[] = [];
  let outcome: Outcome = { kind: 'running' };
  let eventsComplete = false;
  consumer.events$.subscribe({ next: (event) => events.push(event), complete: () => { eventsComplete = true; } });
  consumer.records$.subscribe({
    next: (r) => {
      records.push(r);
      if (ack(r)) r.ack();
    },
    complete: () => { outcome = { kind: 'complete' }; },
    error: (error: unknown) => { outcome = { kind: 'error', error }; },
  });
  return {
    consumer,
    records,
    events,
    outcome: () => outcome,
    eventsComplete: () => eventsComplete,
    errors: () => events.flatMap((e) => (e.type === 'error' ? [{ shardId: e.shardId, error: e.error }] : [])),
  };
}

/** The record's data as UTF-8 text. */
export function text(record: KinsumerRecord): string {
  return new TextDecoder().decode(record.data);
}
