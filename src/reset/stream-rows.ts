// The rows the operator's tools touch in a group that reads several streams: which rows are a
// stream's (by key), whether the group is one at all (its shard list says), and clearing a dropped
// stream's rows.
import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { catchError, firstValueFrom, lastValueFrom, of, throwError } from 'rxjs';
import { CHECKPOINT_ATTRIBUTES } from '../dynamodb/checkpoint-row.js';
import type { Dynamo } from '../dynamodb/dynamo.js';
import { DynamoMetadataStore } from '../dynamodb/metadata-store.js';
import { tableError } from '../dynamodb/table-error.js';
import { ConditionExpression } from '../dynamodb/update-expression.js';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { ConfigError, TableNotFoundError } from '../errors/kinsumer-errors.js';
import { kinesisStreamSet } from '../kinesis/kinesis-source.js';
import { names, parseShardKey } from '../ports/stream-key.js';

const A = CHECKPOINT_ATTRIBUTES;

/**
 * Refuses to touch a group as the other kind: `--stream` (plain shard ids) on a group that reads
 * `streams` (keys), or `--streams` on a one-stream group, would write rows the group never reads
 * and leave its own as they were. Told by the shard list the group's leader keeps; a group that
 * never ran has none, and then nothing is refused.
 */
export async function checkGroupKind(dynamo: Dynamo, metadataTable: string, streams: boolean): Promise<void> {
  const store = new DynamoMetadataStore({ dynamo, table: metadataTable, clientId: 'kinsumer-reset', clientName: 'kinsumer-reset', leaseTtlMs: 1, now: Date.now });
  // A missing table is told by the reads that need it (the checkpoints table's first).
  const cache = await firstValueFrom(store.readShardCache().pipe(catchError((error: unknown) => (error instanceof TableNotFoundError ? of(undefined) : throwError(() => error)))));
  const [first] = cache?.shardIds ?? [];
  if (first === undefined) return;
  const keyed = parseShardKey(first) !== undefined;
  if (keyed && !streams) throw new ConfigError('streamName', 'this group reads several streams (its shards are keyed by stream): name them with streams (--streams)');
  if (!keyed && streams) throw new ConfigError('streams', 'this group reads one stream (its shards are plain shard ids): name it with streamName (--stream)');
}

/**
 * The keys of the listed shards of `streams` (as the group lists them), each stream's in its
 * ListShards order; a stream that is not found is a ConfigError (its rows can be cleared).
 */
export async function listedKeys(kinesis: KinesisClient, streams: readonly string[]): Promise<string[]> {
  const keys = (await firstValueFrom(kinesisStreamSet(kinesis, streams).listShards())).map((s) => s.shardId);
  const missing = streams.filter((entry) => !keys.some((key) => named(entry, key)));
  if (missing.length > 0) throw new ConfigError('streams', `not found: ${missing.join(', ')} (nothing to reset; clear a deleted stream's rows with clear: true, --clear)`);
  return keys;
}

/** Whether `entry` (a name or ARN) names the stream of a key. */
export function named(entry: string, key: string): boolean {
  const parsed = parseShardKey(key);
  return parsed !== undefined && names(entry, parsed.stream);
}

/** The keys of every row of the checkpoints table that belongs to one of `streams`, in any of its incarnations, sorted. */
export async function rowsOf(dynamo: Dynamo, table: string, streams: readonly string[]): Promise<string[]> {
  const items = await firstValueFrom(dynamo.scanAll({ TableName: table, ConsistentRead: true, ProjectionExpression: '#s', ExpressionAttributeNames: { '#s': A.shard } }));
  return items.map((item) => item[A.shard]?.S ?? '').filter((key) => streams.some((entry) => named(entry, key))).sort();
}

/**
 * Deletes a row as read: unforced, only while its owner, counter and last update are still what
 * was read (a capture meanwhile keeps it); forced, while its counter is. `false`: it changed.
 * Deleting fences like a reset: an owner's next renewal or commit finds no row and loses the lease.
 */
export async function clearRow(dynamo: Dynamo, table: string, key: string, force: boolean): Promise<boolean> {
  const Key = { [A.shard]: { S: key } };
  const item = await firstValueFrom(dynamo.getItem({ TableName: table, Key, ConsistentRead: true }));
  if (item === undefined) return true;
  const condition = new ConditionExpression();
  for (const attribute of force ? [A.leaseCounter] : [A.leaseCounter, A.lastUpdate, A.ownerId]) condition.unchanged(attribute, item[attribute]);
  try {
    await lastValueFrom(dynamo.deleteItem({ TableName: table, Key, ...condition.conditionInput() }), { defaultValue: undefined });
    return true;
  } catch (error) {
    if (classifyAwsError(error) === 'conditional') return false;
    return lastValueFrom(tableError(table, error));
  }
}
