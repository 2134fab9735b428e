// The record path as users write it: a simulated process's records$ piped into processRecords or
// processBatches, with a handler that takes time, fails some attempts (a batch handler reports
// some records failed, or throws), may or may not stop when its signal aborts, and a dead-letter
// onFailure (or none, so a record that fails every attempt errors the pipeline). Every call and
// every settled record is reported, for key-order and settled-rehandled.
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { Observable, type OperatorFunction, type SchedulerLike, map, tap } from 'rxjs';
import { processBatches, processRecords } from '../../src/index.js';
import type { BatchResult, ProcessContext, ProcessedBatch, ProcessedRecord } from '../../src/index.js';
import type { KinsumerRecord } from '../../src/types.js';
import type { BatchesHandler, RecordsHandler } from './schedule.js';

/** The error a simulated handler fails an attempt (or its pipeline) with. */
export class HandlerFailure extends Error {
  constructor(what = 'handler failed (simulated)') {
    super(what);
    this.name = 'HandlerFailure';
  }
}

/** What the pipeline tells the simulation. */
export interface PipelineHooks {
  /** The client's timers, now() on its monotonic clock (as asyncScheduler is timed in production): handler delays and the operator's retries and windows run on it. */
  readonly clock: SchedulerLike;
  readonly random: () => number;
  /** Once calm, calls take no time and never fail. */
  readonly calm: () => boolean;
  /** A handler call begins on `records` (one, or a batch); returns what to call when it ends. */
  called(records: readonly KinsumerRecord[], attempt: number): () => void;
  /** The operator emitted these records as settled (processed or dead-lettered, and acked). */
  settled(records: readonly KinsumerRecord[]): void;
  /** onFailure returned `record`'s writes as its dead letter: the operator must ack it with them. */
  readonly deadLettered?: (record: KinsumerRecord) => void;
  /** A call on `records` kills the process (the `poison` kind): the call never returns. */
  readonly kills?: (records: readonly KinsumerRecord[]) => boolean;
  /** With effects: the writes a successful call returns for `records` (calm or not), committed with their checkpoint. */
  readonly writes?: (records: readonly KinsumerRecord[]) => TransactWriteItem[];
}

/** processRecords or processBatches as `spec` says, reporting to `hooks`. */
export function operatorPipeline(spec: RecordsHandler | BatchesHandler, hooks: PipelineHooks): OperatorFunction<KinsumerRecord, unknown> {
  const common = {
    retry: { maxAttempts: spec.maxAttempts, initialDelayMs: spec.retryDelayMs, maxDelayMs: Math.max(spec.retryDelayMs, 2000) },
    scheduler: hooks.clock,
    random: hooks.random,
    // A poison record's way out is onFailure; with effects the dead letter is the record's own
    // writes, committed with the checkpoint that passes it (design §9.3): effects-once checks it.
    ...(spec.onFailure || spec.poisonPermille > 0
      ? {
        onFailure: ({ record }: { readonly record: KinsumerRecord }) => {
          if (hooks.writes === undefined) return undefined;
          hooks.deadLettered?.(record);
          return { writes: hooks.writes([record]) };
        },
      }
      : {}),
    ...(spec.poisonPermille > 0 ? { maxDeliveries: spec.maxDeliveries } : {}),
  };
  if (spec.mode === 'records') {
    const handler = (record: KinsumerRecord, ctx: ProcessContext) => call(spec, hooks, [record], ctx, () => {
      if (hooks.random() * 100 < spec.failPercent) throw new HandlerFailure();
      return undefined;
    }).pipe(map(() => (hooks.writes === undefined ? undefined : { writes: hooks.writes([record]) })));
    return (source) => source.pipe(
      processRecords(handler, { ...common, ordering: spec.ordering, concurrency: spec.concurrency }),
      tap((processed: ProcessedRecord) => hooks.settled([processed.record])),
    );
  }
  const handler = (records: readonly KinsumerRecord[], ctx: ProcessContext) => call<BatchResult | undefined>(spec, hooks, records, ctx, () => {
    if (hooks.random() * 100 < spec.throwPercent) throw new HandlerFailure('batch handler threw (simulated)');
    const failed = records.filter(() => hooks.random() * 100 < spec.failPercent);
    return failed.length === 0 ? undefined : { failed };
  }).pipe(map((result): BatchResult | undefined => {
    // The batch's writes belong to the records that did not fail (at most maxSize, 50: one transaction).
    if (hooks.writes === undefined) return result;
    const failed = new Set(result?.failed ?? []);
    return { ...result, writes: hooks.writes(records.filter((record) => !failed.has(record))) };
  }));
  return (source) => source.pipe(
    processBatches(handler, { ...common, maxSize: spec.maxSize, maxWaitMs: spec.maxWaitMs }),
    tap((batch: ProcessedBatch) => hooks.settled(batch.records.map((r) => r.record))),
  );
}

/**
 * One handler call: it takes a random time on the client's clock, then `outcome` decides (a throw
 * fails the attempt). A handler that honours its signal fails at once when it aborts; one that
 * does not runs to its end regardless, as the operator allows.
 */
function call<T>(spec: RecordsHandler | BatchesHandler, hooks: PipelineHooks, records: readonly KinsumerRecord[], ctx: ProcessContext, outcome: () => T): Observable<T> {
  return new Observable<T>((subscriber) => {
    const end = hooks.called(records, ctx.attempt);
    // process.exit() in the handler: nothing of this call returns.
    if (hooks.kills?.(records) === true) return end;
    const calm = hooks.calm();
    const delayMs = calm ? 0 : Math.floor(hooks.random() * (spec.maxDelayMs + 1));
    const decide = calm ? () => undefined as T : outcome;
    const onAbort = (): void => {
      if (!spec.honoursSignal) return;
      action.unsubscribe();
      end();
      subscriber.error(new HandlerFailure('aborted (simulated handler stopped on its signal)'));
    };
    const action = hooks.clock.schedule(() => {
      ctx.signal.removeEventListener('abort', onAbort);
      end();
      let value: T;
      try {
        value = decide();
      } catch (error) {
        subscriber.error(error);
        return;
      }
      subscriber.next(value);
      subscriber.complete();
    }, delayMs);
    if (ctx.signal.aborted) onAbort();
    else ctx.signal.addEventListener('abort', onAbort, { once: true });
    return () => {
      ctx.signal.removeEventListener('abort', onAbort);
      action.unsubscribe();
      end();
    };
  });
}
