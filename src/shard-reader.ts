// A captured shard's records as an Observable: a GetRecords loop gated on acks. The decisions
// (how many to ask for, when to call, where to resume, what a page holds) are pure functions in
// poll-plan.ts, start-position.ts and user-records.ts; this module only wires them to time and I/O.
import {
  type SchedulerLike, type Subscriber, EMPTY, Observable, catchError, concat, defer, expand, filter, ignoreElements, map, of,
  switchMap, take, tap, throwError, timer,
} from 'rxjs';
import { classifyAwsError } from './aws-errors.js';
import { type BackoffPolicy, retryTransient } from './backoff.js';
import { KinsumerError } from './errors.js';
import {
  DEFAULT_ITERATOR_MAX_AGE_MS, iteratorTooOld, pollDelayMs, recordsLimit, rememberCall,
} from './poll-plan.js';
import type { IteratorStart, RecordsPage, ShardTracker, StreamPort } from './ports.js';
import type { Position } from './sequence-number.js';
import { type Delivered, type IteratorPlan, planResume } from './start-position.js';
import type { KinsumerEvent, KinsumerRecord, StatReceiver } from './types.js';
import { type UserRecord, unpackRecords } from './user-records.js';

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
  /** Records emitted and not acked before reading pauses. */
  readonly maxInFlightRecords: number;
  readonly scheduler: SchedulerLike;
  /** Receives `retrying`, `record-undecodable` and `shard-finished` events. */
  readonly emit: (event: KinsumerEvent) => void;
  readonly stats?: StatReceiver;
  /** A held iterator older than this is rebuilt before use. Default 270000 (Kinesis iterators live 300000). */
  readonly iteratorMaxAgeMs?: number;
  /** Backoff of transient retries. Default: `DEFAULT_BACKOFF`. */
  readonly backoff?: BackoffPolicy;
  /** Jitter source of the backoff (tests). */
  readonly random?: () => number;
}

/** Reading a shard failed for good (access denied, KMS, a bad request): the AWS error is the cause. */
export class ShardReadError extends KinsumerError {
  readonly shardId: string;
  /** The Kinesis operation that failed: `GetShardIterator` or `GetRecords`. */
  readonly operation: string;

  constructor(shardId: string, operation: string, cause: unknown) {
    super(`${operation} on shard ${shardId} failed${cause instanceof Error ? ` (${cause.name})` : ''}`, { cause });
    this.shardId = shardId;
    this.operation = operation;
  }
}

/**
 * Reads one shard from `start` to its end (if it has one), emitting user records in sequence
 * order. Reading pauses while `maxInFlightRecords` emitted records are unacked, and each
 * GetRecords asks for no more than the room left. Transient faults are retried forever with
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
  const retryOptions = {
    shardId, scheduler, emit, isRetriable,
    ...(options.backoff === undefined ? {} : { policy: options.backoff }),
    ...(options.random === undefined ? {} : { random: options.random }),
  };
  const origin: IteratorPlan = options.skipThrough === undefined
    ? { iteratorStart: options.start }
    : { iteratorStart: options.start, skipThrough: options.skipThrough };

  let originRequestedAt: Date | undefined;
  let iterator: string | undefined;
  let iteratorIssuedAtMs = 0;
  let skipThrough = options.skipThrough;
  let last: Delivered | undefined;
  // The rest of one page, when a KPL page held more user records than there was room for.
  let pending: UserRecord[] = [];
  let head = 0;
  let retrievedAt = new Date(0);
  let childShardIds: readonly string[] | undefined;
  let recentCallsMs: number[] = [];
  let behind = false;

  const room = (): number => maxInFlightRecords - tracker.inFlight();
  const roomFreed$ = defer(() => (room() > 0 ? of(undefined) : tracker.acks$.pipe(filter(() => room() > 0), take(1))));

  const iterator$ = defer(() => {
    const now = scheduler.now();
    if (iterator !== undefined && !iteratorTooOld(now, iteratorIssuedAtMs, maxAgeMs)) return of(iterator);
    const plan = planResume(origin, last, originRequestedAt);
    originRequestedAt ??= new Date(now);
    return stream.getShardIterator(shardId, plan.iteratorStart).pipe(tap((issued) => {
      iterator = issued;
      iteratorIssuedAtMs = scheduler.now();
      skipThrough = plan.skipThrough;
    }));
  }).pipe(
    retryTransient({ operation: 'GetShardIterator', ...retryOptions }),
    catchError((error: unknown) => throwError(() => readError(shardId, 'GetShardIterator', error))),
  );

  // One attempt: wait for the call budget, get an iterator if needed, call. Retries come back
  // through the wait, so a retry never breaks the spacing between calls.
  const attempt$ = defer(() => timer(pollDelayMs({ nowMs: scheduler.now(), recentCallsMs, throttleDelayMs, behind }), scheduler)).pipe(
    switchMap(() => iterator$),
    switchMap((current) => {
      recentCallsMs = rememberCall(recentCallsMs, scheduler.now());
      return stream.getRecords(current, recordsLimit(maxInFlightRecords, tracker.inFlight()));
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
    const now = scheduler.now();
    retrievedAt = new Date(now);
    behind = (page.millisBehindLatest ?? 0) > 0;
    stats?.eventsFromKinesis?.(page.records.length, shardId, page.millisBehindLatest ?? 0);
    iterator = page.nextShardIterator;
    iteratorIssuedAtMs = now;
    if (page.nextShardIterator === undefined) childShardIds = page.childShardIds ?? [];
    const unpacked = unpackRecords(page.records, skipThrough);
    skipThrough = unpacked.skipThrough;
    pending = unpacked.records;
    head = 0;
    for (const { sequenceNumber, error } of unpacked.undecodable) emit({ type: 'record-undecodable', shardId, sequenceNumber, error });
  };

  // Emits while there is room; a consumer that acks synchronously keeps the loop going.
  const deliver = (): void => {
    while (head < pending.length && room() > 0 && !subscriber.closed) {
      const next = pending[head] as UserRecord;
      head += 1;
      const ack = tracker.track(next.position);
      last = next;
      stats?.eventToClient?.(next.approximateArrivalTimestamp, retrievedAt);
      subscriber.next(new ShardRecord(shardId, next, ack));
    }
    if (head >= pending.length) {
      pending = [];
      head = 0;
    }
  };

  const nextStep = (): Step => (head < pending.length ? 'deliver' : childShardIds !== undefined ? 'finish' : 'poll');

  const poll$ = roomFreed$.pipe(switchMap(() => page$), map((page) => {
    absorb(page);
    deliver();
    return nextStep();
  }));
  const deliver$ = roomFreed$.pipe(map(() => {
    deliver();
    return nextStep();
  }));
  const finish$ = concat(
    defer(() => tracker.finish(last?.position)).pipe(ignoreElements()),
    defer(() => {
      emit({ type: 'shard-finished', shardId, childShardIds: childShardIds ?? [] });
      return EMPTY;
    }),
  );

  const step = (current: Step): Observable<Step> => (current === 'poll' ? poll$ : current === 'deliver' ? deliver$ : finish$);
  return step('poll').pipe(expand(step));
}

/** A record as the application receives it; `ack` is the tracker's. */
class ShardRecord implements KinsumerRecord {
  readonly sequenceNumber: string;
  readonly subSequenceNumber: number | undefined;
  readonly partitionKey: string;
  declare readonly explicitHashKey?: string;
  readonly data: Uint8Array;
  readonly approximateArrivalTimestamp: Date;

  constructor(readonly shardId: string, user: UserRecord, readonly ack: () => void) {
    this.sequenceNumber = user.position.sequenceNumber;
    this.subSequenceNumber = user.position.subSequenceNumber;
    this.partitionKey = user.partitionKey;
    if (user.explicitHashKey !== undefined) this.explicitHashKey = user.explicitHashKey;
    this.data = user.data;
    this.approximateArrivalTimestamp = user.approximateArrivalTimestamp;
  }
}

function isRetriable(error: unknown): boolean {
  return error instanceof KinsumerError ? error.retriable : classifyAwsError(error) === 'transient';
}

function isExpiredIterator(error: unknown): boolean {
  return error instanceof Error && error.name === 'ExpiredIteratorException';
}

/** Typed errors (stream not found, lease lost) pass as they are; the rest is wrapped, cause kept. */
function readError(shardId: string, operation: string, error: unknown): KinsumerError {
  return error instanceof KinsumerError ? error : new ShardReadError(shardId, operation, error);
}
