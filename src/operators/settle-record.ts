// One record from its first handler call to acked: calls, backoff waits on the scheduler (not for
// an error that cannot succeed on another try, nor one retryIf refuses), the age limit, onFailure. Emits one ProcessedRecord and completes; completes without emitting when the
// record's signal aborts (the record is left to the lease's next owner); errors when the record
// fails for good without onFailure, or when onFailure fails.
import { Observable, type Subscription } from 'rxjs';
import type { KinsumerRecord } from '../types.js';
import { abortableWait } from './abortable-wait.js';
import { recordCall$, settle$ } from './handler-call.js';
import type { ResolvedFailurePolicy } from './process-options.js';
import type { ProcessedRecord, RecordHandler, RecordResult } from './process-types.js';
import { afterFailure, tooOld, worthRetrying } from './record-retry.js';
import { ackWithWrites$, isFinalWriteFailure, writesOf } from './writes-ack.js';

/** Settles one record; see the file comment for what the Observable does. */
export function settleRecord$(record: KinsumerRecord, signal: AbortSignal, handler: RecordHandler, policy: ResolvedFailurePolicy): Observable<ProcessedRecord> {
  const { retry, maxRecordAgeMs, onFailure, retryIf, scheduler, random } = policy;
  return new Observable<ProcessedRecord>((subscriber) => {
    let attempts = 0;
    let lastError: unknown;
    let running: Subscription | undefined;
    let stopWaiting: (() => void) | undefined;

    const leave = (): void => subscriber.complete();

    const attempt = (): void => {
      if (signal.aborted) return leave();
      const old = tooOld(record, scheduler, maxRecordAgeMs, lastError);
      if (old !== undefined) return giveUp(old);
      attempts += 1;
      const ctx = { attempt: attempts, signal };
      let result: RecordResult | undefined;
      running = recordCall$(record, ctx, handler).subscribe({
        next: (value) => { result = value; },
        error: (error: unknown) => failed(error),
        complete: () => succeeded(result),
      });
    };

    const processed = (): void => {
      subscriber.next({ record, outcome: 'processed', attempts });
      subscriber.complete();
    };

    // A result `{ writes }`: settled once they are committed with the record's checkpoint (§8.1).
    const succeeded = (result: RecordResult | undefined): void => {
      if (signal.aborted) return leave();
      const writes = writesOf(result);
      if (writes === undefined) {
        record.ack();
        return processed();
      }
      running = ackWithWrites$([record], writes).subscribe({
        complete: processed,
        error: (error: unknown) => {
          if (signal.aborted) return leave();
          // Too large or refused: another call would not mend it. A failed condition: call again.
          if (isFinalWriteFailure(error)) return giveUp(error);
          failed(error);
        },
      });
    };

    const failed = (error: unknown): void => {
      if (signal.aborted) return leave();
      lastError = error;
      const step = afterFailure(retry, attempts, random);
      if (step.kind === 'give-up') return giveUp(error);
      let again: boolean;
      try {
        again = worthRetrying(error, record, retryIf);
      } catch (retryIfError) {
        return subscriber.error(retryIfError);
      }
      if (!again) return giveUp(error);
      wait(step.delayMs);
    };

    // The wait ends early, and the record is left, when the signal aborts.
    const wait = (delayMs: number): void => {
      stopWaiting = abortableWait(scheduler, signal, delayMs, () => {
        stopWaiting = undefined;
        attempt();
      }, leave);
    };

    const giveUp = (error: unknown): void => {
      if (onFailure === undefined) return subscriber.error(error);
      const failure = { record, error, attempts };
      running = settle$(() => onFailure(failure)).subscribe({
        error: (failureError: unknown) => subscriber.error(failureError),
        complete: () => {
          if (signal.aborted) return leave();
          record.ack();
          subscriber.next({ record, outcome: 'failed', attempts, error });
          subscriber.complete();
        },
      });
    };

    attempt();
    return () => {
      stopWaiting?.();
      running?.unsubscribe();
    };
  });
}
