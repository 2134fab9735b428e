// The frame processRecords and processBatches share: per-shard work made at a shard's first record
// and dropped when that shard is idle, completion once the source completed and no shard has work
// left, a guard against re-entry, and every handler signal aborted when the subscription ends.
import type { Subscriber } from 'rxjs';
import { RecordSignals } from './record-signals.js';

/** The shards of one operator subscription that have records waiting or running. */
export class ShardWorks<W> {
  /** The signals handed to handler calls: aborted with the subscription. */
  readonly signals = new RecordSignals();
  readonly #works = new Map<string, W>();
  #sourceDone = false;

  constructor(private readonly subscriber: Subscriber<unknown>, private readonly create: () => W) {}

  /** The source completed: nothing more will arrive. */
  get sourceDone(): boolean {
    return this.#sourceDone;
  }

  /** The work of `shardId`, made on its first record. */
  of(shardId: string): W {
    let work = this.#works.get(shardId);
    if (work === undefined) {
      work = this.create();
      this.#works.set(shardId, work);
    }
    return work;
  }

  /** Every shard with work, as `[shardId, work]` (a copy: the caller may drop entries while it walks). */
  entries(): [string, W][] {
    return [...this.#works];
  }

  /** `work` of `shardId` has nothing waiting or running: it goes, and the output completes if it was the last. */
  idle(shardId: string, work: W): void {
    if (this.#works.get(shardId) !== work) return;
    this.#works.delete(shardId);
    this.#checkComplete();
  }

  /** The source completed. */
  sourceCompleted(): void {
    this.#sourceDone = true;
    this.#checkComplete();
  }

  /** The subscription ends (unsubscribed, errored or done): every handler call's signal aborts. */
  teardown(reason: string): void {
    this.signals.abort(new Error(reason));
  }

  #checkComplete(): void {
    if (this.#sourceDone && this.#works.size === 0) this.subscriber.complete();
  }
}

/**
 * Runs a loop body unless it is already running further up the stack: a record or batch that
 * settles synchronously re-enters the loop that started it, which then picks up the next one,
 * instead of a nested call (the stack never grows).
 */
export class LoopGuard {
  #running = false;

  /** Runs `body` and returns `true`, or returns `false` at once when called from inside `body`. */
  run(body: () => void): boolean {
    if (this.#running) return false;
    this.#running = true;
    try {
      body();
    } finally {
      this.#running = false;
    }
    return true;
  }
}
