// A captured shard's records through enhanced fan-out: SubscribeToShard, renewed before the
// service ends it, one subscribe a second, events pulled only while there is room under
// maxInFlightRecords. Emission, tracking and the end of the shard are the polling reader's own
// (shard-delivery.ts); the decisions are pure (fan-out-plan.ts); this module wires them to time and I/O.
import {
  type Subscriber, EMPTY, Observable, catchError, concatMap, defer, endWith, expand, filter, last, map,
  switchMap, takeUntil, takeWhile, tap, throwError, timer,
} from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { retryTransient } from '../errors/retry-backoff.js';
import { schedulerClock } from '../ports/clock.js';
import type { FanOutPort, ShardEvent, ShardEventPull } from '../ports/stream.js';
import type { KinsumerRecord } from '../types.js';
import { DEFAULT_RENEW_AFTER_MS, planSubscribe, subscribeDelayMs } from './fan-out-plan.js';
import { isRetriableReadError, readError } from './read-errors.js';
import { checkpointRejected } from './read-errors.js';
import { ShardDelivery } from './shard-delivery.js';
import { type StreamClock, streamClockAt } from './stream-clock.js';
import { type ReadShardOptions } from './shard-reader.js';
import { type IteratorPlan, START_SKEW_MARGIN_MS } from './start-position.js';

/**
 * Options of {@link readFanOut}: the polling reader's, less what only polling has (the stream's
 * GetRecords side, the throttle delay, iterator ages), plus the consumer to subscribe as.
 */
export interface ReadFanOutOptions extends Omit<ReadShardOptions, 'stream' | 'throttleDelayMs' | 'iteratorMaxAgeMs'> {
  readonly fanOut: FanOutPort;
  /** The registered consumer's ARN (see `consumerArn` in stream-consumer.ts). */
  readonly consumerArn$: Observable<string>;
  /** A subscription is replaced by a new one this long after it started. Default 290000 (the service ends it at 300000). */
  readonly renewAfterMs?: number;
}

/**
 * Reads one shard through SubscribeToShard from `start` to its end (if it has one), emitting user
 * records in sequence order, with the guarantees of the polling reader: no event is pulled while
 * `maxInFlightRecords` emitted records are pending (unacked, or acked behind an unacked one);
 * after any drop (a failed connection, a renewal, `ResourceInUseException`) reading resumes right
 * after the last emitted record; at the end of a closed shard it waits until `tracker.finish` completes, emits `shard-finished`, then completes.
 * Unsubscribing ends the subscription (aborts the request) and every timer.
 */
export function readFanOut(options: ReadFanOutOptions): Observable<KinsumerRecord> {
  return new Observable<KinsumerRecord>((subscriber) => fanOutLoop(options, subscriber).subscribe({
    error: (error: unknown) => subscriber.error(error),
    complete: () => subscriber.complete(),
  }));
}

type Step = 'pull' | 'deliver' | 'renew' | 'finish';

function fanOutLoop(options: ReadFanOutOptions, subscriber: Subscriber<KinsumerRecord>): Observable<Step> {
  const { shardId, fanOut, tracker, scheduler, emit, stats, maxInFlightRecords } = options;
  const clock = options.clock ?? schedulerClock(scheduler);
  const renewAfterMs = options.renewAfterMs ?? DEFAULT_RENEW_AFTER_MS;
  const origin: IteratorPlan = options.skipThrough === undefined
    ? { iteratorStart: options.start }
    : { iteratorStart: options.start, skipThrough: options.skipThrough };
  const delivery = new ShardDelivery({
    shardId, tracker, maxInFlightRecords, emit, stats, skipThrough: options.skipThrough, leaseSignal: options.leaseSignal, onDelivered: options.onDelivered, tally: options.tally,
    bytes: options.bytes === undefined ? undefined : { budget: options.bytes, scheduler },
    dataLoss: { origin, onDataLoss: options.onDataLoss ?? 'continue' },
  }, subscriber);

  // Where the group's start lies for a LATEST origin while nothing is delivered (see readShard).
  let originStart: Date | undefined;
  let lastSubscribeAtMs: number | undefined;
  // The ContinuationSequenceNumber of the last event, as long as its records are all delivered or
  // still to be delivered (never when some were dropped for a new subscription).
  let continuation: string | undefined;
  let childShardIds: readonly string[] | undefined;

  const subscribe$ = defer(() => timer(subscribeDelayMs(clock.elapsedNow(), lastSubscribeAtMs), scheduler)).pipe(
    switchMap(() => options.consumerArn$),
    switchMap((consumerArn) => {
      // What is left of the previous subscription's event comes again in the new one; its
      // continuation lies past records never emitted, so it no longer counts.
      if (delivery.hasPending()) continuation = undefined;
      delivery.discardPending();
      const plan = planSubscribe(origin, delivery.last, continuation, originStart);
      delivery.skipThrough = plan.skipThrough;
      const requestedAtMs = clock.wallNow();
      lastSubscribeAtMs = clock.elapsedNow();
      return fanOut.subscribeToShard(consumerArn, shardId, plan.iteratorStart).pipe(
        // Before any delivery, a sequence-number start can only come from the stored checkpoint.
        catchError((error: unknown) => throwError(() => (delivery.last === undefined ? checkpointRejected(shardId, plan.iteratorStart, error) : error))),
        tap((events) => {
          if (originStart !== undefined || plan.iteratorStart.type !== 'LATEST') return;
          originStart = events.streamTime ?? new Date(requestedAtMs - START_SKEW_MARGIN_MS);
          if (events.streamTime !== undefined) tracker.streamStart?.(events.streamTime);
        }),
      );
    }),
  );

  const absorb = (event: ShardEvent, streamClock: StreamClock): void => {
    stats?.eventsFromKinesis?.(event.records.length, shardId, event.millisBehindLatest ?? 0);
    options.onFetch?.({ records: event.records.length, millisBehindLatest: event.millisBehindLatest });
    continuation = event.continuationSequenceNumber;
    if (event.continuationSequenceNumber === undefined) childShardIds = event.childShardIds ?? [];
    delivery.load(event.records, new Date(clock.wallNow()), streamClock);
  };

  const nextStep = (): Step => (delivery.hasPending() ? 'deliver' : childShardIds !== undefined ? 'finish' : 'pull');

  // The events of one subscription, pulled one at a time while there is room.
  const pump = (events: ShardEventPull): Observable<Step> => {
    // Events name no time: the stream's clock at the subscription's answer, carried on.
    const streamClock = streamClockAt(events.streamTime, clock);
    const pull$ = delivery.fetchRoom$.pipe(switchMap(() => events.next()), map((event): Step => {
      if (event === undefined) return 'renew';
      absorb(event, streamClock);
      delivery.deliver();
      return nextStep();
    }));
    const deliver$ = delivery.roomFreed$.pipe(map((): Step => {
      delivery.deliver();
      return nextStep();
    }));
    const step = (current: Step): Observable<Step> => (current === 'pull' ? pull$ : current === 'deliver' ? deliver$ : EMPTY);
    // Renewal: the subscription is cut short before the service ends it.
    return step('pull').pipe(expand(step), takeUntil(timer(renewAfterMs, scheduler)), endWith<Step>('renew'));
  };

  // One subscription, from subscribe to its end: 'finish' at the end of the shard, else 'renew'.
  // Retries (back through the one-a-second wait) start from where delivery stands; the attempt
  // count resets with every event.
  const subscription$ = subscribe$.pipe(
    switchMap(pump),
    // Unsubscribing from the pull handle is what ends the subscription at the service.
    takeWhile((step) => step === 'pull' || step === 'deliver', true),
    retryTransient({
      operation: 'SubscribeToShard', shardId, scheduler, emit, isRetriable,
      ...(options.backoff === undefined ? {} : { policy: options.backoff }),
      ...(options.random === undefined ? {} : { random: options.random }),
    }),
    catchError((error: unknown) => throwError(() => readError(shardId, 'SubscribeToShard', error))),
    last(undefined, 'renew' as Step),
    map((step): Step => (step === 'finish' ? 'finish' : 'renew')),
  );

  return subscription$.pipe(
    expand((outcome) => (outcome === 'renew' ? subscription$ : EMPTY)),
    filter((outcome) => outcome === 'finish'),
    concatMap(() => delivery.finish(childShardIds ?? [])),
  );
}

/** Transient faults, and `ResourceInUseException`: the previous subscription is still winding down. */
function isRetriable(error: unknown): boolean {
  return isRetriableReadError(error) || classifyAwsError(error) === 'in-use';
}
