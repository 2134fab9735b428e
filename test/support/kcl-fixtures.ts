// Streams, records and consumers for the KCL import/export tests: records put into chosen shards
// (by explicit hash key), plain or as KPL aggregates, and a kinsumer consumer that records what it
// delivers, in order, per shard.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { Kinsumer, type KinsumerEvent, type KinsumerRecord } from '../../src/index.js';
import { listShards, putRecords } from '../../src/testing/index.js';
import { aggregate } from './kpl-aggregate.js';
import { type LocalAws, startLocalAws } from '../../src/testing/index.js';
import { eventually } from './local.js';
import { FAST } from './memory-group.js';
import { type Tier, skipUnless } from './tiers.js';

/** A record to put: a plain one (its text), or a KPL aggregate of user records (their texts). */
export type Put = string | { readonly aggregate: readonly string[] };

/** A put record: its sequence number and the user records it holds (one for a plain record). */
export interface PutRecord {
  readonly sequenceNumber: string;
  readonly texts: readonly string[];
  readonly aggregated: boolean;
}

/** The starting hash key of each shard of the stream, for putting records into one shard. */
export async function hashKeys(kinesis: KinesisClient, stream: string): Promise<Map<string, string>> {
  return new Map((await listShards(kinesis, stream)).map((s) => [s.ShardId ?? '', s.HashKeyRange?.StartingHashKey ?? '0']));
}

/** Puts the records, in order, into the shard whose range starts at `hashKey`, one call each (so their order is theirs). */
export async function putInto(kinesis: KinesisClient, stream: string, hashKey: string, records: readonly Put[]): Promise<PutRecord[]> {
  const put: PutRecord[] = [];
  for (const record of records) {
    const body = typeof record === 'string' ? { partitionKey: 'k', data: record } : aggregate(record.aggregate.map((text) => ({ partitionKey: 'k', data: text })));
    const [result] = await putRecords(kinesis, stream, [{ ...body, explicitHashKey: hashKey }]);
    if (result === undefined) throw new Error('nothing put');
    put.push({ sequenceNumber: result.sequenceNumber, texts: typeof record === 'string' ? [record] : record.aggregate, aggregated: typeof record !== 'string' });
  }
  return put;
}

/** The user records' texts of `records`, from user record `fromIndex` of record `fromRecord` on. */
export function textsFrom(records: readonly PutRecord[], fromRecord: number, fromIndex = 0): string[] {
  return records.slice(fromRecord).flatMap((r, i) => (i === 0 ? r.texts.slice(fromIndex) : r.texts));
}

/** A kinsumer consumer that acks every record and keeps what it delivered. */
export class Collector {
  readonly kinsumer: Kinsumer;
  readonly received: KinsumerRecord[] = [];
  readonly events: KinsumerEvent[] = [];

  constructor(options: { kinesis: KinesisClient; dynamodb: DynamoDBClient; stream: string; app: string; clientId?: string }) {
    this.kinsumer = new Kinsumer({
      ...FAST, streamName: options.stream, applicationName: options.app, kinesis: options.kinesis, dynamodb: options.dynamodb,
      clientId: options.clientId ?? 'collector',
    });
    this.kinsumer.events$.subscribe((event) => this.events.push(event));
    this.kinsumer.records$.subscribe((record) => {
      this.received.push(record);
      record.ack();
    });
  }

  /** The texts delivered from a shard, in delivery order. */
  texts(shardId: string): string[] {
    return this.received.filter((r) => r.shardId === shardId).map((r) => r.text());
  }

  /** Where in the delivery order each text of the shard came (for parent-before-child checks). */
  order(shardId: string): number[] {
    return this.received.flatMap((r, i) => (r.shardId === shardId ? [i] : []));
  }

  /** Waits until every one of `texts` was delivered from its shard (records after them come later, in order). */
  async delivered(expected: ReadonlyMap<string, string>, what: string): Promise<void> {
    await eventually(() => [...expected].every(([shardId, text]) => this.texts(shardId).includes(text)), what, 30_000);
  }

  /** Waits until the consumer has read each shard once (its first GetRecords answered): a LATEST start is fixed from then on. */
  async reading(shardIds: readonly string[]): Promise<void> {
    await eventually(() => shardIds.every((id) => this.kinsumer.status().shards.some((s) => s.shardId === id && s.millisBehindLatest !== undefined)), `reading ${shardIds.join(', ')}`, 30_000);
  }

  async stop(): Promise<void> {
    await this.kinsumer.stop();
  }
}

/** The tier's servers for the enclosing describe block (skipped, saying why, where the tier cannot run). */
export function useTier(tier: Tier): () => LocalAws {
  let local: LocalAws | undefined;
  skipUnless(tier);
  before(async function () {
    this.timeout(180_000);
    local = await startLocalAws(tier.options);
  });
  after(async () => { await local?.stop(); });
  return () => {
    if (local === undefined) throw new Error(`the ${tier.name} servers are not running`);
    return local;
  };
}
