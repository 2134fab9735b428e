// A failed record's way out of both operators (design §9.3, "dead letters exactly once"):
// onFailure is called, and the record is acked once it resolves — with the `{ writes }` it
// returns, committed in one transaction with the checkpoint that passes the record (§8.1's write
// lane), so a dead letter written that way is written exactly once: never lost, never twice.
import { Observable, type Subscription } from 'rxjs';
import type { HandlerOperator } from '../errors/handler-result-error.js';
import { settle$ } from './handler-call.js';
import { failureResultOf } from './handler-result.js';
import type { FailedRecord, FailureHandler, FailureResult } from './process-types.js';
import { ackWithWrites$, writesOf } from './writes-ack.js';

/**
 * Calls `onFailure(failure)` and acks the record. Emits once (then completes) when it is acked —
 * its dead letter's writes, if any, committed with the checkpoint covering it; completes without
 * emitting when `signal` aborts first (the lease ended: the next owner delivers the record again,
 * and nothing of this dead letter's writes was applied). Errors with what onFailure threw or
 * rejected with, a `HandlerResultError` for a result that is neither nothing nor `{ writes }`, or
 * what its writes failed with (`WritesTooLargeError`, `WriteRejectedError`, `WriteConditionError`):
 * the record is not acked.
 */
export function deadLetter$(operator: HandlerOperator, onFailure: FailureHandler, failure: FailedRecord, signal: AbortSignal): Observable<void> {
  const { record } = failure;
  return new Observable<void>((subscriber) => {
    let result: FailureResult | undefined;
    let writing: Subscription | undefined;
    const acked = (): void => {
      subscriber.next();
      subscriber.complete();
    };
    const calling = settle$(() => onFailure(failure)).subscribe({
      next: (value) => {
        try {
          result = failureResultOf(operator, value);
        } catch (error) {
          subscriber.error(error);
        }
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () => {
        if (subscriber.closed) return;
        if (signal.aborted) return subscriber.complete();
        const writes = writesOf(result);
        if (writes === undefined) {
          record.ack();
          return acked();
        }
        writing = ackWithWrites$([record], writes).subscribe({
          complete: acked,
          // The lease ended before they committed: not applied, the record goes to the next owner.
          error: (error: unknown) => (signal.aborted ? subscriber.complete() : subscriber.error(error)),
        });
      },
    });
    return () => {
      calling.unsubscribe();
      writing?.unsubscribe();
    };
  });
}
