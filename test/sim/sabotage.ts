// Deliberately broken ports, to prove the checker fails a group that breaks a guarantee: a stream
// that hides one record from every reader, and a lease store that accepts writes from owners it
// should have fenced. Used by the simulation's own tests only.
import { type Observable, catchError, defer, map, of, throwError } from 'rxjs';
import { nanosFromMillis } from '../../src/dynamodb/codec.js';
import { LeaseLostError } from '../../src/errors/kinsumer-errors.js';
import type { RecordsPage, StreamPort } from '../../src/ports/stream.js';
import type { CheckpointRow, CheckpointWrite, HeldLease, LeaseStore, WritesTransaction } from '../../src/ports/lease-store.js';
import type { MemoryCheckpointTable, MemoryLeaseStore } from '../../src/testing/memory-lease-store.js';

/** A stream whose GetRecords never returns the records `hidden` picks. */
export function leakyStream(stream: StreamPort, hidden: (seq: string) => boolean): StreamPort {
  return new Proxy(stream, {
    get(target, property, receiver) {
      if (property !== 'getRecords') return bound(target, property, receiver);
      return (iterator: string, limit: number): Observable<RecordsPage> => target.getRecords(iterator, limit)
        .pipe(map((page) => ({ ...page, records: page.records.filter((r) => !hidden(r.sequenceNumber)) })));
    },
  });
}

/** A lease store whose commits and renewals ignore the fence: a fenced owner's write lands anyway. */
export function unfencedStore(store: LeaseStore, table: MemoryCheckpointTable, now: () => number): LeaseStore {
  const force = (lease: HeldLease, write: CheckpointWrite | undefined) => (source: Observable<void>): Observable<void> => source.pipe(
    catchError((error: unknown) => {
      if (!(error instanceof LeaseLostError)) return throwError(() => error);
      return defer(() => {
        const row = table.row(lease.shardId);
        if (row !== undefined) table.put({ ...row, checkpoint: write?.checkpoint ?? row.checkpoint, lastUpdateNs: nanosFromMillis(now()) });
        return of(undefined);
      });
    }),
  );
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'commit') return (lease: HeldLease, write: CheckpointWrite) => target.commit(lease, write).pipe(force(lease, write));
      if (property === 'renew') return (lease: HeldLease) => target.renew(lease).pipe(force(lease, undefined));
      return bound(target, property, receiver);
    },
  });
}

/**
 * A lease store whose transactions (records' writes with their checkpoint, §8.1) carry no condition
 * on the checkpoint row — neither the lease (owner, fencing token) nor the last transaction's
 * token: a fenced owner's records' writes apply with its checkpoint.
 */
export function unfencedTransactions(store: MemoryLeaseStore, now: () => number): LeaseStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property !== 'commitWithWrites') return bound(target, property, receiver);
      return (lease: HeldLease, write: CheckpointWrite, transaction: WritesTransaction): Observable<void> => defer(() => {
        target.items.transact(transaction.writes, {
          token: transaction.token,
          nowMs: now(),
          extra: {
            check: () => ({ failed: target.table.row(lease.shardId) === undefined }),
            apply: () => {
              const row = target.table.row(lease.shardId) as CheckpointRow;
              const { acked: _dropped, ...rest } = row;
              target.table.put({
                ...rest, checkpoint: write.checkpoint, finished: row.finished || write.finished, ...(write.acked === undefined ? {} : { acked: write.acked }),
                transactionToken: transaction.token, lastUpdateNs: nanosFromMillis(now()),
              });
            },
          },
        });
        return of(undefined);
      });
    },
  });
}

/** A member of `target`, methods bound to it (the in-memory ports keep private fields). */
function bound(target: object, property: string | symbol, receiver: unknown): unknown {
  const value: unknown = Reflect.get(target, property, receiver);
  return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
}
