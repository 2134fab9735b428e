// A LeaseStore in memory with the DynamoDB store's semantics (capture rule, owner + counter fence,
// LATEST, Finished kept on release, LastOwnerID, acked ranges through the same encoding and cap,
// records' writes committed with the checkpoint in one transaction over MemoryItemTables), for
// model tests, virtual-time tests of the layers above, and benchmarks that must not measure DynamoDB.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { type Observable, type SchedulerLike, catchError, defer, map, of, throwError, timer } from 'rxjs';
import { decodeAckedRanges, encodeWrittenRanges } from '../checkpoint/acked-ranges.js';
import { decodeDeliveries, encodeDeliveries } from '../checkpoint/deliveries.js';
import { advances } from '../checkpoint/checkpoint-advance.js';
import { CHECKPOINT_ATTRIBUTES as A } from '../dynamodb/checkpoint-row.js';
import { withDeliveries } from '../checkpoint/deliveries.js';
import { nanosFromMillis } from '../dynamodb/codec.js';
import { transactionOutcome } from '../dynamodb/transactions.js';
import { LeaseHeldError, LeaseLostError } from '../errors/kinsumer-errors.js';
import { LeaseObservations } from '../lease/lease-observations.js';
import type { MemberView } from '../ports/coordination.js';
import type { AckedRange, CheckpointRow, CheckpointWrite, HeldLease, LeaseStore, StoredCheckpoint, WritesTransaction } from '../ports/lease-store.js';
import { withResetFloor } from '../reading/start-position.js';
import type { MemoryCoordinationTables } from './memory-coordination.js';
import { MemoryItemTables } from './memory-items.js';

/** The rows of one checkpoints table, shared by the stores of several simulated clients. */
export class MemoryCheckpointTable {
  readonly #rows = new Map<string, CheckpointRow>();
  /**
   * The table's own clock (DynamoDB's, which answers with a `Date`): a capture reports it as
   * `capturedAt`. Default: none, and a client's LATEST start falls back to its own clock less five minutes.
   */
  readonly now: (() => number) | undefined;

  constructor(options: { readonly now?: () => number } = {}) {
    this.now = options.now;
  }
  /** Each shard's highest fencing token, apart from the rows (the DynamoDB store keeps it in the metadata table). */
  readonly #tokens = new Map<string, number>();

  /** The row of a shard, as the DynamoDB store would decode it. */
  row(shardId: string): CheckpointRow | undefined {
    return this.#rows.get(shardId);
  }

  /** Every row, in no particular order. */
  rows(): CheckpointRow[] {
    return [...this.#rows.values()];
  }

  /**
   * Writes a row as is (seeding a test, or playing an operator or another writer). A row with
   * `leaseCounter: 0` is one the Go kinsumer rewrote: later captures still get tokens above every
   * token issued before.
   */
  put(row: CheckpointRow): void {
    this.#rows.set(row.shardId, row);
  }

  /**
   * Issues a fencing token for a capture of `shardId`: above `floor` (the row's counter as the
   * capture read it) and above every token issued for the shard before.
   */
  issueToken(shardId: string, floor: number): number {
    const token = Math.max(floor, this.#tokens.get(shardId) ?? 0) + 1;
    this.#tokens.set(shardId, token);
    return token;
  }

  /** Removes a shard's row, as an operator deleting the item would. */
  delete(shardId: string): void {
    this.#rows.delete(shardId);
  }
}

/** The operations of {@link MemoryLeaseStore}, for fault injection and call counts. */
export type MemoryLeaseOperation = 'read' | 'readMany' | 'capture' | 'commit' | 'commitWithWrites' | 'tableKeys' | 'renew' | 'release' | 'resetCheckpoint';

/** Options of {@link MemoryLeaseStore}. */
export interface MemoryLeaseStoreOptions {
  /** The simulated client's id: the owner its captures write. */
  readonly clientId: string;
  /** The simulated client's name, written as the owner's name. Default: none. */
  readonly clientName?: string;
  /** A lease this client has seen unchanged for this long (on its own clock) is expired and may be captured. */
  readonly leaseTtlMs: number;
  /** Milliseconds since the epoch on the wall clock (e.g. `() => scheduler.now()`), only written (`LastUpdate`). */
  readonly now: () => number;
  /**
   * Milliseconds on a monotonic clock: leases expire by differences of it, so a step of the wall
   * clock (`now`) moves no expiry. Default: `now`.
   */
  readonly elapsedNow?: () => number;
  /** Shared with other clients' stores; default: a table of its own. */
  readonly table?: MemoryCheckpointTable;
  /** The tables records' writes go to (`ack({ writes })`), shared with other clients' stores; default: tables of its own. */
  readonly items?: MemoryItemTables;
  /** Each call answers after this long on `scheduler` (writes apply then). Default 0: synchronously. */
  readonly latencyMs?: number;
  /** The scheduler `latencyMs` runs on (a virtual-time one in tests). Default: RxJS's `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * The members' lives, as this client's membership store read the clients table (a lease whose
   * row names the life it was captured in lives as long as that life). Absent: every lease is
   * judged by its own row, and captures write no life.
   */
  readonly members?: MemberView;
  /** The clients table a reset tells the owner of a lease it takes in (`Revoked`). Absent: none is told. */
  readonly clients?: MemoryCoordinationTables;
}

/**
 * {@link LeaseStore} in memory. A capture reads when subscribed and writes when it answers, under
 * the same "row unchanged since the read" condition as the DynamoDB store, so races between
 * clients with latency behave alike.
 */
export class MemoryLeaseStore implements LeaseStore {
  /** The rows it reads and writes (shared when given in the options). */
  readonly table: MemoryCheckpointTable;
  /** The tables records' writes go to (shared when given in the options). */
  readonly items: MemoryItemTables;
  /** Calls made, by operation (each subscription counts, faults included). */
  readonly calls: Record<MemoryLeaseOperation, number> = {
    read: 0, readMany: 0, capture: 0, commit: 0, commitWithWrites: 0, tableKeys: 0, renew: 0, release: 0, resetCheckpoint: 0,
  };
  readonly #options: MemoryLeaseStoreOptions;
  readonly #faults: Array<{ readonly error: unknown; readonly operations: readonly MemoryLeaseOperation[] | undefined; readonly applied: boolean }> = [];
  readonly #leases: LeaseObservations;

  constructor(options: MemoryLeaseStoreOptions) {
    this.#options = options;
    this.#leases = new LeaseObservations(options.clientId, options.leaseTtlMs, options.elapsedNow ?? options.now, options.members);
    this.table = options.table ?? new MemoryCheckpointTable();
    this.items = options.items ?? new MemoryItemTables();
  }

  /** The row of a shard (shorthand for `table.row`). */
  row(shardId: string): CheckpointRow | undefined {
    return this.table.row(shardId);
  }

  /**
   * Makes the next call of one of `operations` (default: any write — capture, commit, renew,
   * release) fail with `error` without touching the table. Faults queue up in order.
   */
  failNext(error: unknown, operations?: readonly MemoryLeaseOperation[]): void {
    this.#faults.push({ error, operations, applied: false });
  }

  /**
   * Makes the next call of one of `operations` (default: any write) apply as usual, then answer
   * with `error` instead (a response lost on the way back: a timeout, a dropped connection).
   * Faults queue up in order with those of {@link failNext}.
   */
  loseNextResponse(error: unknown, operations?: readonly MemoryLeaseOperation[]): void {
    this.#faults.push({ error, operations, applied: true });
  }

  // Reads happen when sent; what they show counts as seen when the answer arrives, as in DynamoDB.
  read(shardId: string): Observable<CheckpointRow | undefined> {
    return this.#call('read', () => {
      const row = this.table.row(shardId);
      return () => {
        this.#leases.see(shardId, row);
        return row;
      };
    });
  }

  readMany(shardIds: readonly string[]): Observable<CheckpointRow[]> {
    return this.#call('readMany', () => {
      const rows = [...new Set(shardIds)].map((id) => [id, this.table.row(id)] as const);
      return () => rows.flatMap(([id, row]) => {
        this.#leases.see(id, row);
        return row ?? [];
      });
    });
  }

  /**
   * Whether a reset may take the lease as `row` shows it, by what this client has observed so far
   * (the row counts as seen now): free, its own, its owner's life over or expired, or (a lease
   * that lives by its own row) seen unchanged for `leaseTtlMs`.
   */
  available(shardId: string, row: CheckpointRow | undefined): boolean {
    return this.#leases.see(shardId, row, 'reset');
  }

  capture(shardId: string): Observable<HeldLease | undefined> {
    const { clientId, clientName, now } = this.#options;
    return this.#call('capture', () => {
      const read = this.table.row(shardId);
      return () => {
        // Judged when the read's answer arrives; written then too, and only if nobody wrote the
        // row since the read (the token is then spent unused, as in DynamoDB).
        if (!this.#leases.see(shardId, read)) return undefined;
        const leaseCounter = this.table.issueToken(shardId, read?.leaseCounter ?? 0);
        if (!sameLeaseState(read, this.table.row(shardId))) return undefined;
        const ownerIncarnation = this.#leases.incarnation();
        const row: CheckpointRow = {
          ...(ownerIncarnation === undefined ? {} : { ownerIncarnation }),
          shardId,
          checkpoint: read?.checkpoint,
          ownerId: clientId,
          ownerName: clientName === '' ? undefined : clientName,
          lastUpdateNs: nanosFromMillis(now()),
          finished: read?.finished ?? false,
          leaseCounter,
          lastOwnerId: read?.lastOwnerId,
          ...(read?.checkpointUpdateNs === undefined ? {} : { checkpointUpdateNs: read.checkpointUpdateNs }),
          ...(read?.acked === undefined ? {} : { acked: read.acked }),
          ...(read?.transactionToken === undefined ? {} : { transactionToken: read.transactionToken }),
          ...(read?.deliveries === undefined ? {} : { deliveries: read.deliveries }),
        };
        this.table.put(row);
        this.#leases.captured(shardId, leaseCounter);
        const capturedAtMs = this.table.now?.();
        const held = {
          shardId, ownerId: clientId, leaseCounter, checkpoint: row.checkpoint, finished: row.finished,
          ...(capturedAtMs === undefined ? {} : { capturedAt: new Date(capturedAtMs) }),
          ...(ownerIncarnation === undefined ? {} : { ownerIncarnation }),
          ...(row.transactionToken === undefined ? {} : { transactionToken: row.transactionToken }),
        };
        return withDeliveries(row.acked === undefined ? held : { ...held, acked: row.acked }, row);
      };
    });
  }

  commit(lease: HeldLease, write: CheckpointWrite): Observable<void> {
    return this.#fenced('commit', lease, (row) => written(row, write, this.#options.now()));
  }

  /**
   * The checkpoint and the records' writes in one transaction over {@link items}, as the DynamoDB
   * store sends it: the checkpoint's action first, conditioned on the lease and on the last
   * transaction's token, answered (and mapped to the port's errors) as DynamoDB would.
   */
  commitWithWrites(lease: HeldLease, write: CheckpointWrite, transaction: WritesTransaction): Observable<void> {
    return this.#call('commitWithWrites', () => () => {
      const nowMs = this.#options.now();
      this.items.transact(transaction.writes, {
        token: transaction.token,
        // The token's window is a "for how long": the monotonic clock's, as DynamoDB's own.
        nowMs: (this.#options.elapsedNow ?? this.#options.now)(),
        extra: {
          check: () => {
            const row = this.table.row(lease.shardId);
            if (row?.ownerId === lease.ownerId && row.leaseCounter === lease.leaseCounter && row.transactionToken === transaction.after) return { failed: false };
            return { failed: true, ...(row === undefined ? {} : { item: rowItem(row) }) };
          },
          apply: () => {
            const row = this.table.row(lease.shardId) as CheckpointRow;
            this.table.put({ ...written(row, write, nowMs), transactionToken: transaction.token, lastUpdateNs: nanosFromMillis(nowMs) });
          },
        },
      });
    }).pipe(
      catchError((error: unknown) => transactionOutcome(error, lease, transaction)),
    );
  }

  /** The key names of the item tables (`undefined`: no such table). */
  tableKeys(tables: readonly string[]): Observable<ReadonlyMap<string, readonly string[] | undefined>> {
    return this.#call('tableKeys', () => () => new Map(tables.map((table) => [table, this.items.keyNames(table)])));
  }

  renew(lease: HeldLease): Observable<void> {
    return this.#fenced('renew', lease, (row) => row);
  }

  release(lease: HeldLease, write: CheckpointWrite): Observable<void> {
    return this.#fenced('release', lease, (row) => {
      const { ownerIncarnation: _released, ...rest } = written(row, write, this.#options.now());
      return { ...rest, ownerId: undefined, ownerName: undefined, lastOwnerId: this.#options.clientId };
    });
  }

  resetCheckpoint(shardId: string, checkpoint: StoredCheckpoint | undefined, options: { readonly force: boolean }): Observable<void> {
    return this.#call('resetCheckpoint', () => () => {
      const nowMs = this.#options.now();
      const row = this.table.row(shardId) ?? {
        shardId, checkpoint: undefined, ownerId: undefined, ownerName: undefined, lastUpdateNs: undefined,
        finished: false, leaseCounter: 0, lastOwnerId: undefined,
      };
      if (!options.force && !this.#leases.see(shardId, this.table.row(shardId), 'reset')) {
        throw new LeaseHeldError(shardId, { cause: conditionalCheckFailed() });
      }
      // The owner's clients row is told first (src/dynamodb/revocation.ts): its next heartbeat drops the lease.
      const { ownerId, ownerIncarnation } = row;
      if (ownerId !== undefined && ownerIncarnation !== undefined) {
        this.#options.clients?.updateClient(ownerId, (client) => (client.incarnation === ownerIncarnation ? { ...client, revoked: [...new Set([...(client.revoked ?? []), shardId])].sort() } : client));
      }
      // Every reset is a fence: the owner goes and the counter moves; the acked ranges go (a reset means "read again from here").
      const { acked: _dropped, deliveries: _uncounted, ownerIncarnation: _fenced, ...kept } = row;
      this.table.put({ ...kept, checkpoint: checkpoint === undefined ? undefined : withResetFloor(checkpoint, row.checkpoint, new Date(this.table.now?.() ?? nowMs)), ownerId: undefined, ownerName: undefined, leaseCounter: row.leaseCounter + 1, lastUpdateNs: nanosFromMillis(nowMs) });
    });
  }

  #fenced(operation: MemoryLeaseOperation, lease: HeldLease, change: (row: CheckpointRow) => CheckpointRow): Observable<void> {
    return this.#call(operation, () => () => {
      const row = this.table.row(lease.shardId);
      if (row?.ownerId !== lease.ownerId || row.leaseCounter !== lease.leaseCounter) {
        throw new LeaseLostError(lease.shardId, { cause: conditionalCheckFailed(), revoked: row !== undefined && row.ownerId === undefined });
      }
      this.table.put({ ...change(row), lastUpdateNs: nanosFromMillis(this.#options.now()) });
    });
  }

  /** Counts the call, applies a queued fault, then answers after the latency with `answer()`. */
  #call<T>(operation: MemoryLeaseOperation, start: () => () => T): Observable<T> {
    return defer(() => {
      this.calls[operation] += 1;
      const fault = this.#takeFault(operation);
      if (fault !== undefined && !fault.applied) return throwError(() => fault.error);
      const started = start();
      // A lost response: applied, then answered with the fault.
      const answer = fault === undefined ? started : (): T => {
        started();
        throw fault.error;
      };
      const latencyMs = this.#options.latencyMs ?? 0;
      return latencyMs > 0 ? timer(latencyMs, this.#options.scheduler).pipe(map(() => answer())) : defer(() => of(answer()));
    });
  }

  #takeFault(operation: MemoryLeaseOperation): { readonly error: unknown; readonly applied: boolean } | undefined {
    const index = this.#faults.findIndex((f) => (f.operations === undefined ? isWrite(operation) : f.operations.includes(operation)));
    if (index < 0) return undefined;
    return this.#faults.splice(index, 1)[0];
  }
}

function isWrite(operation: MemoryLeaseOperation): boolean {
  return operation !== 'read' && operation !== 'readMany' && operation !== 'tableKeys';
}

/** The lease attributes of a row as DynamoDB returns them (ALL_OLD), for the transaction's answer. */
function rowItem(row: CheckpointRow): Record<string, AttributeValue> {
  return {
    [A.shard]: { S: row.shardId },
    [A.leaseCounter]: { N: String(row.leaseCounter) },
    ...(row.ownerId === undefined ? {} : { [A.ownerId]: { S: row.ownerId } }),
    ...(row.transactionToken === undefined ? {} : { [A.transactionToken]: { S: row.transactionToken } }),
  };
}

/**
 * What a commit or release changes: the checkpoint when given, `Finished` (never cleared), and the
 * acked ranges, replaced — stored as the DynamoDB store stores them (encoded with the checkpoint
 * written, capped) and as it reads them back (trusted only with the checkpoint the row then holds).
 */
// A write that moves the checkpoint also records when (CheckpointUpdate), as the DynamoDB store does.
function written(row: CheckpointRow, write: CheckpointWrite, nowMs: number): CheckpointRow {
  const { acked: _replaced, deliveries: _rewritten, ...rest } = row;
  const checkpoint = write.checkpoint ?? row.checkpoint;
  const acked = storedRanges(write, checkpoint);
  // As stored and read back: tagged with the checkpoint written, trusted with the row's.
  const deliveries = decodeDeliveries(encodeDeliveries(write.checkpoint, write.deliveries ?? []), checkpoint);
  const moved = advances(row.checkpoint, write.checkpoint) ? { checkpointUpdateNs: nanosFromMillis(nowMs) } : {};
  return { ...rest, checkpoint, finished: row.finished || write.finished, ...moved, ...(acked === undefined ? {} : { acked }), ...(deliveries === undefined ? {} : { deliveries }) };
}

function storedRanges(write: CheckpointWrite, rowCheckpoint: StoredCheckpoint | undefined): AckedRange[] | undefined {
  const text = encodeWrittenRanges(write.checkpoint, write.acked ?? []);
  return text === undefined ? undefined : decodeAckedRanges(text, rowCheckpoint);
}

function sameLeaseState(a: CheckpointRow | undefined, b: CheckpointRow | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.leaseCounter === b.leaseCounter && a.lastUpdateNs === b.lastUpdateNs && a.ownerId === b.ownerId;
}

/** The error DynamoDB's SDK raises on a failed condition, kept as the `cause` of `LeaseLostError` like the real store does. */
function conditionalCheckFailed(): Error {
  return Object.assign(new Error('The conditional request failed'), { name: 'ConditionalCheckFailedException' });
}
