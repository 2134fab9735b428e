// A captured shard's records as an Observable: a GetRecords loop gated on acks. The decisions
// (how many to ask for, when to call, where to resume, what a page holds) are pure functions in
// poll-plan.ts, start-position.ts and unpack-page.ts; this module only wires them to time and I/O.
import {
  type SchedulerLike, type Subscriber, Observable, catchError, defer, expand, map, of, switchMap, throwError, timer,
} from 'rxjs';
import { type BackoffPolicy, retryTransient } from '../errors/retry-backoff.js';
import { type Clock, schedulerClock } from '../ports/clock.js';
import type { Position } from '../ports/position.js';
import type { ShardTracker } from '../ports/shard-tracker.js';
import type { IteratorStart, RecordsPage, StreamPort } from '../ports/stream.js';
import type { KinsumerEvent, KinsumerRecord, StatReceiver } from '../types.js';
import {
  DEFAULT_ITERATOR_MAX_AGE_MS, iteratorTooOld, pollDelayMs, recordsLimit, rememberCall,
} from './poll-plan.js';
import { checkpointRejected, isRetriableReadError as isRetriable, readError } from './read-errors.js';
import type { ByteBudget } from './byte-budget.js';
import type { OnDataLoss } from './data-loss.js';
import { ReadBudget } from './read-budget.js';
import { ShardDelivery } from './shard-delivery.js';
import { streamClockAt } from './stream-clock.js';
import { type IteratorPlan, START_SKEW_MARGIN_MS, planResume } from './start-position.js';

/** What one GetRecords answer (or one SubscribeToShard event) said about the shard. */
export interface FetchFigures {
  /** Records in it (a KPL aggregate counts once). */
  readonly records: number;
  /** How far it was behind the tip of the shard, as Kinesis said. */
  readonly millisBehindLatest: number | undefined;
}

/** Options of {@link readShard}. */
export interface ReadShardOptions {
  readonly shardId: string;
  readonly stream: StreamPort;
  /** The lease's checkpoint side: every emitted record is tracked, and the end of the shard waits for it. */
  readonly tracker: ShardTracker;
  /** Where the first iterator starts (see `planStart`). */
  readonly start: IteratorStart;
  /** Resuming inside a KPL aggregate: sub-records at or before this position are skipped. */
  readonly skipThrough?: Position;
  /** Least time between two GetRecords, unless the shard is behind. */
  readonly throttleDelayMs: number;
  /** Records emitted and not yet under the checkpoint watermark (unacked, or acked behind an unacked one) before reading pauses. */
  readonly maxInFlightRecords: number;
  readonly scheduler: SchedulerLike;
  /**
   * Poll delays and iterator ages are differences of its `elapsedNow`, so a step of the wall clock
   * stalls no reading. Default: the scheduler's `now()` for both.
   */
  readonly clock?: Clock;
  /** Receives `retrying`, `record-undecodable` and `shard-finished` events. */
  readonly emit: (event: KinsumerEvent) => void;
  readonly stats?: StatReceiver;
  /** Called with each fetch's size and lag (`MillisBehindLatest`): the figures `status()` shows. */
  readonly onFetch?: (fetch: FetchFigures) => void;
  /** Called after each run of records emitted (once per run, not per record). */
  readonly onDelivered?: () => void;
  /** Counts the records emitted, one by one (the shard's delivered total). */
  readonly tally?: { delivered: number };
  /** The lease the shard is read under: every record carries its signal (see `leaseSignalOf`). */
  readonly leaseSignal?: AbortSignal;
  /** A held iterator older than this is rebuilt before use. Default 270000 (Kinesis iterators live 300000). */
  readonly iteratorMaxAgeMs?: number;
  /** Backoff of transient retries. Default: `DEFAULT_BACKOFF`. */
  readonly backoff?: BackoffPolicy;
  /** Jitter source of the backoff (tests). */
  readonly random?: () => number;
  /** The client's byte budget (`maxInFlightBytes`), shared by its shards. Absent: reading is bounded by count only. */
  readonly bytes?: ByteBudget;
  /** A start from a checkpoint whose record the stream no longer keeps: read on (default), or stop with `DataLostError` (data-loss.ts). */
  readonly onDataLoss?: OnDataLoss;
}

/**
 * Reads one shard from `start` to its end (if it has one), emitting user records in sequence
 * order. Reading pauses while `maxInFlightRecords` emitted records are pending (unacked, or acked
 * behind an unacked one), and each GetRecords asks for no more than the room left. Transient faults are retried forever with
 * backoff (`retrying` events); an expired or aging iterator is rebuilt after the last emitted
 * record. At the end of a closed shard it waits until `tracker.finish` completes (every record
 * acked, `Finished` written), emits `shard-finished`, then completes. Unsubscribing aborts the
 * request in flight and every timer.
 */
export function readShard(options: ReadShardOptions): Observable<KinsumerRecord> {
  return new Observable<KinsumerRecord>((subscriber) => readLoop(options, subscriber).subscribe({
    error: (error: unknown) => subscriber.error(error),
    complete: () => subscriber.complete(),
  }));
}

type Step = 'poll' | 'deliver' | 'finish';

function readLoop(options: ReadShardOptions, subscriber: Subscriber<KinsumerRecord>): Observable<Step> {
  const { shardId, stream, tracker, scheduler, emit, stats, throttleDelayMs, maxInFlightRecords } = options;
  const maxAgeMs = options.iteratorMaxAgeMs ?? DEFAULT_ITERATOR_MAX_AGE_MS;
  const clock = options.clock ?? schedulerClock(scheduler);
  const retryOptions = {
    shardId, scheduler, emit, isRetriable,
    ...(options.backoff === undefined ? {} : { policy: options.backoff }),
    ...(options.random === undefined ? {} : { random: options.random }),
  };
  const origin: IteratorPlan = options.skipThrough === undefined
    ? { iteratorStart: options.start }
    : { iteratorStart: options.start, skipThrough: options.skipThrough };

  const delivery = new ShardDelivery({
    shardId, tracker, maxInFlightRecords, emit, stats, skipThrough: options.skipThrough, leaseSignal: options.leaseSignal, onDelivered: options.onDelivered, tally: options.tally,
    bytes: options.bytes === undefined ? undefined : { budget: options.bytes, scheduler },
    dataLoss: { origin, onDataLoss: options.onDataLoss ?? 'continue' },
  }, subscriber);
  const { roomFreed$, fetchRoom$ } = delivery;
  // A large page spends the shard's read budget: the next call waits for it (pacing, not a retry).
  const readBudget = new ReadBudget(stream.readBytesPerSecond);
  // Where the group's start lies for a LATEST origin while nothing is delivered: the stream's clock
  // at its first iterator (else the client's clock less the skew margin). A rebuilt iterator starts there.
  let originStart: Date | undefined;
  let iterator: string | undefined;
  let iteratorIssuedAtMs = 0;
  let childShardIds: readonly string[] | undefined;
  let recentCallsMs: number[] = [];
  let behind = false;
  // The last answer was empty and not behind: the next call waits the idle pace (poll-plan.ts).
  let idle = false;

  const iterator$ = defer(() => {
    if (iterator !== undefined && !iteratorTooOld(clock.elapsedNow(), iteratorIssuedAtMs, maxAgeMs)) return of(iterator);
    const plan = planResume(origin, delivery.last, originStart);
    const requestedAtMs = clock.wallNow();
    return stream.getShardIterator(shardId, plan.iteratorStart).pipe(
      // Before any delivery, a sequence-number start can only come from the stored checkpoint.
      catchError((error: unknown) => throwError(() => (delivery.last === undefined ? checkpointRejected(shardId, plan.iteratorStart, error) : error))),
      map((issued) => {
        iterator = issued.shardIterator;
        iteratorIssuedAtMs = clock.elapsedNow();
        delivery.skipThrough = plan.skipThrough;
        if (originStart === undefined && plan.iteratorStart.type === 'LATEST') {
          originStart = issued.streamTime ?? new Date(requestedAtMs - START_SKEW_MARGIN_MS);
          // The kept start moves up to the stream's clock (stored before any record goes out).
          if (issued.streamTime !== undefined) tracker.streamStart?.(issued.streamTime);
        }
        return issued.shardIterator;
      }),
    );
  }).pipe(
    retryTransient({ operation: 'GetShardIterator', ...retryOptions }),
    catchError((error: unknown) => throwError(() => readError(shardId, 'GetShardIterator', error))),
  );

  // One attempt: wait for the call budget, get an iterator if needed, call. Retries come back
  // through the wait, so a retry never breaks the spacing between calls. Room is asked for again
  // after the wait: a lease paused (or left unconfirmed) meanwhile sends nothing.
  const attempt$ = defer(() => timer(pollDelayMs({
    nowMs: clock.elapsedNow(), recentCallsMs, throttleDelayMs, behind, idle, readReadyAtMs: readBudget.readyAtMs,
  }), scheduler)).pipe(
    switchMap(() => fetchRoom$),
    switchMap(() => iterator$),
    switchMap((current) => {
      recentCallsMs = rememberCall(recentCallsMs, clock.elapsedNow());
      return stream.getRecords(current, delivery.fetchLimit(recordsLimit(maxInFlightRecords, tracker.pending())));
    }),
    catchError((error: unknown) => {
      behind = false;
      if (isExpiredIterator(error)) iterator = undefined;
      return throwError(() => error);
    }),
  );

  const page$ = attempt$.pipe(
    retryTransient({ operation: 'GetRecords', ...retryOptions }),
    catchError((error: unknown) => throwError(() => readError(shardId, 'GetRecords', error))),
  );

  const absorb = (page: RecordsPage): void => {
    behind = (page.millisBehindLatest ?? 0) > 0;
    idle = page.records.length === 0 && !behind;
    stats?.eventsFromKinesis?.(page.records.length, shardId, page.millisBehindLatest ?? 0);
    options.onFetch?.({ records: page.records.length, millisBehindLatest: page.millisBehindLatest });
    iterator = page.nextShardIterator;
    iteratorIssuedAtMs = clock.elapsedNow();
    if (page.nextShardIterator === undefined) childShardIds = page.childShardIds ?? [];
    readBudget.spent(delivery.load(page.records, new Date(clock.wallNow()), streamClockAt(page.streamTime, clock)), clock.elapsedNow());
  };

  const nextStep = (): Step => (delivery.hasPending() ? 'deliver' : childShardIds !== undefined ? 'finish' : 'poll');

  const poll$ = fetchRoom$.pipe(switchMap(() => page$), map((page) => {
    absorb(page);
    delivery.deliver();
    return nextStep();
  }));
  const deliver$ = roomFreed$.pipe(map(() => {
    delivery.deliver();
    return nextStep();
  }));
  const finish$ = defer(() => delivery.finish(childShardIds ?? []));

  const step = (current: Step): Observable<Step> => (current === 'poll' ? poll$ : current === 'deliver' ? deliver$ : finish$);
  return step('poll').pipe(expand(step));
}

function isExpiredIterator(error: unknown): boolean {
  return error instanceof Error && error.name === 'ExpiredIteratorException';
}
