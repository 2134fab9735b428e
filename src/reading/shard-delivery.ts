// What every shard reader does with the records it fetched, however it fetched them (GetRecords
// pages or SubscribeToShard events): unpack them, emit them while the tracker has room, remember
// the last one emitted (where a rebuilt iterator or a new subscription resumes), and at the end of
// the shard wait for the tracker to finish. One place, so polling and fan-out behave the same.
import { type Observable, type Subscriber, EMPTY, concat, defer, filter, ignoreElements, merge, of, take } from 'rxjs';
import type { Position } from '../ports/position.js';
import type { ShardTracker } from '../ports/shard-tracker.js';
import type { RawRecord } from '../ports/stream.js';
import type { KinsumerEvent, KinsumerRecord, StatReceiver } from '../types.js';
import type { Delivered } from './start-position.js';
import type { StreamClock } from './stream-clock.js';
import { PageCursor } from './unpack-page.js';

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
}

/** The records of one fetch on their way to the application, gated on acks. */
export class ShardDelivery {
  /** The last record emitted (or passed over as acked already); `undefined` before the first. */
  last: Delivered | undefined;
  /** What is still to skip (a resumed KPL aggregate); a reader moves it when it restarts elsewhere. */
  skipThrough: Position | undefined;
  /** Emits (once, then completes) as soon as there is room for one more record in flight. */
  readonly roomFreed$: Observable<void>;

  // The rest of one fetch, when it held more user records than there was room for: its raw
  // records, each user record made only when emitted (R18), so what waits for room is no record
  // yet, and a record acked at once is garbage before the page ends.
  private pending: PageCursor | undefined;
  private retrievedAt = new Date(0);

  constructor(private readonly options: ShardDeliveryOptions, private readonly subscriber: Subscriber<KinsumerRecord>) {
    this.skipThrough = options.skipThrough;
    const { tracker } = options;
    const wake$ = tracker.confirmed$ === undefined ? tracker.acks$ : merge(tracker.acks$, tracker.confirmed$);
    this.roomFreed$ = defer(() => (this.room() > 0 ? of(undefined) : wake$.pipe(filter(() => this.room() > 0), take(1))));
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

  /** `true` while records of the last fetch wait for room. */
  hasPending(): boolean {
    return this.pending?.hasNext() === true;
  }

  /**
   * Takes the raw records of one fetch (replacing what was left of the previous one): KPL
   * aggregates are split, consumed sub-records skipped, corrupt aggregates reported as they are
   * emitted. `streamClock`: the stream's clock as the fetch's answer told it (records' ages).
   */
  load(records: readonly RawRecord[], retrievedAt: Date, streamClock: StreamClock): void {
    const { shardId, emit } = this.options;
    this.retrievedAt = retrievedAt;
    const origin = { shardId, leaseSignal: this.options.leaseSignal, streamClock };
    const pending = new PageCursor(records, this.skipThrough, origin, ({ sequenceNumber, error }) => emit({ type: 'record-undecodable', shardId, sequenceNumber, error }));
    this.skipThrough = pending.skipThrough;
    this.pending = pending;
    const first = this.last === undefined ? pending.peek() : undefined;
    if (first !== undefined) this.options.tracker.narrowStart?.(first.position, first.arrival);
  }

  /** Drops what is left of the last fetch (a reader about to fetch again from {@link ShardDelivery.last}). */
  discardPending(): void {
    this.pending = undefined;
  }

  /** Emits while there is room; a consumer that acks synchronously keeps the loop going. */
  deliver(): void {
    const { tracker, stats, onDelivered, tally } = this.options;
    const timed = stats?.eventToClient !== undefined;
    // room() reads the clock (lease confirmation) and the tracker: ask again only when the room
    // counted at the last ask is used up (a consumer acking synchronously may have freed more).
    let room = 0;
    let emitted = false;
    for (let pending = this.pending; pending?.hasNext() === true && !this.subscriber.closed; pending = this.pending) {
      if (room <= 0) room = this.room();
      if (room <= 0) break;
      room -= 1;
      const next = pending.next();
      if (next === undefined) break;
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
    if (emitted) onDelivered?.();
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
