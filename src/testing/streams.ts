import {
  CreateStreamCommand, DeleteStreamCommand, DescribeStreamSummaryCommand, ListShardsCommand,
  MergeShardsCommand, PutRecordsCommand, SplitShardCommand, type KinesisClient, type Shard,
} from '@aws-sdk/client-kinesis';

/** A record to put: data as bytes or a string (UTF-8). */
export interface RecordToPut {
  /** Decides the shard (its MD5 hash), unless `explicitHashKey` is given. */
  readonly partitionKey: string;
  /** The payload; a string is encoded as UTF-8. */
  readonly data: Uint8Array | string;
  /** A decimal hash key that picks the shard directly, overriding the partition key's hash. */
  readonly explicitHashKey?: string;
}

/** Where a put record landed. */
export interface PutResult {
  /** The shard the record went to. */
  readonly shardId: string;
  /** The sequence number Kinesis gave it. */
  readonly sequenceNumber: string;
}

/** Polling options of the waiting helpers. */
export interface WaitOptions {
  /** Give up (throw) after this many milliseconds. Default 30000. */
  readonly timeoutMs?: number;
  /** Milliseconds between two checks. Default 25. */
  readonly intervalMs?: number;
}

/** Creates a stream with `shardCount` shards and waits until it is ACTIVE. */
export async function createStream(kinesis: KinesisClient, streamName: string, shardCount: number, wait: WaitOptions = {}): Promise<void> {
  await kinesis.send(new CreateStreamCommand({ StreamName: streamName, ShardCount: shardCount }));
  await waitForStreamStatus(kinesis, streamName, 'ACTIVE', wait);
}

/** Deletes a stream and waits until it is gone. */
export async function deleteStream(kinesis: KinesisClient, streamName: string, wait: WaitOptions = {}): Promise<void> {
  await kinesis.send(new DeleteStreamCommand({ StreamName: streamName }));
  await waitForStreamStatus(kinesis, streamName, 'GONE', wait);
}

/**
 * Waits until the stream has the status (`'GONE'`: deleted). The SDK's waiters start at a 10 s
 * delay unless told otherwise; local servers change state in milliseconds, so poll quickly.
 */
export async function waitForStreamStatus(
  kinesis: KinesisClient, streamName: string, status: 'ACTIVE' | 'GONE', wait: WaitOptions = {},
): Promise<void> {
  const deadline = Date.now() + (wait.timeoutMs ?? 30_000);
  for (;;) {
    let current: string | undefined;
    try {
      const summary = await kinesis.send(new DescribeStreamSummaryCommand({ StreamName: streamName }));
      current = summary.StreamDescriptionSummary?.StreamStatus;
    } catch (error) {
      if ((error as Error).name !== 'ResourceNotFoundException') throw error;
      current = 'GONE';
    }
    if (current === status) return;
    if (Date.now() > deadline) throw new Error(`stream ${streamName} is ${String(current)}, not ${status}, after ${wait.timeoutMs ?? 30_000} ms`);
    await new Promise((resolve) => setTimeout(resolve, wait.intervalMs ?? 25));
  }
}

/**
 * Every shard of the stream, open and closed. Sends `NextToken` only when the service returned
 * one: kinesalite never pages and crashes on a request that carries one.
 */
export async function listShards(kinesis: KinesisClient, streamName: string): Promise<Shard[]> {
  const shards: Shard[] = [];
  let nextToken: string | undefined;
  do {
    const page = await kinesis.send(new ListShardsCommand(nextToken === undefined ? { StreamName: streamName } : { NextToken: nextToken }));
    shards.push(...(page.Shards ?? []));
    nextToken = page.NextToken;
  } while (nextToken !== undefined);
  return shards;
}

/** Ids of the open shards (no ending sequence number), sorted. */
export async function openShardIds(kinesis: KinesisClient, streamName: string): Promise<string[]> {
  const shards = await listShards(kinesis, streamName);
  return shards.filter((s) => s.SequenceNumberRange?.EndingSequenceNumber === undefined).map((s) => s.ShardId ?? '').sort();
}

const encoder = new TextEncoder();

/**
 * Puts records (in batches of 500, re-sending the ones the service refused) and returns where each
 * landed, in input order.
 */
export async function putRecords(kinesis: KinesisClient, streamName: string, records: readonly RecordToPut[]): Promise<PutResult[]> {
  const results: PutResult[] = new Array<PutResult>(records.length);
  for (let start = 0; start < records.length; start += 500) {
    let pending = records.slice(start, start + 500).map((record, offset) => ({ record, index: start + offset }));
    for (let attempt = 0; pending.length > 0; attempt += 1) {
      if (attempt > 20) throw new Error(`PutRecords kept refusing ${pending.length} records`);
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** attempt)));
      const response = await kinesis.send(new PutRecordsCommand({
        StreamName: streamName,
        Records: pending.map(({ record }) => ({
          PartitionKey: record.partitionKey,
          Data: typeof record.data === 'string' ? encoder.encode(record.data) : record.data,
          ...(record.explicitHashKey === undefined ? {} : { ExplicitHashKey: record.explicitHashKey }),
        })),
      }));
      const refused: typeof pending = [];
      (response.Records ?? []).forEach((entry, i) => {
        const item = pending[i];
        if (item === undefined) return;
        if (entry.ErrorCode !== undefined || entry.SequenceNumber === undefined || entry.ShardId === undefined) {
          refused.push(item);
        } else {
          results[item.index] = { shardId: entry.ShardId, sequenceNumber: entry.SequenceNumber };
        }
      });
      pending = refused;
    }
  }
  return results;
}

/**
 * Splits a shard at the middle of its hash key range, waits until the stream is ACTIVE again and
 * returns the ids of the two children.
 */
export async function splitShard(kinesis: KinesisClient, streamName: string, shardId: string, wait: WaitOptions = {}): Promise<string[]> {
  const before = await listShards(kinesis, streamName);
  const shard = before.find((s) => s.ShardId === shardId);
  const range = shard?.HashKeyRange;
  if (range?.StartingHashKey === undefined || range.EndingHashKey === undefined) throw new Error(`no shard ${shardId} in ${streamName}`);
  const middle = (BigInt(range.StartingHashKey) + BigInt(range.EndingHashKey)) / 2n + 1n;
  await kinesis.send(new SplitShardCommand({ StreamName: streamName, ShardToSplit: shardId, NewStartingHashKey: middle.toString() }));
  await waitForStreamStatus(kinesis, streamName, 'ACTIVE', wait);
  return childrenOf(kinesis, streamName, before, [shardId]);
}

/**
 * Merges two shards with adjacent hash key ranges, waits until the stream is ACTIVE again and
 * returns the id of the child.
 */
export async function mergeShards(kinesis: KinesisClient, streamName: string, shardId: string, adjacentShardId: string, wait: WaitOptions = {}): Promise<string> {
  const before = await listShards(kinesis, streamName);
  await kinesis.send(new MergeShardsCommand({ StreamName: streamName, ShardToMerge: shardId, AdjacentShardToMerge: adjacentShardId }));
  await waitForStreamStatus(kinesis, streamName, 'ACTIVE', wait);
  const [child] = await childrenOf(kinesis, streamName, before, [shardId, adjacentShardId]);
  if (child === undefined) throw new Error(`merge of ${shardId} and ${adjacentShardId} produced no child`);
  return child;
}

async function childrenOf(kinesis: KinesisClient, streamName: string, before: readonly Shard[], parents: readonly string[]): Promise<string[]> {
  const known = new Set(before.map((s) => s.ShardId));
  const after = await listShards(kinesis, streamName);
  return after
    .filter((s) => !known.has(s.ShardId) && (parents.includes(s.ParentShardId ?? '') || parents.includes(s.AdjacentParentShardId ?? '')))
    .map((s) => s.ShardId ?? '')
    .sort();
}

/** Two open shards whose hash key ranges touch, in hash order (candidates for {@link mergeShards}). */
export async function adjacentOpenShards(kinesis: KinesisClient, streamName: string): Promise<[string, string]> {
  const open = (await listShards(kinesis, streamName))
    .filter((s) => s.SequenceNumberRange?.EndingSequenceNumber === undefined)
    .sort((a, b) => (BigInt(a.HashKeyRange?.StartingHashKey ?? '0') < BigInt(b.HashKeyRange?.StartingHashKey ?? '0') ? -1 : 1));
  for (let i = 0; i + 1 < open.length; i += 1) {
    const [a, b] = [open[i], open[i + 1]];
    if (a && b && BigInt(a.HashKeyRange?.EndingHashKey ?? '-2') + 1n === BigInt(b.HashKeyRange?.StartingHashKey ?? '-1')) {
      return [a.ShardId ?? '', b.ShardId ?? ''];
    }
  }
  throw new Error(`no two adjacent open shards in ${streamName}`);
}
