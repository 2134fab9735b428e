// processRecords: the RxJS composition around the pure lanes (which record may start) and the
// per-record settle loop. Records are taken as the consumer emits them — the consumer's own bound
// (maxInFlightRecords per shard, released by acks) limits what waits here.
import { Observable, type OperatorFunction } from 'rxjs';
import type { KinsumerRecord } from '../types.js';
import { LaneQueue, type Started } from './key-lanes.js';
import { resolveRecordsOptions } from './process-options.js';
import type { ProcessRecordsOptions, ProcessedRecord, RecordHandler } from './process-types.js';
import { settleRecord$ } from './settle-record.js';
import { LoopGuard, ShardWorks } from './shard-work.js';

interface ShardWork {
  readonly lanes: LaneQueue<KinsumerRecord>;
  readonly loop: LoopGuard;
}

/**
 * Processes each record with `handler` and acks it: per shard in order (`ordering: 'shard'`, the
 * default), per partition key in order with up to `concurrency` keys at once (`'partitionKey'`),
 * or up to `concurrency` at once in any order (`'none'`); shards always in parallel. A failing
 * record is retried with capped exponential backoff and jitter on `scheduler`, then handed to
 * `onFailure`; the record is acked once its handler or `onFailure` resolves — never call `ack()`
 * yourself inside it.
 *
 * Emits a {@link ProcessedRecord} per settled record, in completion order. Errors with the
 * handler's error when a record fails every attempt and there is no `onFailure`, and with
 * `onFailure`'s own error if it throws or rejects (that record is not acked). Completes once the
 * source completed and every record taken was settled.
 *
 * `ctx.signal` aborts when the record's lease ends (lost to another client, or given up after the
 * drain of a stop or rebalance) and when the output is unsubscribed or errors. From then on that
 * record gets no handler call, retry, `onFailure` or ack (the lease's next owner processes it), and
 * is not emitted; a call already running is left to finish, and still counts against `concurrency`
 * until it does.
 *
 * Options are checked at once: a bad one throws `ConfigError` naming it.
 *
 * ```ts
 * consumer.records$.pipe(
 *   processRecords(async (record, { signal }) => { await save(record.data, { signal }); }, {
 *     ordering: 'partitionKey', concurrency: 64, scheduler: consumer.options.scheduler,
 *     retry: { maxAttempts: 5, initialDelayMs: 100, maxDelayMs: 30_000 },
 *     onFailure: async ({ record, error }) => { await deadLetter(record, error); },
 *   }),
 * ).subscribe();
 * ```
 *
 * @param handler - Processes one record; done when its promise resolves (or Observable completes).
 * @param options - See {@link ProcessRecordsOptions}.
 */
export function processRecords(handler: RecordHandler, options?: ProcessRecordsOptions): OperatorFunction<KinsumerRecord, ProcessedRecord> {
  const resolved = resolveRecordsOptions(handler, options);
  const { ordering, concurrency } = resolved;
  const laneOf = ordering === 'partitionKey' ? (record: KinsumerRecord) => record.partitionKey
    : ordering === 'shard' ? () => '' : undefined;

  return (source) => new Observable<ProcessedRecord>((subscriber) => {
    const shards = new ShardWorks<ShardWork>(subscriber, () => ({
      lanes: new LaneQueue<KinsumerRecord>(laneOf === undefined ? { concurrency } : { concurrency, laneOf }),
      loop: new LoopGuard(),
    }));

    const start = (shardId: string, work: ShardWork, started: Started<KinsumerRecord>): void => {
      const record = started.item;
      const signal = shards.signals.for(record);
      if (signal.aborted) {
        work.lanes.release(started);
        return;
      }
      subscriber.add(settleRecord$(record, signal, handler, resolved).subscribe({
        next: (processed) => subscriber.next(processed),
        error: (error: unknown) => subscriber.error(error),
        complete: () => {
          work.lanes.release(started);
          pump(shardId, work);
        },
      }));
    };

    // Starts what the lanes allow.
    const pump = (shardId: string, work: ShardWork): void => {
      const ran = work.loop.run(() => {
        for (let started = work.lanes.take(); started !== undefined && !subscriber.closed; started = work.lanes.take()) {
          start(shardId, work, started);
        }
      });
      if (ran && work.lanes.idle) shards.idle(shardId, work);
    };

    subscriber.add(source.subscribe({
      next: (record) => {
        const work = shards.of(record.shardId);
        work.lanes.enqueue(record);
        pump(record.shardId, work);
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () => shards.sourceCompleted(),
    }));

    return () => shards.teardown('processRecords was unsubscribed');
  });
}
