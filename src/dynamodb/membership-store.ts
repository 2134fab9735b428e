// The clients table (`<app>_clients`) as group membership, in the Go kinsumer's row format
// (ID, Name, LastUpdate in Unix ns + LastUpdateRFC) plus `Shards`, the shards the client holds,
// so every client learns the current owners from this small table instead of scanning checkpoints,
// `InstanceID`, the writing process, so two processes configured with one clientId never
// overwrite each other's row: the second one finds the first one's row and waits, and `Library`,
// the marker that tells this library's rows from a Go kinsumer's (src/group/library-marker.ts).
//
// A row is live until this client has seen it unchanged for leaseTtlMs (src/lease/row-observer.ts):
// every scan reads the whole table (a scan's cost does not depend on a filter) and the observer
// judges; no LastUpdate is compared with this host's clock, except by the 48-hour reaping.
import { randomUUID } from 'node:crypto';
import { type Observable, catchError, concatMap, defer, filter, from, map, of, throwError, toArray } from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { KinsumerError } from '../errors/kinsumer-errors.js';
import { compareIds } from '../group/compare-ids.js';
import { LIBRARY_ATTRIBUTE, libraryMarker } from '../group/library-marker.js';
import { RivalRow } from '../group/rival-row.js';
import { RowObserver, observedExpired } from '../lease/row-observer.js';
import { REAP_CLIENTS_AFTER_MS, type LiveClient, type MembershipStore, type Registration } from '../ports/coordination.js';
import { AttributeFormatError, isEmpty, nanosFromMillis, readIdList, readInteger, readString, stringOrNull, timestampAttributes } from './codec.js';
import { CorruptRowReporter } from './corrupt-rows.js';
import type { Dynamo, Item } from './dynamo.js';
import { tableError } from './table-error.js';
import { ConditionExpression } from './update-expression.js';

/** Attribute names of `<app>_clients`: the Go kinsumer's, plus `Shards`, `InstanceID` and `Library`. */
const CLIENT_ATTRIBUTES = {
  id: 'ID',
  name: 'Name',
  lastUpdate: 'LastUpdate',
  shards: 'Shards',
  instanceId: 'InstanceID',
  library: LIBRARY_ATTRIBUTE,
} as const;

const A = CLIENT_ATTRIBUTES;

/** Options of {@link DynamoMembershipStore}. */
export interface DynamoMembershipStoreOptions {
  readonly dynamo: Dynamo;
  /** The clients table, `<app>_clients`. */
  readonly table: string;
  readonly clientId: string;
  readonly clientName: string;
  /** This process's id, written with every heartbeat. Default: a random UUID (one per store). */
  readonly instanceId?: string;
  /** A row this client has seen unchanged for this long (on its own clock) is not live. */
  readonly leaseTtlMs: number;
  /**
   * Milliseconds since the epoch on the wall clock, only written (`LastUpdate`) and the reap age's
   * cutoff. Pass `() => scheduler.now()` so virtual time ages rows too.
   */
  readonly now: () => number;
  /**
   * Milliseconds on a monotonic clock: what this client observes expires by differences of it,
   * never of `now`, so a step of the wall clock moves no expiry. Default: `now` (as virtual time in
   * tests wants it); the Kinsumer passes its `clock.elapsedNow`.
   */
  readonly elapsedNow?: () => number;
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
  readonly #instanceId: string;
  /** The other clients' rows, as seen by the scans. */
  readonly #clients = new RowObserver();
  /** The row of another process with this clientId, while one stands in the way. */
  readonly #rival: RivalRow;
  readonly #elapsedNow: () => number;

  constructor(options: DynamoMembershipStoreOptions) {
    this.#options = options;
    this.#elapsedNow = options.elapsedNow ?? options.now;
    this.#corrupt = new CorruptRowReporter(options.onCorruptRow);
    this.#instanceId = options.instanceId ?? randomUUID();
    this.#rival = new RivalRow(options.leaseTtlMs);
  }

  heartbeat(heldShardIds: readonly string[]): Observable<Registration> {
    const { dynamo, table, clientId } = this.#options;
    // Ours, free, or written by a process that does not mark its rows (a Go kinsumer).
    const ours = new ConditionExpression();
    ours.condition(`attribute_not_exists(${ours.name(A.instanceId)}) OR ${ours.name(A.instanceId)} = ${ours.value('me', { S: this.#instanceId })}`);
    const put$ = this.#put(heldShardIds, ours);
    const takeOver$ = (seen: Item) => {
      const asSeen = new ConditionExpression();
      asSeen.unchanged(A.instanceId, seen[A.instanceId]);
      asSeen.unchanged(A.lastUpdate, seen[A.lastUpdate]);
      return this.#put(heldShardIds, asSeen);
    };
    const registered = (written: boolean): Observable<Registration | undefined> => {
      if (!written) return of(undefined);
      this.#rival.clear();
      return of({ registered: true });
    };
    // Refused: another process's row is there. Watch it; take it over once it stood still for a TTL.
    const judge$ = defer(() => dynamo.getItem({ TableName: table, Key: { [A.id]: { S: clientId } }, ConsistentRead: true })).pipe(
      concatMap((item): Observable<Registration> => {
        if (item === undefined || isEmpty(item[A.instanceId]) || item[A.instanceId]?.S === this.#instanceId) {
          // Gone (deleted by its graceful stop) or ours after all: the plain heartbeat again.
          return put$.pipe(concatMap(registered), map((done) => done ?? { registered: false, heartbeating: false, shardIds: undefined }));
        }
        const verdict = this.#rival.see(JSON.stringify([item[A.instanceId], item[A.lastUpdate]]), this.#elapsedNow());
        const waiting: Registration = { registered: false, heartbeating: verdict.heartbeating, shardIds: readableIds(item) };
        if (!verdict.gone) return of(waiting);
        return takeOver$(item).pipe(concatMap(registered), map((done) => done ?? waiting));
      }),
    );
    return put$.pipe(
      concatMap(registered),
      concatMap((done) => (done === undefined ? judge$ : of(done))),
      catchError((error: unknown) => tableError(this.#options.table, error)),
    );
  }

  /** This process's row, conditioned on `condition`: emits whether it was written. */
  #put(heldShardIds: readonly string[], condition: ConditionExpression): Observable<boolean> {
    const { dynamo, table, clientId, clientName, now } = this.#options;
    return defer(() => dynamo.putItem({
      TableName: table,
      Item: {
        [A.id]: { S: clientId },
        [A.name]: stringOrNull(clientName),
        ...timestampAttributes(A.lastUpdate, now()),
        [A.shards]: { L: [...new Set(heldShardIds)].sort(compareIds).map((S) => ({ S })) },
        [A.instanceId]: { S: this.#instanceId },
        [A.library]: { S: libraryMarker() },
      },
      ...condition.conditionInput(),
    })).pipe(
      map(() => true),
      catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? of(false) : throwError(() => error))),
    );
  }

  liveClients(): Observable<LiveClient[]> {
    const { dynamo, table, leaseTtlMs } = this.#options;
    return defer(() => dynamo.scanAll({ TableName: table, ConsistentRead: true })).pipe(
      map((items) => {
        const nowMs = this.#elapsedNow();
        const rows = items.map((item) => this.#readable(item, nowMs)).filter((row): row is LiveClient => row !== undefined);
        this.#clients.keepOnly(rows.map((row) => row.id));
        return rows.filter((row) => !observedExpired(row.unchangedForMs, leaseTtlMs)).sort((a, b) => compareIds(a.id, b.id));
      }),
      catchError((error: unknown) => tableError(this.#options.table, error)),
    );
  }

  /** The row as seen at `nowMs`, or `undefined` when it cannot be read: reported, and left out as if not live. */
  #readable(item: Item, nowMs: number): LiveClient | undefined {
    const id = item[A.id]?.S ?? '(unknown)';
    try {
      const decoded = decodeClientRow(item);
      this.#corrupt.clean(id);
      if (decoded === undefined) return undefined;
      const version = `${decoded.lastUpdateNs}\u0000${decoded.instanceId ?? ''}`;
      return { ...decoded, unchangedForMs: this.#clients.see(decoded.id, version, nowMs) };
    } catch (error) {
      if (!(error instanceof AttributeFormatError)) throw error;
      this.#corrupt.corrupt(id, new KinsumerError(`clients row ${id} of ${this.#options.table} is corrupt: ${error.message}`, { cause: error }));
      return undefined;
    }
  }

  deregister(): Observable<void> {
    const { dynamo, table, clientId } = this.#options;
    return defer(() => dynamo.deleteItem({
      TableName: table,
      Key: { [A.id]: { S: clientId } },
      // Only this process's row: a restarted process with the same clientId may have taken it over.
      ConditionExpression: '#instance = :me',
      ExpressionAttributeNames: { '#instance': A.instanceId },
      ExpressionAttributeValues: { ':me': { S: this.#instanceId } },
    })).pipe(
      catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? of(undefined) : tableError(this.#options.table, error))),
      map(() => undefined),
    );
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
export function decodeClientRow(item: Item): Omit<LiveClient, 'unchangedForMs'> | undefined {
  const id = readString(item, A.id);
  const lastUpdateNs = readInteger(item, A.lastUpdate);
  if (id === undefined || lastUpdateNs === undefined) return undefined;
  return {
    id, name: readString(item, A.name), lastUpdateNs, shardIds: readIdList(item, A.shards), instanceId: readString(item, A.instanceId),
    library: readString(item, A.library),
  };
}

/** The `Shards` a rival's row lists, when they can be read. */
function readableIds(item: Item): readonly string[] | undefined {
  try {
    return readIdList(item, A.shards);
  } catch {
    return undefined;
  }
}
