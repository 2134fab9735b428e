// One batch of one shard from its first handler call to every record acked: records the handler
// reports failed (or all of them, when it throws) are retried as a smaller batch, in order, after a
// backoff delay, unless their error cannot succeed on another try or retryIf says no; those that
// fail every attempt, are not retried or grow too old go to onFailure one at a time, in sequence
// order. Emits one ProcessedBatch and completes; completes without emitting when the batch's signal
// aborts (records acked before that stay acked); errors like settleRecord$.
import { Observable, type Subscription } from 'rxjs';
import { samePosition } from '../checkpoint/sequence-number.js';
import { KinsumerError } from '../errors/kinsumer-errors.js';
import type { KinsumerRecord } from '../types.js';
import { abortableWait } from './abortable-wait.js';
import { batchCall$, settle$ } from './handler-call.js';
import type { ResolvedFailurePolicy } from './process-options.js';
import type { BatchHandler, BatchResult, FailedRecord, ProcessedBatch, ProcessedRecord } from './process-types.js';
import { afterFailure, tooOld, worthRetrying } from './record-retry.js';
import { ackWithWrites$, isFinalWriteFailure, writesOf } from './writes-ack.js';

/** Settles one batch (records of one shard, in sequence order); see the file comment. */
export function settleBatch$(shardId: string, batch: readonly KinsumerRecord[], signal: AbortSignal, handler: BatchHandler, policy: ResolvedFailurePolicy): Observable<ProcessedBatch> {
  const { retry, maxRecordAgeMs, onFailure, retryIf, scheduler, random } = policy;
  return new Observable<ProcessedBatch>((subscriber) => {
    const attemptsOf = new Map<KinsumerRecord, number>(batch.map((record) => [record, 0]));
    const lastErrorOf = new Map<KinsumerRecord, unknown>();
    const outcomes = new Map<KinsumerRecord, ProcessedRecord>();
    const failures: FailedRecord[] = [];
    let remaining: readonly KinsumerRecord[] = batch;
    let calls = 0;
    let running: Subscription | undefined;
    let stopWaiting: (() => void) | undefined;

    const leave = (): void => subscriber.complete();

    const attempt = (): void => {
      if (signal.aborted) return leave();
      const young: KinsumerRecord[] = [];
      for (const record of remaining) {
        const old = tooOld(record, scheduler, maxRecordAgeMs, lastErrorOf.get(record));
        if (old === undefined) young.push(record);
        else failures.push({ record, error: old, attempts: attemptsOf.get(record) ?? 0 });
      }
      remaining = young;
      if (remaining.length === 0) return deliverFailures();
      calls += 1;
      for (const record of remaining) attemptsOf.set(record, (attemptsOf.get(record) ?? 0) + 1);
      const ctx = { attempt: calls, signal };
      const records = remaining;
      let result: BatchResult | void = undefined;
      running = batchCall$(records, ctx, handler).subscribe({
        next: (value) => { result = value; },
        error: (error: unknown) => failed(records, error),
        complete: () => answered(records, result),
      });
    };

    const answered = (records: readonly KinsumerRecord[], result: BatchResult | void): void => {
      if (signal.aborted) return leave();
      const failedSet = new Set<KinsumerRecord>();
      const inBatch = new Set(records);
      for (const reported of result?.failed ?? []) {
        // Usually the very objects of the batch; a copy is matched by its place in the shard.
        const record = inBatch.has(reported) ? reported : records.find((r) => sameRecord(r, reported));
        if (record === undefined) {
          return subscriber.error(new KinsumerError(`the batch handler reported record ${String(reported?.sequenceNumber)} failed, which is not in its batch of shard ${shardId}`));
        }
        failedSet.add(record);
      }
      const succeeded = records.filter((record) => !failedSet.has(record));
      const reported = records.filter((record) => failedSet.has(record));
      const processed = (): void => {
        for (const record of succeeded) outcomes.set(record, { record, outcome: 'processed', attempts: attemptsOf.get(record) ?? 0 });
      };
      const goOn = (): void => {
        if (reported.length === 0) return deliverFailures();
        // The handler's report is no reason to give up: retriable, like any other failed attempt.
        failed(reported, new KinsumerError(`reported failed by the batch handler (attempt ${calls})`, { retriable: true }));
      };
      const writes = writesOf(result);
      if (writes === undefined || succeeded.length === 0) {
        for (const record of succeeded) record.ack();
        processed();
        return goOn();
      }
      // The writes belong to the records that did not fail: committed with their checkpoint (§8.1).
      running = ackWithWrites$(succeeded, writes).subscribe({
        complete: () => {
          processed();
          goOn();
        },
        error: (error: unknown) => {
          if (signal.aborted) return leave();
          if (isFinalWriteFailure(error)) {
            for (const record of succeeded) failures.push({ record, error, attempts: attemptsOf.get(record) ?? 0 });
            return goOn();
          }
          // A failed condition: the batch's records are called again, with those it reported failed.
          failed(records, error);
        },
      });
    };

    const failed = (records: readonly KinsumerRecord[], error: unknown): void => {
      if (signal.aborted) return leave();
      for (const record of records) lastErrorOf.set(record, error);
      const step = afterFailure(retry, calls, random);
      let again = step.kind === 'retry' ? records : [];
      try {
        again = again.filter((record) => worthRetrying(error, record, retryIf));
      } catch (retryIfError) {
        return subscriber.error(retryIfError);
      }
      const retried = new Set(again);
      for (const record of records) if (!retried.has(record)) failures.push({ record, error, attempts: attemptsOf.get(record) ?? 0 });
      remaining = again;
      if (step.kind === 'retry' && again.length > 0) return wait(step.delayMs);
      deliverFailures();
    };

    // The wait ends early, and the record is left, when the signal aborts.
    const wait = (delayMs: number): void => {
      stopWaiting = abortableWait(scheduler, signal, delayMs, () => {
        stopWaiting = undefined;
        attempt();
      }, leave);
    };

    // onFailure one record at a time, in sequence order; then the batch is done.
    const deliverFailures = (): void => {
      const order = new Map(batch.map((record, i) => [record, i]));
      const queue = [...failures].sort((x, y) => (order.get(x.record) ?? 0) - (order.get(y.record) ?? 0));
      // A loop, not recursion, while onFailure completes synchronously (a batch may hold thousands).
      const next = (): void => {
        for (;;) {
          if (signal.aborted) return leave();
          const failure = queue.shift();
          if (failure === undefined) {
            subscriber.next({ shardId, records: batch.map((record) => outcomes.get(record) as ProcessedRecord) });
            return subscriber.complete();
          }
          if (onFailure === undefined) return subscriber.error(failure.error);
          let synchronous = true;
          let doneSynchronously = false;
          running = settle$(() => onFailure(failure)).subscribe({
            error: (error: unknown) => subscriber.error(error),
            complete: () => {
              if (signal.aborted) return leave();
              failure.record.ack();
              outcomes.set(failure.record, { record: failure.record, outcome: 'failed', attempts: failure.attempts, error: failure.error });
              if (synchronous) doneSynchronously = true;
              else next();
            },
          });
          synchronous = false;
          if (!doneSynchronously) return;
        }
      };
      next();
    };

    attempt();
    return () => {
      stopWaiting?.();
      running?.unsubscribe();
    };
  });
}

function sameRecord(a: KinsumerRecord, b: KinsumerRecord | undefined): boolean {
  return b !== undefined && a.shardId === b.shardId && samePosition(a, b);
}
