// The clients table (`<app>_clients`) as group membership, in the Go kinsumer's row format
// (ID, Name, LastUpdate in Unix ns + LastUpdateRFC) plus `Shards`, the shards the client holds,
// so every client learns the current owners from this small table instead of scanning checkpoints.
import { type Observable, catchError, concatMap, defer, filter, from, map, of, throwError, toArray } from 'rxjs';
import { compareIds } from '../compare-ids.js';
import { classifyAwsError } from '../aws-errors.js';
import { REAP_CLIENTS_AFTER_MS, type LiveClient, type MembershipStore } from '../coordination-ports.js';
import { KinsumerError } from '../errors.js';
import { AttributeFormatError, nanosFromMillis, readIdList, readInteger, readString, stringOrNull, timestampAttributes } from './codec.js';
import type { Dynamo, Item } from './dynamo.js';
import { CorruptRowReporter } from './corrupt-rows.js';
import { tableError } from './table-error.js';

/** Attribute names of `<app>_clients`: the Go kinsumer's, plus `Shards`. */
export const CLIENT_ATTRIBUTES = {
  id: 'ID',
  name: 'Name',
  lastUpdate: 'LastUpdate',
  shards: 'Shards',
} as const;

const A = CLIENT_ATTRIBUTES;

/** Options of {@link DynamoMembershipStore}. */
export interface DynamoMembershipStoreOptions {
  readonly dynamo: Dynamo;
  /** The clients table, `<app>_clients`. */
  readonly table: string;
  readonly clientId: string;
  readonly clientName: string;
  /** A row not renewed for this long is not live. */
  readonly leaseTtlMs: number;
  /** Milliseconds since the epoch; pass `() => scheduler.now()` so virtual time ages rows too. */
  readonly now: () => number;
  /** Age at which {@link DynamoMembershipStore.reapStale} deletes a row. Default {@link REAP_CLIENTS_AFTER_MS}. */
  readonly reapAfterMs?: number;
  /**
   * Receives each row that {@link DynamoMembershipStore.liveClients} cannot read and leaves out:
   * once, and again when its problem changes or after it was read clean.
   */
  readonly onCorruptRow?: (error: KinsumerError) => void;
}

/**
 * {@link MembershipStore} on the DynamoDB clients table. AWS errors pass through untouched, except
 * a missing table, which becomes `TableNotFoundError`.
 */
export class DynamoMembershipStore implements MembershipStore {
  readonly #options: DynamoMembershipStoreOptions;
  readonly #corrupt: CorruptRowReporter<KinsumerError>;

  constructor(options: DynamoMembershipStoreOptions) {
    this.#options = options;
    this.#corrupt = new CorruptRowReporter(options.onCorruptRow);
  }

  heartbeat(heldShardIds: readonly string[]): Observable<void> {
    const { dynamo, table, clientId, clientName, now } = this.#options;
    return defer(() => dynamo.putItem({
      TableName: table,
      Item: {
        [A.id]: { S: clientId },
        [A.name]: stringOrNull(clientName),
        ...timestampAttributes(A.lastUpdate, now()),
        [A.shards]: { L: [...new Set(heldShardIds)].sort(compareIds).map((S) => ({ S })) },
      },
    })).pipe(catchError((error: unknown) => tableError(this.#options.table, error)));
  }

  liveClients(): Observable<LiveClient[]> {
    const { dynamo, table, leaseTtlMs, now } = this.#options;
    return defer(() => {
      const cutoffNs = nanosFromMillis(now() - leaseTtlMs);
      return dynamo.scanAll({
        TableName: table,
        ConsistentRead: true,
        // Live rows, and rows whose LastUpdate is no number (the comparison alone would hide them).
        FilterExpression: '#lastUpdate > :cutoff OR (attribute_exists(#lastUpdate) AND NOT attribute_type(#lastUpdate, :number) AND NOT attribute_type(#lastUpdate, :null))',
        ExpressionAttributeNames: { '#lastUpdate': A.lastUpdate },
        ExpressionAttributeValues: { ':cutoff': { N: cutoffNs.toString() }, ':number': { S: 'N' }, ':null': { S: 'NULL' } },
      }).pipe(map((items) => items
        .map((item) => this.#readable(item))
        .filter((row): row is LiveClient => row !== undefined && row.lastUpdateNs > cutoffNs)
        .sort((a, b) => compareIds(a.id, b.id))));
    }).pipe(catchError((error: unknown) => tableError(this.#options.table, error)));
  }

  /** The row, or `undefined` when it cannot be read: reported, and left out as if not live. */
  #readable(item: Item): LiveClient | undefined {
    const id = item[A.id]?.S ?? '(unknown)';
    try {
      const row = decodeClientRow(item);
      this.#corrupt.clean(id);
      return row;
    } catch (error) {
      if (!(error instanceof AttributeFormatError)) throw error;
      this.#corrupt.corrupt(id, new KinsumerError(`clients row ${id} of ${this.#options.table} is corrupt: ${error.message}`, { cause: error }));
      return undefined;
    }
  }

  deregister(): Observable<void> {
    const { dynamo, table, clientId } = this.#options;
    return defer(() => dynamo.deleteItem({ TableName: table, Key: { [A.id]: { S: clientId } } }))
      .pipe(catchError((error: unknown) => tableError(this.#options.table, error)));
  }

  reapStale(): Observable<string[]> {
    const { dynamo, table, now } = this.#options;
    const reapAfterMs = this.#options.reapAfterMs ?? REAP_CLIENTS_AFTER_MS;
    return defer(() => {
      const condition = {
        ExpressionAttributeNames: { '#lastUpdate': A.lastUpdate },
        ExpressionAttributeValues: { ':cutoff': { N: nanosFromMillis(now() - reapAfterMs).toString() } },
      };
      return dynamo.scanAll({
        TableName: table,
        ConsistentRead: true,
        FilterExpression: '#lastUpdate < :cutoff',
        ProjectionExpression: '#id, #lastUpdate',
        ...condition,
        ExpressionAttributeNames: { ...condition.ExpressionAttributeNames, '#id': A.id },
      }).pipe(
        concatMap((items) => from(items.map((item) => readString(item, A.id)).filter((id): id is string => id !== undefined))),
        // The condition again at delete time: a client that heartbeated since the scan is alive.
        concatMap((id) => dynamo.deleteItem({
          TableName: table,
          Key: { [A.id]: { S: id } },
          ConditionExpression: '#lastUpdate < :cutoff',
          ...condition,
        }).pipe(
          map(() => id),
          catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? of(undefined) : throwError(() => error))),
        )),
        filter((id): id is string => id !== undefined),
        toArray(),
        map((ids) => ids.sort(compareIds)),
      );
    }).pipe(catchError((error: unknown) => tableError(this.#options.table, error)));
  }
}

/**
 * A clients row as kinsumer or the Go kinsumer wrote it; `undefined` when it has no ID or no
 * LastUpdate. Unknown attributes are ignored.
 * @throws AttributeFormatError for an attribute of the wrong type or form.
 */
export function decodeClientRow(item: Item): LiveClient | undefined {
  const id = readString(item, A.id);
  const lastUpdateNs = readInteger(item, A.lastUpdate);
  if (id === undefined || lastUpdateNs === undefined) return undefined;
  return { id, name: readString(item, A.name), lastUpdateNs, shardIds: readIdList(item, A.shards) };
}
