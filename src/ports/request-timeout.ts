import { type MonoTypeOperatorFunction, type SchedulerLike, Observable, throwError, timeout } from 'rxjs';
import { RequestTimeoutError } from '../errors/kinsumer-errors.js';

/** How long a call may go unanswered, on which scheduler (a virtual-time one in tests). */
export interface RequestBound {
  /** Milliseconds (the `requestTimeoutMs` option). */
  readonly timeoutMs: number;
  readonly scheduler: SchedulerLike;
}

/**
 * A cold Observable of one request: each subscription sends it once, and unsubscribing aborts it.
 * The ports of kinsumer return these, so RxJS composition (and virtual-time tests with fakes)
 * treats I/O like any other stream. With a `bound`, a request that does not answer in time is
 * aborted (through its AbortSignal) and errors with {@link RequestTimeoutError}, a transient fault.
 */
export function request<T>(send: (signal: AbortSignal) => Promise<T>, bound?: RequestBound & { readonly operation: string }): Observable<T> {
  const request$ = new Observable<T>((subscriber) => {
    const controller = new AbortController();
    // Only a request still in flight is aborted: an abort builds a DOMException, and a request
    // that answered has nothing left to abort (it was one of an idle client's largest costs).
    let settled = false;
    send(controller.signal).then(
      (value) => {
        settled = true;
        subscriber.next(value);
        subscriber.complete();
      },
      (error: unknown) => {
        settled = true;
        subscriber.error(error);
      },
    );
    return () => {
      if (!settled) controller.abort();
    };
  });
  return bound === undefined ? request$ : request$.pipe(withinTimeout(bound.operation, bound));
}

/**
 * Errors with {@link RequestTimeoutError} when the source has not emitted (or completed) within
 * `bound.timeoutMs`; unsubscribing from the source then aborts the request behind it.
 */
export function withinTimeout<T>(operation: string, bound: RequestBound): MonoTypeOperatorFunction<T> {
  return timeout<T, Observable<never>>({
    first: bound.timeoutMs,
    scheduler: bound.scheduler,
    with: () => throwError(() => new RequestTimeoutError(operation, bound.timeoutMs)),
  });
}
