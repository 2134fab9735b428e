// What every shard reader does with the records it fetched, however it fetched them (GetRecords
// pages or SubscribeToShard events): unpack them, emit them while the tracker has room, remember
// the last one emitted (where a rebuilt iterator or a new subscription resumes), and at the end of
// the shard wait for the tracker to finish. One place, so polling and fan-out behave the same.
// With a byte budget (maxInFlightBytes), what it holds counts from the fetch until the checkpoint
// passes it (held-bytes.ts), and it asks the budget (byte-budget.ts) before it fetches and emits.
import {
  type Observable, type SchedulerLike, type Subscriber, EMPTY, concat, defer, filter, ignoreElements, interval, map, merge, of, take,
} from 'rxjs';
import type { Position } from '../ports/position.js';
import type { ShardTracker } from '../ports/shard-tracker.js';
import type { RawRecord } from '../ports/stream.js';
import type { KinsumerEvent, KinsumerRecord, StatReceiver } from '../types.js';
import { DataLostError } from '../errors/kinsumer-errors.js';
import type { BudgetShare, ByteBudget } from './byte-budget.js';
import { type CheckpointGap, DataLossWatch, type OnDataLoss } from './data-loss.js';
import { HeldBytes } from './held-bytes.js';
import type { Delivered, IteratorPlan } from './start-position.js';
import type { StreamClock } from './stream-clock.js';
import { MAX_BYTES_PER_CALL } from './read-budget.js';
import { PageCursor, rawPayloadBytes } from './unpack-page.js';

/** How often a shard kept waiting by the byte budget looks again (other shards' acks free bytes it is not told of). */
const BYTES_RECHECK_MS = 100;

/** What a {@link ShardDelivery} needs. */
export interface ShardDeliveryOptions {
  readonly shardId: string;
  readonly tracker: ShardTracker;
  /** Records emitted and not yet under the watermark (see `ShardTracker.pending`) before emission pauses. */
  readonly maxInFlightRecords: number;
  readonly emit: (event: KinsumerEvent) => void;
  readonly stats?: StatReceiver | undefined;
  /** Resuming inside a KPL aggregate: sub-records at or before this position are skipped. */
  readonly skipThrough?: Position | undefined;
  /** The lease the records are read under: each record carries its signal (see `leaseSignalOf`). */
  readonly leaseSignal?: AbortSignal | undefined;
  /** Called after each run of records emitted (once per run, not per record). */
  readonly onDelivered?: (() => void) | undefined;
  /** Counts each record as it is emitted (an integer per record: read at any moment, it is exact). */
  readonly tally?: { delivered: number } | undefined;
  /** The client's byte budget (`maxInFlightBytes`), with the scheduler its re-checks run on. Absent: records are bounded by count only. */
  readonly bytes?: { readonly budget: ByteBudget; readonly scheduler: SchedulerLike } | undefined;
  /** Where the reader started, checked against the first records (data-loss.ts), and what a gap does. Absent: not checked. */
  readonly dataLoss?: { readonly origin: IteratorPlan; readonly onDataLoss: OnDataLoss } | undefined;
}

/** The records of one fetch on their way to the application, gated on acks. */
export class ShardDelivery {
  /** The last record emitted (or passed over as acked already); `undefined` before the first. */
  last: Delivered | undefined;
  /** What is still to skip (a resumed KPL aggregate); a reader moves it when it restarts elsewhere. */
  skipThrough: Position | undefined;
  /** Emits (once, then completes) as soon as the next record of the page may be emitted (room for it, in count and bytes). */
  readonly roomFreed$: Observable<void>;
  /** Emits (once, then completes) as soon as the shard may fetch: room in count, and its share of the byte budget. */
  readonly fetchRoom$: Observable<void>;

  // The rest of one fetch, when it held more user records than there was room for: its raw
  // records, each user record made only when emitted (R18), so what waits for room is no record
  // yet, and a record acked at once is garbage before the page ends.
  private pending: PageCursor | undefined;
  private retrievedAt = new Date(0);
  // With a byte budget: what this reader holds, its share of the budget, and its bytes per raw record so far.
  private readonly held: HeldBytes | undefined;
  private readonly share: BudgetShare | undefined;
  private bytesPerRecord: number | undefined;
  private readonly watch: DataLossWatch | undefined;

  constructor(private readonly options: ShardDeliveryOptions, private readonly subscriber: Subscriber<KinsumerRecord>) {
    this.skipThrough = options.skipThrough;
    const { tracker, bytes } = options;
    if (options.dataLoss !== undefined) this.watch = new DataLossWatch(options.dataLoss.origin);
    const wakes = [tracker.acks$];
    if (tracker.confirmed$ !== undefined) wakes.push(tracker.confirmed$);
    if (bytes !== undefined) {
      this.held = new HeldBytes();
      this.share = bytes.budget.join();
      // The reader ended (its lease too, or the shard): what it held is no longer its to count.
      subscriber.add(() => this.share?.leave());
      wakes.push(interval(BYTES_RECHECK_MS, bytes.scheduler).pipe(map(() => undefined)));
    }
    const wake$ = merge(...wakes);
    const when = (ready: () => boolean): Observable<void> => defer(() => (ready() ? of(undefined) : wake$.pipe(filter(ready), take(1))));
    this.roomFreed$ = when(() => this.mayEmitNext());
    this.fetchRoom$ = when(() => this.mayFetch());
  }

  /**
   * How many more records may be emitted before the watermark must move (none while the lease is
   * unconfirmed). Counted on pending records, not unacked ones: records acked behind a gap hold
   * memory and would be replayed after a crash just the same.
   */
  room(): number {
    const { tracker } = this.options;
    if (tracker.leaseConfirmed?.() === false) return 0;
    return this.options.maxInFlightRecords - tracker.pending();
  }

  /**
   * The `Limit` of the next GetRecords, at most `countLimit`: with a byte budget, as many records as
   * the shard's room holds at its bytes per record so far (at least one); that room is reserved
   * until the page arrives (see `ByteBudget.fetchLimit`).
   */
  fetchLimit(countLimit: number): number {
    const { held, share } = this;
    if (held === undefined || share === undefined) return countLimit;
    const limit = Math.max(1, this.budget().fetchLimit(share, this.bytesPerRecord, countLimit));
    held.reserve(Math.min(MAX_BYTES_PER_CALL, limit * (this.bytesPerRecord ?? 1)));
    share.set(held.total);
    return limit;
  }

  /** `true` while records of the last fetch wait for room. */
  hasPending(): boolean {
    return this.pending?.hasNext() === true;
  }

  /**
   * Takes the raw records of one fetch (replacing what was left of the previous one): KPL
   * aggregates are split, consumed sub-records skipped, corrupt aggregates reported as they are
   * emitted. `streamClock`: the stream's clock as the fetch's answer told it (records' ages).
   * Returns the page's payload bytes. Throws `DataLostError` when the page shows the start behind
   * the trim horizon and the shard stops on data loss.
   */
  load(records: readonly RawRecord[], retrievedAt: Date, streamClock: StreamClock): number {
    const { shardId, emit } = this.options;
    const gap = this.watch?.page(records);
    if (gap !== undefined) this.dataLost(gap);
    this.retrievedAt = retrievedAt;
    const origin = { shardId, leaseSignal: this.options.leaseSignal, streamClock };
    const pending = new PageCursor(records, this.skipThrough, origin, ({ sequenceNumber, error }) => emit({ type: 'record-undecodable', shardId, sequenceNumber, error }));
    this.skipThrough = pending.skipThrough;
    this.pending = pending;
    const first = this.last === undefined ? pending.peek() : undefined;
    if (first !== undefined) this.options.tracker.narrowStart?.(first.position, first.arrival);
    let pageBytes = 0;
    for (const record of records) pageBytes += rawPayloadBytes(record);
    if (records.length > 0) this.bytesPerRecord = pageBytes / records.length;
    if (this.held !== undefined) {
      this.held.loaded(pending.bytesLeft());
      this.share?.set(this.held.total);
    }
    return pageBytes;
  }

  /** Drops what is left of the last fetch (a reader about to fetch again from {@link ShardDelivery.last}). */
  discardPending(): void {
    this.pending = undefined;
    if (this.held === undefined) return;
    this.held.discarded();
    this.share?.set(this.held.total);
  }

  /** Emits while there is room; a consumer that acks synchronously keeps the loop going. */
  deliver(): void {
    const { tracker, stats, onDelivered, tally } = this.options;
    const { held } = this;
    const timed = stats?.eventToClient !== undefined;
    // room() reads the clock (lease confirmation) and the tracker: ask again only when the room
    // counted at the last ask is used up (a consumer acking synchronously may have freed more).
    let room = 0;
    let emitted = false;
    for (let pending = this.pending; pending?.hasNext() === true && !this.subscriber.closed; pending = this.pending) {
      if (room <= 0) room = this.room();
      if (room <= 0) break;
      // A record larger than the budget goes alone; others go while the emitted bytes stay within it.
      if (held !== undefined && !this.budget().mayEmit(held.emitted, pending.peekBytes())) break;
      room -= 1;
      const next = pending.next();
      if (next === undefined) break;
      held?.taken(pending.lastStarted, next.aggregateDone);
      // A previous owner acked it (§7.3): counted as acked, never emitted (nor kept: it is no delivered record).
      if (tracker.skip?.(next) === true) {
        this.last = { position: next.position, aggregateDone: next.aggregateDone };
        continue;
      }
      next.track(tracker);
      this.last = next;
      emitted = true;
      // The arrival Date is made only for a receiver that times records.
      if (timed) stats?.eventToClient?.(next.approximateArrivalTimestamp, this.retrievedAt);
      if (tally !== undefined) tally.delivered += 1;
      this.subscriber.next(next);
    }
    if (!this.hasPending()) this.discardPending();
    else if (held !== undefined) this.share?.set(held.total);
    if (emitted) onDelivered?.();
  }

  // Says the gap (an error in the log); stops the shard if it must, before anything of the page goes out.
  private dataLost({ checkpoint, resumedAt }: CheckpointGap): void {
    const { shardId, emit, dataLoss } = this.options;
    const onDataLoss = dataLoss?.onDataLoss ?? 'continue';
    const { sequenceNumber, subSequenceNumber } = checkpoint;
    const position = subSequenceNumber === undefined ? { sequenceNumber } : { sequenceNumber, subSequenceNumber };
    emit({ type: 'data-lost', shardId, checkpoint: position, resumedAt: resumedAt.sequenceNumber, resumedArrivedAt: resumedAt.approximateArrivalTimestamp, onDataLoss });
    if (onDataLoss === 'stop-shard') throw new DataLostError(shardId, position, resumedAt.sequenceNumber);
  }

  // Emission: room in count, and (with a byte budget) for the next record's bytes.
  private mayEmitNext(): boolean {
    if (this.room() <= 0) return false;
    const { held, pending } = this;
    if (held === undefined || pending === undefined || !pending.hasNext()) return true;
    this.refreshBytes();
    return this.budget().mayEmit(held.emitted, pending.peekBytes());
  }

  // Fetching: room in count, and (with a byte budget) the shard's share of it.
  private mayFetch(): boolean {
    if (this.room() <= 0) return false;
    const { held, share } = this;
    if (held === undefined || share === undefined) return true;
    // Asked before each call, a retry's too: no call of this reader is out, nor is what it reserved.
    held.reserve(0);
    this.refreshBytes();
    return this.budget().mayFetch(share, this.bytesPerRecord ?? 1);
  }

  // Records the checkpoint passed since the last look no longer count (the tracker registers
  // exactly what this delivery registered, in the same order).
  private refreshBytes(): void {
    const { held, share } = this;
    if (held === undefined || share === undefined) return;
    held.passed(held.registered - this.options.tracker.pending());
    share.set(held.total);
  }

  private budget(): ByteBudget {
    return (this.options.bytes as { readonly budget: ByteBudget }).budget;
  }

  /**
   * The end of a closed shard: completes once every emitted record is acked and `Finished` is
   * written, then reports `shard-finished`.
   */
  finish(childShardIds: readonly string[]): Observable<never> {
    const { shardId, tracker, emit } = this.options;
    return concat(
      defer(() => tracker.finish(this.last?.position)).pipe(ignoreElements()),
      defer(() => {
        emit({ type: 'shard-finished', shardId, childShardIds });
        return EMPTY;
      }),
    );
  }
}
