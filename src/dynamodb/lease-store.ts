// The checkpoints table (`<app>_checkpoints`) as a lease store, reading and writing the rows the
// Go kinsumer writes. Every write after a capture is fenced on owner AND lease counter, and the
// capture itself never rewrites the checkpoint, so a stale owner can never move it backwards (W9).
//
// The lease counter is also the public fencing token, which must only grow. The Go kinsumer's
// capture and commit rewrite the whole row and drop LeaseCounter, so the row alone cannot promise
// that after a rollback to Go: each capture first records its token in the metadata table (item
// `LeaseCounter:<shardId>`), which the Go kinsumer never reads or scans (it gets only `Leader` and
// `ShardCache` there), and takes a token above both that record and the row's counter.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  EMPTY, type Observable, type SchedulerLike, asyncScheduler, catchError, concat, concatMap, defer, from, ignoreElements, map, mergeMap, of,
  reduce, tap, throwError, timer,
} from 'rxjs';
import { advances } from '../checkpoint/checkpoint-advance.js';
import { withDeliveries } from '../checkpoint/deliveries.js';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { CorruptCheckpointError, KinsumerError, LeaseHeldError, LeaseLostError } from '../errors/kinsumer-errors.js';
import { backoffDelay } from '../errors/retry-backoff.js';
import { LeaseObservations } from '../lease/lease-observations.js';
import type { MemberView } from '../ports/coordination.js';
import type { CheckpointRow, CheckpointWrite, HeldLease, LeaseStore, StoredCheckpoint, WritesTransaction } from '../ports/lease-store.js';
import { resetMomentOf, withResetFloor } from '../reading/start-position.js';
import {
  CHECKPOINT_ATTRIBUTES, decodeCheckpointRow, readableCheckpoint, readableCounter, setAckedRanges, setCheckpoint, setDeliveries, wronglyTyped,
} from './checkpoint-row.js';
import { stringOrNull } from './codec.js';
import { CorruptRowReporter } from './corrupt-rows.js';
import type { Dynamo, Item } from './dynamo.js';
import { tableError } from './table-error.js';
import { revokeLease } from './revocation.js';
import { ownerless, transactionInput, transactionOutcome } from './transactions.js';
import { UpdateExpression } from './update-expression.js';

const A = CHECKPOINT_ATTRIBUTES;
/** BatchGetItem takes at most this many keys per call. */
const BATCH_GET_LIMIT = 100;
/** Consecutive BatchGetItem calls that made no progress before readMany gives up. */
const BATCH_GET_MAX_STALLS = 8;
/** Key prefix of the metadata items that hold each shard's highest fencing token. */
const TOKEN_KEY_PREFIX = 'LeaseCounter:';

/** Options of {@link DynamoLeaseStore}. */
export interface DynamoLeaseStoreOptions {
  readonly dynamo: Dynamo;
  /** The checkpoints table, `<app>_checkpoints`. */
  readonly table: string;
  /**
   * The metadata table, where each capture records its fencing token (item `LeaseCounter:<shardId>`)
   * so tokens keep growing after the Go kinsumer rewrote a row. Default: `<app>_metadata` for a
   * `table` named `<app>_checkpoints`.
   */
  readonly metadataTable?: string;
  /**
   * The clients table, where a reset tells the owner of a lease it takes (`Revoked`). Default:
   * `<app>_clients` for a `table` named `<app>_checkpoints`.
   */
  readonly clientsTable?: string;
  /**
   * The members' lives, as this client's membership store read the clients table: a lease whose
   * row names the life it was captured in lives as long as that life (capture-rule.ts). Absent:
   * every lease is judged by its own row, and captures write no life.
   */
  readonly members?: MemberView;
  readonly clientId: string;
  readonly clientName: string;
  /** A lease this client has seen unchanged for this long (on its own clock) is expired. */
  readonly leaseTtlMs: number;
  /**
   * Milliseconds since the epoch on the wall clock, only written (`LastUpdate`,
   * `CheckpointUpdate`). Pass `() => scheduler.now()` so virtual time moves leases too.
   */
  readonly now: () => number;
  /**
   * Milliseconds on a monotonic clock: what this client observes expires by differences of it,
   * never of `now`, so a step of the wall clock moves no expiry. Default: `now` (as virtual time in
   * tests wants it); the Kinsumer passes its `clock.elapsedNow`.
   */
  readonly elapsedNow?: () => number;
  /** Timers of readMany's retries of unprocessed keys. Default `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * Receives each corrupt row that {@link DynamoLeaseStore.readMany} leaves out: once, and again
   * when its problem changes or after it was read clean.
   */
  readonly onCorruptRow?: (error: CorruptCheckpointError) => void;
}

/**
 * {@link LeaseStore} on the DynamoDB checkpoints table. AWS errors pass through untouched (classify
 * them with `classifyAwsError`) except: a missing table becomes `TableNotFoundError`, a failed
 * fence `LeaseLostError` (the AWS error as `cause`), and a corrupt row `CorruptCheckpointError`.
 */
export class DynamoLeaseStore implements LeaseStore {
  readonly #options: DynamoLeaseStoreOptions;
  readonly #scheduler: SchedulerLike;
  readonly #metadataTable: string;
  readonly #clientsTable: string | undefined;
  readonly #corrupt: CorruptRowReporter<CorruptCheckpointError>;
  readonly #leases: LeaseObservations;
  // The checkpoint each held lease stored last (as captured, then as written): a commit that moves
  // it also writes CheckpointUpdate. Only this lease writes the row while it holds it (fenced).
  readonly #stored = new Map<string, { readonly leaseCounter: number; readonly checkpoint: StoredCheckpoint | undefined }>();
  // Key attribute names of the tables records write to, once described (tables found only).
  readonly #keyNames = new Map<string, readonly string[]>();

  constructor(options: DynamoLeaseStoreOptions) {
    this.#options = options;
    this.#leases = new LeaseObservations(options.clientId, options.leaseTtlMs, options.elapsedNow ?? options.now, options.members);
    this.#corrupt = new CorruptRowReporter(options.onCorruptRow);
    this.#scheduler = options.scheduler ?? asyncScheduler;
    const metadataTable = options.metadataTable ?? (options.table.endsWith('_checkpoints') ? `${options.table.slice(0, -'_checkpoints'.length)}_metadata` : undefined);
    if (metadataTable === undefined) throw new TypeError(`metadataTable is required when the checkpoints table (${options.table}) is not named <app>_checkpoints`);
    this.#metadataTable = metadataTable;
    this.#clientsTable = options.clientsTable ?? (options.table.endsWith('_checkpoints') ? `${options.table.slice(0, -'_checkpoints'.length)}_clients` : undefined);
  }

  read(shardId: string): Observable<CheckpointRow | undefined> {
    return this.#get(shardId).pipe(map((item) => {
      const row = item === undefined ? undefined : decodeCheckpointRow(item, shardId);
      this.#leases.see(shardId, row);
      return row;
    }));
  }

  /**
   * Whether a reset may take the lease as `row` shows it, by what this client has observed so far
   * (the row counts as seen now): free, its own, its owner's life over or expired, or (a lease
   * that lives by its own row) seen unchanged for `leaseTtlMs`.
   */
  available(shardId: string, row: CheckpointRow | undefined): boolean {
    return this.#leases.see(shardId, row, 'reset');
  }

  /** Corrupt rows are left out (and handed to `onCorruptRow`): one bad row must not hide the others. */
  readMany(shardIds: readonly string[]): Observable<CheckpointRow[]> {
    const unique = [...new Set(shardIds)];
    const chunks: string[][] = [];
    for (let i = 0; i < unique.length; i += BATCH_GET_LIMIT) chunks.push(unique.slice(i, i + BATCH_GET_LIMIT));
    const order = new Map(unique.map((id, index) => [id, index]));
    return from(chunks).pipe(
      concatMap((chunk) => this.#batchGet(chunk.map((id) => ({ [A.shard]: { S: id } })), 0)),
      reduce((all: Item[], items) => all.concat(items), []),
      map((items) => {
        const rows: CheckpointRow[] = [];
        // Every read is an observation: a row the coordinator reads (its owner looks dead) starts its expiry clock.
        const found = new Set(items.map((item) => item[A.shard]?.S));
        for (const id of unique) if (!found.has(id)) this.#leases.see(id, undefined);
        for (const item of items) {
          const key = item[A.shard]?.S ?? '(unknown)';
          try {
            const row = decodeCheckpointRow(item);
            this.#leases.see(row.shardId, row);
            rows.push(row);
            this.#corrupt.clean(key);
          } catch (error) {
            if (!(error instanceof CorruptCheckpointError)) throw error;
            this.#corrupt.corrupt(key, error);
          }
        }
        return rows.sort((a, b) => (order.get(a.shardId) ?? 0) - (order.get(b.shardId) ?? 0));
      }),
      catchError((error: unknown) => tableError(this.#options.table, error)),
    );
  }

  capture(shardId: string): Observable<HeldLease | undefined> {
    const { clientId, clientName, now } = this.#options;
    return this.#get(shardId).pipe(
      mergeMap((item) => {
        const nowMs = now();
        const row = item === undefined ? undefined : decodeCheckpointRow(item, shardId);
        if (!this.#leases.see(shardId, row)) return of(undefined);
        return this.#issueToken(shardId, row?.leaseCounter ?? 0).pipe(mergeMap((token) => {
          const update = new UpdateExpression();
          update.set(A.ownerId, { S: clientId });
          update.set(A.ownerName, stringOrNull(clientName));
          update.setTimestamp(A.lastUpdate, nowMs);
          update.set(A.leaseCounter, { N: String(token) });
          const incarnation = this.#leases.incarnation();
          if (incarnation === undefined) update.remove(A.ownerIncarnation);
          else update.set(A.ownerIncarnation, { N: String(incarnation) });
          // Conditioned on the row being exactly as read: a release or capture in between (which
          // moves LastUpdate, the owner or the counter) fails this write instead of being
          // overwritten. The token is then spent unused, which only leaves a gap.
          if (item === undefined) update.condition(`attribute_not_exists(${update.name(A.shard)})`);
          else for (const attribute of [A.leaseCounter, A.lastUpdate, A.ownerId]) update.unchanged(attribute, item[attribute]);
          return this.#options.dynamo.updateItemDated(update.input(this.#options.table, { [A.shard]: { S: shardId } })).pipe(
            map(({ item: attributes, serverDate }): HeldLease => {
              const held = decodeCheckpointRow(attributes ?? {}, shardId);
              this.#leases.captured(shardId, held.leaseCounter);
              this.#stored.set(shardId, { leaseCounter: held.leaseCounter, checkpoint: held.checkpoint });
              const lease = {
                shardId, ownerId: clientId, leaseCounter: held.leaseCounter, checkpoint: held.checkpoint, finished: held.finished,
                ...(serverDate === undefined ? {} : { capturedAt: serverDate }),
                ...(held.ownerIncarnation === undefined ? {} : { ownerIncarnation: held.ownerIncarnation }),
                ...(held.transactionToken === undefined ? {} : { transactionToken: held.transactionToken }),
              };
              return withDeliveries(held.acked === undefined ? lease : { ...lease, acked: held.acked }, held);
            }),
            catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? of(undefined) : throwError(() => error))),
          );
        }));
      }),
      catchError((error: unknown) => tableError(this.#options.table, error)),
    );
  }

  commit(lease: HeldLease, write: CheckpointWrite): Observable<void> {
    const moved = this.#advances(lease, write);
    return this.#fenced(lease, (update, nowMs) => {
      setCheckpoint(update, write.checkpoint);
      if (moved) update.setTimestamp(A.checkpointUpdate, nowMs);
      setAckedRanges(update, write);
      setDeliveries(update, write);
      if (write.finished) update.setTimestamp(A.finished, nowMs);
    }).pipe(tap(() => this.#wrote(lease, write)));
  }

  /**
   * One TransactWriteItems: the checkpoint's Update, conditioned on the lease and on the
   * transaction token this lease last saw in the row, then the records' writes. Built once: every
   * subscription sends the identical request with the same ClientRequestToken.
   */
  commitWithWrites(lease: HeldLease, write: CheckpointWrite, transaction: WritesTransaction): Observable<void> {
    const nowMs = this.#options.now();
    const update = new UpdateExpression();
    update.setTimestamp(A.lastUpdate, nowMs);
    setCheckpoint(update, write.checkpoint);
    if (this.#advances(lease, write)) update.setTimestamp(A.checkpointUpdate, nowMs);
    setAckedRanges(update, write);
    setDeliveries(update, write);
    if (write.finished) update.setTimestamp(A.finished, nowMs);
    update.set(A.transactionToken, { S: transaction.token });
    update.condition(`${update.name(A.ownerId)} = ${update.value('me', { S: lease.ownerId })}`);
    update.condition(`${update.name(A.leaseCounter)} = ${update.value('counter', { N: String(lease.leaseCounter) })}`);
    update.unchanged(A.transactionToken, transaction.after === undefined ? undefined : { S: transaction.after });
    const input = transactionInput(update, this.#options.table, lease.shardId, transaction);
    return this.#options.dynamo.transactWriteItems(input).pipe(
      catchError((error: unknown) => (classifyAwsError(error) === 'not-found'
        // DynamoDB does not say which table is missing. The checkpoints table is the lease's fault
        // (the read fails with TableNotFoundError), not the records': only a user table is theirs.
        ? this.#get(lease.shardId).pipe(mergeMap(() => transactionOutcome(error, lease, transaction)))
        : transactionOutcome(error, lease, transaction))),
      tap(() => this.#wrote(lease, write)),
    );
  }

  /**
   * DescribeTable of each table not described yet (a missing one: `undefined`). Key schemas are
   * kept for the store's life (a table's keys never change); a missing table is asked about again.
   */
  tableKeys(tables: readonly string[]): Observable<ReadonlyMap<string, readonly string[] | undefined>> {
    const unknown = tables.filter((table) => !this.#keyNames.has(table));
    const found = new Map<string, readonly string[] | undefined>();
    return from(unknown).pipe(
      mergeMap((table) => this.#options.dynamo.describeTable(table).pipe(
        map((description) => [table, description?.KeySchema?.map((key) => key.AttributeName ?? '')] as const),
        catchError((error: unknown) => (classifyAwsError(error) === 'not-found' ? of([table, undefined] as const) : throwError(() => error))),
      ), 4),
      tap(([table, names]) => {
        found.set(table, names);
        if (names !== undefined) this.#keyNames.set(table, names);
      }),
      reduce(() => undefined, undefined),
      map(() => new Map(tables.map((table) => [table, this.#keyNames.get(table) ?? found.get(table)]))),
    );
  }

  renew(lease: HeldLease): Observable<void> {
    return this.#fenced(lease, () => undefined);
  }

  resetCheckpoint(shardId: string, checkpoint: StoredCheckpoint | undefined, options: { readonly force: boolean }): Observable<void> {
    const { now } = this.#options;
    const write = (item: Item | undefined, resetAt: Date) => defer(() => {
      const nowMs = now();
      // Refused while a live owner holds it: judged by this client's observations (the row must
      // have been seen unchanged for a TTL), and the write below is conditioned on the row as read.
      // A row that cannot be decoded cannot be judged: only a forced reset overwrites it.
      if (!options.force && !this.#leases.see(shardId, item === undefined ? undefined : decodeCheckpointRow(item, shardId), 'reset')) {
        return throwError(() => new LeaseHeldError(shardId));
      }
      const update = new UpdateExpression();
      if (checkpoint === undefined) {
        update.set(A.sequenceNumber, { NULL: true });
        for (const attribute of [A.subSequenceNumber, A.startPosition, A.startTimestamp, A.startAfter, A.startAfterSub, A.resetTimestamp]) update.remove(attribute);
      } else {
        setCheckpoint(update, withResetFloor(checkpoint, item === undefined ? undefined : readableCheckpoint(item, shardId), resetAt));
      }
      // A reset means "read again from here": nothing beyond it counts as acked, or as delivered, any more.
      update.remove(A.ackedRanges);
      update.remove(A.deliveries);
      // Every reset is a fence: the owner goes and the counter moves, so whoever held the lease
      // (live, or expired but still running: a GC pause, SIGSTOP, a partition) can never write
      // over the reset; it, or another client, captures again and reads from the new checkpoint.
      // A forced reset is also how an operator repairs a corrupt row, so it must not need to
      // decode the row: take the counter if it is readable, and drop attributes of a wrong type.
      if (options.force && item !== undefined) for (const attribute of wronglyTyped(item)) update.remove(attribute);
      update.set(A.leaseCounter, { N: String((item === undefined ? 0 : readableCounter(item)) + 1) });
      update.remove(A.ownerId);
      update.remove(A.ownerName);
      update.remove(A.ownerIncarnation);
      update.setTimestamp(A.lastUpdate, nowMs);
      if (item === undefined) update.condition(`attribute_not_exists(${update.name(A.shard)})`);
      else if (options.force) update.unchanged(A.leaseCounter, item[A.leaseCounter]);
      else for (const attribute of [A.leaseCounter, A.lastUpdate, A.ownerId]) update.unchanged(attribute, item[attribute]);
      const fence$ = this.#options.dynamo.updateItem({ ...update.input(this.#options.table, { [A.shard]: { S: shardId } }), ReturnValues: 'NONE' });
      const revoke$ = this.#clientsTable === undefined ? EMPTY : revokeLease(this.#options.dynamo, this.#clientsTable, item);
      return concat(revoke$.pipe(ignoreElements()), fence$);
    });
    // The reset's moment, on DynamoDB's clock (the read's answer, just before the write): a LATEST's
    // time floor. Without a Date header, the client's clock less the skew margin.
    const read$ = this.#options.dynamo.getItemDated({ TableName: this.#options.table, Key: { [A.shard]: { S: shardId } }, ConsistentRead: true });
    return read$.pipe(
      mergeMap(({ item, serverDate }) => write(item, resetMomentOf(serverDate, now()))),
      map(() => undefined),
      catchError((error: unknown) => {
        // A write that lost a race, or (unforced) a row whose owner cannot be read: held, as far as a reset can tell.
        if (classifyAwsError(error) === 'conditional' || error instanceof CorruptCheckpointError) return throwError(() => new LeaseHeldError(shardId, { cause: error }));
        return tableError(this.#options.table, error);
      }),
    );
  }

  release(lease: HeldLease, write: CheckpointWrite): Observable<void> {
    const moved = this.#advances(lease, write);
    return this.#fenced(lease, (update, nowMs) => {
      setCheckpoint(update, write.checkpoint);
      if (moved) update.setTimestamp(A.checkpointUpdate, nowMs);
      setAckedRanges(update, write);
      setDeliveries(update, write);
      if (write.finished) update.setTimestamp(A.finished, nowMs);
      update.set(A.lastOwnerId, { S: this.#options.clientId });
      update.remove(A.ownerId);
      update.remove(A.ownerName);
      update.remove(A.ownerIncarnation);
    });
  }

  /** The write moves the checkpoint this lease stored last (unknown: a write with a checkpoint moves it). */
  #advances(lease: HeldLease, write: CheckpointWrite): boolean {
    const stored = this.#stored.get(lease.shardId);
    return stored?.leaseCounter === lease.leaseCounter ? advances(stored.checkpoint, write.checkpoint) : write.checkpoint !== undefined;
  }

  #wrote(lease: HeldLease, write: CheckpointWrite): void {
    if (write.checkpoint !== undefined) this.#stored.set(lease.shardId, { leaseCounter: lease.leaseCounter, checkpoint: write.checkpoint });
  }

  /** An UpdateItem that renews `LastUpdate`, conditioned on this lease still being the row's. */
  #fenced(lease: HeldLease, build: (update: UpdateExpression, nowMs: number) => void): Observable<void> {
    return defer(() => {
      const nowMs = this.#options.now();
      const update = new UpdateExpression();
      update.setTimestamp(A.lastUpdate, nowMs);
      build(update, nowMs);
      update.condition(`${update.name(A.ownerId)} = ${update.value('me', { S: lease.ownerId })}`);
      update.condition(`${update.name(A.leaseCounter)} = ${update.value('counter', { N: String(lease.leaseCounter) })}`);
      return this.#options.dynamo.updateItem({ ...update.input(this.#options.table, { [A.shard]: { S: lease.shardId } }), ReturnValues: 'NONE' });
    }).pipe(
      map(() => undefined),
      catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? this.#lost(lease.shardId, error) : tableError(this.#options.table, error))),
    );
  }

  /** The lease is fenced: revoked (the row names no owner now: a reset) or taken, as a consistent read of the row tells. */
  #lost(shardId: string, error: unknown): Observable<never> {
    return this.#get(shardId).pipe(
      catchError(() => of(undefined)),
      mergeMap((item) => throwError(() => new LeaseLostError(shardId, { cause: error, revoked: ownerless(item) }))),
    );
  }

  /**
   * A fencing token for a capture of `shardId`: above `floor` (the row's counter as read) and above
   * every token issued for the shard before, recorded before the row shows it. One conditional
   * write when the row kept its counter since the last capture; when it did not (the Go kinsumer
   * rewrote it) or a rival capture took a token meanwhile, that write fails and an ADD follows.
   */
  #issueToken(shardId: string, floor: number): Observable<number> {
    const { dynamo } = this.#options;
    const table = this.#metadataTable;
    const key = `${TOKEN_KEY_PREFIX}${shardId}`;
    const names = { '#counter': A.leaseCounter, '#shard': A.shard };
    const add$ = defer(() => dynamo.updateItem({
      TableName: table,
      Key: { Key: { S: key } },
      UpdateExpression: 'SET #shard = :shard ADD #counter :one',
      // A counter of another type cannot be trusted as the highest token: the shard waits for an operator.
      ConditionExpression: 'attribute_not_exists(#counter) OR attribute_type(#counter, :number)',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: { ':shard': { S: shardId }, ':one': { N: '1' }, ':number': { S: 'N' } },
      ReturnValues: 'UPDATED_NEW',
    })).pipe(
      map((attributes) => {
        const token = Number(attributes?.[A.leaseCounter]?.N);
        if (!Number.isSafeInteger(token) || token <= floor) throw new CorruptCheckpointError(shardId, A.leaseCounter, `of metadata item ${key} in ${table} is out of range`);
        return token;
      }),
      catchError((error: unknown) => (classifyAwsError(error) === 'conditional'
        ? throwError(() => new CorruptCheckpointError(shardId, A.leaseCounter, `of metadata item ${key} in ${table} is not a number`, { cause: error }))
        : throwError(() => error))),
    );
    const raise$ = defer(() => dynamo.updateItem({
      TableName: table,
      Key: { Key: { S: key } },
      UpdateExpression: 'SET #counter = :token, #shard = :shard',
      ConditionExpression: 'attribute_not_exists(#counter) OR #counter < :token',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: { ':shard': { S: shardId }, ':token': { N: String(floor + 1) } },
      ReturnValues: 'NONE',
    })).pipe(
      map(() => floor + 1),
      catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? add$ : throwError(() => error))),
    );
    // A row without a counter is new or was rewritten by the Go kinsumer: the record alone knows.
    return (floor === 0 ? add$ : raise$).pipe(catchError((error: unknown) => tableError(table, error)));
  }

  #get(shardId: string): Observable<Item | undefined> {
    return this.#options.dynamo.getItem({ TableName: this.#options.table, Key: { [A.shard]: { S: shardId } }, ConsistentRead: true })
      .pipe(catchError((error: unknown) => tableError(this.#options.table, error)));
  }

  #batchGet(keys: Record<string, AttributeValue>[], stalls: number): Observable<Item[]> {
    const { dynamo, table } = this.#options;
    return dynamo.batchGetItem({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true } } }).pipe(
      mergeMap((out) => {
        const items = out.Responses?.[table] ?? [];
        const left = out.UnprocessedKeys?.[table]?.Keys ?? [];
        if (left.length === 0) return of(items);
        // Unprocessed keys mean throttling: back off; give up only after repeated calls that read nothing.
        const nextStalls = items.length > 0 ? 0 : stalls + 1;
        if (nextStalls > BATCH_GET_MAX_STALLS) {
          return throwError(() => new KinsumerError(`BatchGetItem on ${table} left ${left.length} keys unprocessed ${nextStalls} times in a row`, { retriable: true }));
        }
        return timer(backoffDelay(nextStalls + 1), this.#scheduler).pipe(
          mergeMap(() => this.#batchGet(left, nextStalls)),
          map((more) => items.concat(more)),
        );
      }),
    );
  }
}
