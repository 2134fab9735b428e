// How the processing operators ack records whose handler returned writes of their own (design
// §8.1): the writes are handed to the lease's write lane with the records they belong to, and the
// record (or batch) is settled only once they are committed — so the next record of the same
// lane (shard or partition key) is handled after them, and a condition that failed comes back
// here to be retried with a fresh handler call.
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { Observable } from 'rxjs';
import { WriteRejectedError, WritesTooLargeError } from '../errors/write-errors.js';
import { StreamRecord } from '../reading/delivered-record.js';
import type { KinsumerRecord } from '../types.js';
import type { BatchResult, RecordResult } from './process-types.js';

/** The `writes` of a handler's result, checked by `handler-result.ts`, or `undefined` when it returned none. */
export function writesOf(result: RecordResult | BatchResult | void): readonly TransactWriteItem[] | undefined {
  return result === undefined ? undefined : result.writes;
}

/**
 * Failures of writes that another handler call would not mend: the writes exceed a transaction,
 * or DynamoDB refuses them as they are. The records go to `onFailure` at once.
 */
export function isFinalWriteFailure(error: unknown): boolean {
  return error instanceof WritesTooLargeError || (error instanceof WriteRejectedError && !error.retriable);
}

/**
 * Acks `records` (one record, or the records of a batch that did not fail) with `writes` that
 * belong to them all. Completes once the writes are committed with the checkpoint covering the
 * records; errors with `WritesTooLargeError` (nothing acked), `WriteConditionError` or
 * `WriteRejectedError` (not applied; the records are unacked again), or with the reason the
 * lease ended first (not applied; the lease's signal aborts too). Records that are not delivered
 * records of a lease (hand-made ones in tests) are acked with `ack({ writes })` and complete at once.
 */
export function ackWithWrites$(records: readonly KinsumerRecord[], writes: readonly TransactWriteItem[]): Observable<void> {
  return new Observable<void>((subscriber) => {
    if (writes.length === 0) {
      for (const record of records) record.ack();
      subscriber.complete();
      return;
    }
    if (!(records[0] instanceof StreamRecord)) {
      records[0]?.ack({ writes });
      for (const record of records.slice(1)) record.ack();
      subscriber.complete();
      return;
    }
    let open = true;
    try {
      StreamRecord.ackWithWrites(records, writes, (outcome) => {
        if (!open) return;
        if (outcome.kind === 'committed') subscriber.complete();
        // The lease ended: told after the lease's signal aborted (in the same turn), so the
        // operator leaves the record to the next owner rather than counting a failed attempt.
        else if (outcome.kind === 'abandoned') queueMicrotask(() => subscriber.error(outcome.error));
        else subscriber.error(outcome.error);
      });
    } catch (error) {
      subscriber.error(error);
    }
    return () => { open = false; };
  });
}
