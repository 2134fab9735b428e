// processBatches: the RxJS composition around the pure batch window (when a shard's next batch is
// cut) and the per-batch settle loop. One batch at a time per shard, shards in parallel.
import { Observable, type OperatorFunction, type Subscription } from 'rxjs';
import { StreamRecord } from '../reading/delivered-record.js';
import { leaseSignalOf } from '../reading/lease-signal.js';
import type { KinsumerRecord } from '../types.js';
import { BatchWindow } from './batch-window.js';
import { resolveBatchesOptions } from './process-options.js';
import type { BatchHandler, ProcessBatchesOptions, ProcessedBatch } from './process-types.js';
import { settleBatch$ } from './settle-batch.js';
import { LoopGuard, ShardWorks } from './shard-work.js';

interface ShardBatches {
  readonly window: BatchWindow<KinsumerRecord>;
  readonly loop: LoopGuard;
  running: boolean;
  timer: Subscription | undefined;
  timerAtMs: number;
}

/**
 * Processes each shard's records in batches and acks them: per shard in sequence order, one
 * batch at a time, never mixing shards (shards run in parallel). A batch is cut at `maxSize`
 * records, or when its first record has waited `maxWaitMs` (and at once when the source
 * completes). The handler gets the batch and may return `{ failed }`: those records (and only
 * they) are retried as a smaller batch, in order, with capped exponential backoff and jitter on
 * `scheduler`; a handler that throws or rejects fails the whole batch. Records that fail every
 * attempt (or are older than `maxRecordAgeMs`) go to `onFailure` one at a time in sequence order;
 * everything else is acked as soon as its handler call resolves. The next batch of the shard
 * starts when the current one is settled.
 *
 * Emits a {@link ProcessedBatch} per settled batch (every record in it acked, each with its
 * outcome), in completion order. Errors as `processRecords` does (a record failing for good
 * without `onFailure`: its last error; `onFailure` failing: that error), and with a
 * `KinsumerError` when the handler reports a failed record that is not in its batch. `ctx.signal`
 * aborts as in `processRecords`: the batch then gets no further call, retry, `onFailure` or ack
 * and is not emitted (records acked before stay acked).
 *
 * ```ts
 * consumer.records$.pipe(
 *   processBatches(async (records) => {
 *     const rejected = await bulkWrite(records);        // the ones the store refused
 *     return { failed: rejected };
 *   }, { maxSize: 500, maxWaitMs: 1000, scheduler: consumer.options.scheduler }),
 * ).subscribe();
 * ```
 *
 * @param handler - Processes one batch of one shard.
 * @param options - See {@link ProcessBatchesOptions}.
 */
export function processBatches(handler: BatchHandler, options?: ProcessBatchesOptions): OperatorFunction<KinsumerRecord, ProcessedBatch> {
  const resolved = resolveBatchesOptions(handler, options);
  const { maxSize, maxWaitMs, scheduler, elapsedNow } = resolved;

  return (source) => new Observable<ProcessedBatch>((subscriber) => {
    const shards = new ShardWorks<ShardBatches>(subscriber, () => ({
      window: new BatchWindow(maxSize, maxWaitMs, leaseSignalOf, (record: KinsumerRecord) => StreamRecord.paced(record)), loop: new LoopGuard(), running: false, timer: undefined, timerAtMs: 0,
    }));

    // Cuts and starts the shard's next batch when one is due, else arms the window's timer. A
    // record arriving cuts a full batch only, never one due by time: the rest of its GetRecords
    // page, emitted in the same synchronous burst, joins first (a 0 ms window lasts one scheduler turn).
    const consider = (shardId: string, work: ShardBatches, arriving = false): void => {
      const ran = work.loop.run(() => {
        while (!work.running && !subscriber.closed) {
          const decision = work.window.next(shards.sourceDone ? Infinity : arriving ? -Infinity : elapsedNow());
          if (decision.kind === 'idle') break;
          if (decision.kind === 'wait') {
            arm(shardId, work, decision.untilMs);
            break;
          }
          disarm(work);
          // A batch is one lease's records: all of them left to the next owner, or none.
          const signal = shards.signals.for(decision.items[0] as KinsumerRecord);
          if (signal.aborted) continue;
          work.running = true;
          subscriber.add(settleBatch$(shardId, decision.items, signal, handler, resolved).subscribe({
            next: (batch) => subscriber.next(batch),
            error: (error: unknown) => subscriber.error(error),
            complete: () => {
              work.running = false;
              consider(shardId, work);
            },
          }));
        }
      });
      if (ran && !work.running && work.window.length === 0) {
        disarm(work);
        shards.idle(shardId, work);
      }
    };

    const arm = (shardId: string, work: ShardBatches, untilMs: number): void => {
      if (work.timer !== undefined && work.timerAtMs === untilMs) return;
      disarm(work);
      work.timerAtMs = untilMs;
      work.timer = scheduler.schedule(() => {
        work.timer = undefined;
        consider(shardId, work);
      }, Math.max(0, untilMs - elapsedNow()));
    };

    const disarm = (work: ShardBatches): void => {
      work.timer?.unsubscribe();
      work.timer = undefined;
    };

    subscriber.add(source.subscribe({
      next: (record) => {
        if (shards.signals.for(record).aborted) return;
        const work = shards.of(record.shardId);
        work.window.push(record, elapsedNow());
        consider(record.shardId, work, true);
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () => {
        shards.sourceCompleted();
        // What still waits for its window is cut now: nothing more will join it.
        for (const [shardId, work] of shards.entries()) consider(shardId, work);
      },
    }));

    return () => {
      for (const [, work] of shards.entries()) disarm(work);
      shards.teardown('processBatches was unsubscribed');
    };
  });
}
