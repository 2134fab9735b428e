// The one place where the processing operators call the user's handler. Tracing (a span per
// handler call) wraps this function and nothing else.
import { type Observable, type ObservableInput, defaultIfEmpty, defer, from, of, takeLast } from 'rxjs';
import type { KinsumerRecord } from '../types.js';
import type { ProcessContext } from './process-types.js';

/**
 * Calls a handler on `records` (one record, or one batch of one shard): emits what it resolved to
 * (`undefined` when it returned nothing, or for an Observable that completed empty), then
 * completes; errors with what it threw or rejected with.
 */
export function handlerCall$<R>(_records: readonly KinsumerRecord[], _ctx: ProcessContext, call: () => ObservableInput<R> | void): Observable<R | undefined> {
  // A span goes here: named after the stream, with the records' shard, sequence numbers and ctx.attempt.
  return settle$(call);
}

/** Runs a user callback (handler or onFailure) and turns its result into one value then completion. */
export function settle$<R>(call: () => ObservableInput<R> | void): Observable<R | undefined> {
  return defer(() => {
    const result = call();
    if (result === undefined || result === null) return of(undefined);
    return from(result).pipe(takeLast(1), defaultIfEmpty(undefined));
  });
}
