// The metadata table (`<app>_metadata`): the leader lock (item `Leader`) and the shard cache (item
// `ShardCache`), in the Go kinsumer's format. The cache keeps Go's `ShardIDs` (sorted unfinished
// shard ids) and adds `ShardInfo`: every cached shard with its parents and state, as gzip-compressed
// JSON, so thousands of shards stay far below DynamoDB's 400 KB item limit.
//
// A third item, `GroupEpoch`, is this library's alone: a counter every leaving member bumps after
// releasing its shards, which the others poll (cheaply: eventually consistent) so that they take
// those shards over within a poll instead of at their next shard check. The Go kinsumer reads only
// `Leader` and `ShardCache`, by key, so the item is invisible to it.
//
// The lock expires by local observation (src/lease/row-observer.ts): a client takes it over once it has
// seen the item unchanged for leaseTtlMs, with a write conditioned on the item being as seen.
import { gunzipSync, gzipSync } from 'node:zlib';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { type Observable, catchError, concatMap, defer, map, of, throwError } from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { compareIds } from '../group/compare-ids.js';
import { RowObserver, observedExpired } from '../lease/row-observer.js';
import type { CachedShard, Leader, MetadataStore, ShardCache } from '../ports/coordination.js';
import { AttributeFormatError, nanosFromMillis, readIdList, readInteger, readString, rfc1123z, stringOrNull, timestampAttributes } from './codec.js';
import type { Dynamo, Item } from './dynamo.js';
import { tableError } from './table-error.js';

/** Keys and attribute names of `<app>_metadata`: the Go kinsumer's, plus `ShardInfo` and the `GroupEpoch` item. */
export const METADATA_ATTRIBUTES = {
  key: 'Key',
  leaderKey: 'Leader',
  shardCacheKey: 'ShardCache',
  id: 'ID',
  name: 'Name',
  lastUpdate: 'LastUpdate',
  shardIds: 'ShardIDs',
  shardInfo: 'ShardInfo',
  groupEpochKey: 'GroupEpoch',
  epoch: 'Epoch',
} as const;

const A = METADATA_ATTRIBUTES;

/** Options of {@link DynamoMetadataStore}. */
export interface DynamoMetadataStoreOptions {
  readonly dynamo: Dynamo;
  /** The metadata table, `<app>_metadata`. */
  readonly table: string;
  readonly clientId: string;
  readonly clientName: string;
  /** A leader lock this client has seen unchanged for this long (on its own clock) may be taken over. */
  readonly leaseTtlMs: number;
  /**
   * Milliseconds since the epoch on the wall clock, only written (`LastUpdate`). Pass
   * `() => scheduler.now()` so virtual time ages the lock too.
   */
  readonly now: () => number;
  /**
   * Milliseconds on a monotonic clock: what this client observes expires by differences of it,
   * never of `now`, so a step of the wall clock moves no expiry. Default: `now` (as virtual time in
   * tests wants it); the Kinsumer passes its `clock.elapsedNow`.
   */
  readonly elapsedNow?: () => number;
}

/**
 * {@link MetadataStore} on the DynamoDB metadata table. AWS errors pass through untouched, except
 * a missing table (`TableNotFoundError`) and a failed lock condition (an answer: `false`).
 */
export class DynamoMetadataStore implements MetadataStore {
  readonly #options: DynamoMetadataStoreOptions;
  readonly #lock = new RowObserver();
  readonly #elapsedNow: () => number;

  constructor(options: DynamoMetadataStoreOptions) {
    this.#options = options;
    this.#elapsedNow = options.elapsedNow ?? options.now;
  }

  acquireLeadership(): Observable<boolean> {
    // Go's condition without its clock comparison: ours, free, NULL-typed or heartbeat-less.
    const renew$ = this.#putLock('#id = :me OR attribute_not_exists(#id) OR attribute_type(#id, :null) OR attribute_not_exists(#lastUpdate)', {
      ':me': { S: this.#options.clientId }, ':null': { S: 'NULL' },
    });
    // Held by another: taken over once this client has seen the item unchanged for the TTL, as seen.
    const takeOver$ = this.#get(A.leaderKey).pipe(concatMap((item) => {
      if (item === undefined || !this.#expired(item)) return of(false);
      const seenId = item[A.id];
      const seenLastUpdate = item[A.lastUpdate];
      if (seenId === undefined || seenLastUpdate === undefined) return of(false);
      return this.#putLock('#id = :seenId AND #lastUpdate = :seenLastUpdate', { ':seenId': seenId, ':seenLastUpdate': seenLastUpdate });
    }));
    return renew$.pipe(
      concatMap((held) => (held ? of(true) : takeOver$)),
      catchError((error: unknown) => tableError(this.#options.table, error)),
    );
  }

  /** Writes the lock as this client's, conditioned on `condition`: emits whether it was written. */
  #putLock(condition: string, values: Record<string, AttributeValue>): Observable<boolean> {
    const { dynamo, table, clientId, clientName, now } = this.#options;
    return defer(() => dynamo.putItem({
      TableName: table,
      Item: {
        [A.key]: { S: A.leaderKey },
        [A.id]: { S: clientId },
        [A.name]: stringOrNull(clientName),
        ...timestampAttributes(A.lastUpdate, now()),
      },
      ConditionExpression: condition,
      ExpressionAttributeNames: { '#id': A.id, '#lastUpdate': A.lastUpdate },
      ExpressionAttributeValues: values,
    })).pipe(
      map(() => true),
      catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? of(false) : throwError(() => error))),
    );
  }

  /** Records the `Leader` item as seen now; `true` once this client has seen it unchanged for the TTL. */
  #expired(item: Item): boolean {
    const unchangedForMs = this.#lock.see(A.leaderKey, JSON.stringify([item[A.id], item[A.lastUpdate]]), this.#elapsedNow());
    return observedExpired(unchangedForMs, this.#options.leaseTtlMs);
  }

  stepDown(): Observable<boolean> {
    const { dynamo, table, clientId, now } = this.#options;
    return defer(() => {
      const nowMs = now();
      return dynamo.updateItem({
        TableName: table,
        Key: { [A.key]: { S: A.leaderKey } },
        // As Go does: ID removed (not NULL), LastUpdate moved.
        UpdateExpression: 'REMOVE #id SET #lastUpdate = :lastUpdate, #lastUpdateRfc = :lastUpdateRfc',
        ConditionExpression: '#id = :me',
        ExpressionAttributeNames: { '#id': A.id, '#lastUpdate': A.lastUpdate, '#lastUpdateRfc': `${A.lastUpdate}RFC` },
        ExpressionAttributeValues: {
          ':me': { S: clientId },
          ':lastUpdate': { N: nanosFromMillis(nowMs).toString() },
          ':lastUpdateRfc': { S: rfc1123z(nowMs) },
        },
        ReturnValues: 'NONE',
      }).pipe(
        map(() => true),
        catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? of(false) : throwError(() => error))),
      );
    }).pipe(catchError((error: unknown) => tableError(this.#options.table, error)));
  }

  leader(): Observable<Leader | undefined> {
    return this.#get(A.leaderKey).pipe(map((item) => {
      const holder = item === undefined ? undefined : decodeLeader(item);
      return holder !== undefined && item !== undefined && !this.#expired(item) ? holder : undefined;
    }));
  }

  readShardCache(): Observable<ShardCache | undefined> {
    return this.#get(A.shardCacheKey).pipe(map((item) => (item === undefined ? undefined : decodeShardCache(item))));
  }

  writeShardCache(shards: readonly CachedShard[]): Observable<void> {
    const { dynamo, table, now } = this.#options;
    return defer(() => dynamo.putItem({ TableName: table, Item: encodeShardCache(shards, now()) }))
      .pipe(catchError((error: unknown) => tableError(this.#options.table, error)));
  }

  groupEpoch(): Observable<number> {
    // Half the price of a strongly consistent read, and polled often: a read that lags a bump only
    // delays the take-over by a poll, and the check it triggers reads the clients table strongly.
    // Not retried by the SDK (Dynamo.pollItem): a throttled poll slows the poll, never the lease writes.
    const { dynamo, table } = this.#options;
    const read$ = defer(() => dynamo.pollItem({ TableName: table, Key: { [A.key]: { S: A.groupEpochKey } }, ConsistentRead: false }))
      .pipe(catchError((error: unknown) => tableError(table, error)));
    return read$.pipe(map((item) => {
      const epoch = item === undefined ? undefined : readable(() => readInteger(item, A.epoch));
      return Number(epoch ?? 0n);
    }));
  }

  bumpGroupEpoch(): Observable<void> {
    const { dynamo, table, clientId, now } = this.#options;
    return defer(() => {
      const nowMs = now();
      // ID and LastUpdate say, for humans, who left last and when.
      return dynamo.updateItem({
        TableName: table,
        Key: { [A.key]: { S: A.groupEpochKey } },
        UpdateExpression: 'ADD #epoch :one SET #id = :me, #lastUpdate = :lastUpdate, #lastUpdateRfc = :lastUpdateRfc',
        ExpressionAttributeNames: { '#epoch': A.epoch, '#id': A.id, '#lastUpdate': A.lastUpdate, '#lastUpdateRfc': `${A.lastUpdate}RFC` },
        ExpressionAttributeValues: {
          ':one': { N: '1' },
          ':me': { S: clientId },
          ':lastUpdate': { N: nanosFromMillis(nowMs).toString() },
          ':lastUpdateRfc': { S: rfc1123z(nowMs) },
        },
        ReturnValues: 'NONE',
      });
    }).pipe(
      map(() => undefined),
      catchError((error: unknown) => tableError(this.#options.table, error)),
    );
  }

  #get(key: string, consistent = true): Observable<Item | undefined> {
    const { dynamo, table } = this.#options;
    return defer(() => dynamo.getItem({ TableName: table, Key: { [A.key]: { S: key } }, ConsistentRead: consistent }))
      .pipe(catchError((error: unknown) => tableError(this.#options.table, error)));
  }

}

/**
 * The `Leader` item's holder; `undefined` when nobody holds it (ID absent or NULL), it has no
 * LastUpdate, or it cannot be read (the lock's own condition, on the server, decides who takes it).
 */
export function decodeLeader(item: Item): Leader | undefined {
  return readable(() => {
    const id = readString(item, A.id);
    const lastUpdateNs = readInteger(item, A.lastUpdate);
    if (id === undefined || lastUpdateNs === undefined) return undefined;
    return { id, name: readString(item, A.name), lastUpdateNs };
  });
}

// ShardInfo, version 1: gzip of {"v":1,"shards":[[id, state, ...parentIds], ...]}, state "o" open,
// "c" closed, "f" finished. Short keys and arrays because shard ids repeat as parents; gzip folds the
// common "shardId-0000…" prefixes (10,000 shards with lineage take about 40 KB).
const INFO_VERSION = 1;
type InfoState = 'o' | 'c' | 'f';

/** The `ShardCache` item for `shards`, written at `nowMs`. */
export function encodeShardCache(shards: readonly CachedShard[], nowMs: number): Item {
  const sorted = [...shards].sort((a, b) => compareIds(a.shardId, b.shardId));
  const duplicate = sorted.find((s, i) => i > 0 && s.shardId === sorted[i - 1]?.shardId);
  if (duplicate !== undefined) throw new TypeError(`shard ${duplicate.shardId} is listed twice`);
  const rows = sorted.map((shard): string[] => {
    if (shard.open && shard.finished) throw new TypeError(`shard ${shard.shardId} cannot be open and finished`);
    const state: InfoState = shard.finished ? 'f' : shard.open ? 'o' : 'c';
    return [shard.shardId, state, ...shard.parentShardIds];
  });
  const info = gzipSync(JSON.stringify({ v: INFO_VERSION, shards: rows }), { level: 9 });
  return {
    [A.key]: { S: A.shardCacheKey },
    [A.shardIds]: { L: sorted.filter((s) => !s.finished).map((s) => ({ S: s.shardId })) },
    [A.shardInfo]: { B: new Uint8Array(info) },
    ...timestampAttributes(A.lastUpdate, nowMs),
  };
}

/**
 * The `ShardCache` item as kinsumer or the Go kinsumer wrote it; `undefined` when it cannot be read
 * (like a missing cache, it is then rebuilt from the stream). Lineage that is missing, cannot be
 * decoded, or disagrees with `ShardIDs` (someone rewrote one and not the other) reads as unknown.
 */
function decodeShardCache(item: Item): ShardCache | undefined {
  return readable(() => {
    const shardIds = readIdList(item, A.shardIds) ?? [];
    const shards = decodeShardInfo(item[A.shardInfo]);
    const unfinished = shards?.filter((s) => !s.finished).map((s) => s.shardId);
    const agrees = unfinished !== undefined && unfinished.length === shardIds.length && unfinished.every((id, i) => id === shardIds[i]);
    return { shardIds, shards: agrees ? shards : undefined, lastUpdateNs: readInteger(item, A.lastUpdate) };
  });
}

/** `decode()`, or `undefined` when an attribute cannot be read. */
function readable<T>(decode: () => T | undefined): T | undefined {
  try {
    return decode();
  } catch (error) {
    if (error instanceof AttributeFormatError) return undefined;
    throw error;
  }
}

function decodeShardInfo(value: AttributeValue | undefined): CachedShard[] | undefined {
  if (value === undefined || !('B' in value) || !(value.B instanceof Uint8Array)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(gunzipSync(value.B).toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { v, shards } = parsed as { v?: unknown; shards?: unknown };
  if (v !== INFO_VERSION || !Array.isArray(shards)) return undefined;
  const decoded: CachedShard[] = [];
  for (const row of shards as unknown[]) {
    if (!Array.isArray(row) || !row.every((cell) => typeof cell === 'string' && cell !== '')) return undefined;
    const [shardId, state, ...parentShardIds] = row as string[];
    if (shardId === undefined || (state !== 'o' && state !== 'c' && state !== 'f')) return undefined;
    decoded.push({ shardId, parentShardIds, open: state === 'o', finished: state === 'f' });
  }
  const sorted = decoded.sort((a, b) => compareIds(a.shardId, b.shardId));
  return sorted.some((s, i) => i > 0 && s.shardId === sorted[i - 1]?.shardId) ? undefined : sorted;
}
