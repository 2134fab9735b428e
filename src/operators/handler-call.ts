// The one place where the processing operators call the user's handler: with
// `@opentelemetry/api` installed, each call is a span (src/telemetry/handler-span.ts).
import { type Observable, defaultIfEmpty, defer, from, isObservable, map, of, takeLast } from 'rxjs';
import { tracedCall$ } from '../telemetry/handler-span.js';
import { otelApi } from '../telemetry/otel-api.js';
import type { KinsumerRecord } from '../types.js';
import { batchResultOf, recordResultOf } from './handler-result.js';
import type { BatchHandler, BatchResult, HandlerResult, ProcessContext, RecordHandler, RecordResult } from './process-types.js';

/**
 * Calls a record handler: emits its result, then completes; errors with what it threw, or with a
 * `HandlerResultError` (not retriable) when what it returned is not a result.
 */
export function recordCall$(record: KinsumerRecord, ctx: ProcessContext, handler: RecordHandler): Observable<RecordResult | undefined> {
  return handlerCall$([record], ctx, () => handler(record, ctx)).pipe(map(recordResultOf));
}

/** As {@link recordCall$}, for a batch handler. */
export function batchCall$(records: readonly KinsumerRecord[], ctx: ProcessContext, handler: BatchHandler): Observable<BatchResult | undefined> {
  return handlerCall$(records, ctx, () => handler(records, ctx)).pipe(map(batchResultOf));
}

/**
 * Calls a handler on `records` (one record, or one batch of one shard): emits what it returned,
 * resolved to, or last emitted (`undefined` for an Observable that completed empty), then
 * completes; errors with what it threw, rejected or errored with.
 */
export function handlerCall$<R>(records: readonly KinsumerRecord[], ctx: ProcessContext, call: () => HandlerResult<R>): Observable<R | undefined> {
  const api = otelApi();
  if (api === undefined) return settle$(call);
  return tracedCall$(api, records, ctx.attempt, call, settle$) as Observable<R | undefined>;
}

/**
 * Runs a user callback (handler or onFailure) and turns its result into one value then
 * completion: a promise is awaited, an Observable followed to its completion, anything else
 * (an array included) is the value itself.
 */
export function settle$<R>(call: () => HandlerResult<R>): Observable<R | undefined> {
  return defer(() => {
    const result = call();
    if (isObservable(result)) return result.pipe(takeLast(1), defaultIfEmpty(undefined));
    if (isPromiseLike(result)) return from(result);
    return of(result);
  });
}

function isPromiseLike<R>(value: HandlerResult<R>): value is PromiseLike<R> {
  return typeof value === 'object' && value !== null && typeof (value as Partial<PromiseLike<R>>).then === 'function';
}
