// Enhanced fan-out of a MemoryStream, behind the same FanOutPort as the real adapter, for tests on
// virtual time. It keeps what a reader must cope with on Kinesis: a subscription delivers events
// for 5 minutes and then ends; each event carries a ContinuationSequenceNumber that moves on even
// when no record arrives; a second SubscribeToShard of one consumer and shard within 5 seconds of a
// successful one fails with ResourceInUseException, a later one takes over and the earlier
// connection fails with it; the last event of a closed shard names its children.
import { type Observable, type SchedulerLike, Observable as RxObservable, defer, of, throwError } from 'rxjs';
import { type Clock, schedulerClock } from '../ports/clock.js';
import type { FanOutPort, IteratorStart, ShardEvent, ShardEventPull, StreamConsumerInfo } from '../ports/stream.js';
import { type MemoryStream, awsError } from './memory-stream.js';

/** Options of {@link MemoryFanOut}. */
export interface MemoryFanOutOptions {
  /** Runs the event pacing and the end of subscriptions (a virtual-time scheduler in tests). */
  readonly scheduler: SchedulerLike;
  /** The service ends a subscription this long after it began. Default 300000 (Kinesis). */
  readonly subscriptionMs?: number;
  /** A SubscribeToShard this soon after a successful one (same consumer and shard) is refused. Default 5000 (Kinesis). */
  readonly takeoverMs?: number;
  /** Events are at least this far apart; a pull waits for new records this often. Default 200. */
  readonly eventIntervalMs?: number;
  /** With no new record, an empty event (with its continuation) comes after this long. Default 5000. */
  readonly heartbeatMs?: number;
  /** Most records in one event. Default 10000. */
  readonly maxEventRecords?: number;
  /** A registered consumer is `CREATING` this long, then `ACTIVE`. Default 0. */
  readonly activationMs?: number;
}

interface Consumer {
  readonly name: string;
  readonly arn: string;
  readonly createdAtMs: number;
}

/** One accepted SubscribeToShard. */
interface Subscription {
  readonly shardId: string;
  readonly endsAtMs: number;
  position: number;
  lastEventAtMs: number;
  takenOver: boolean;
  ended: boolean;
  /** The end of the closed shard was sent: the service ends the subscription. */
  shardEndSent: boolean;
}

/** Enhanced fan-out over a {@link MemoryStream}: set it as the stream's `fanOut`. */
export class MemoryFanOut implements FanOutPort {
  /** SubscribeToShard calls, refused ones included. */
  subscribes = 0;
  /** Events handed out. */
  events = 0;
  private readonly consumers = new Map<string, Consumer>();
  /** Per consumer ARN and shard: the last accepted subscription and when it was accepted. */
  private readonly current = new Map<string, { readonly atMs: number; readonly subscription: Subscription }>();
  private readonly subscriptionMs: number;
  private readonly takeoverMs: number;
  private readonly eventIntervalMs: number;
  private readonly heartbeatMs: number;
  private readonly maxEventRecords: number;
  private readonly activationMs: number;
  // The service's own clock: the scheduler's time, read through the one seam that reads it.
  private readonly clock: Clock;

  constructor(private readonly stream: MemoryStream, private readonly options: MemoryFanOutOptions) {
    this.clock = schedulerClock(options.scheduler);
    this.subscriptionMs = options.subscriptionMs ?? 300_000;
    this.takeoverMs = options.takeoverMs ?? 5000;
    this.eventIntervalMs = Math.max(1, options.eventIntervalMs ?? 200);
    this.heartbeatMs = options.heartbeatMs ?? 5000;
    this.maxEventRecords = options.maxEventRecords ?? 10_000;
    this.activationMs = options.activationMs ?? 0;
  }

  describeConsumer(consumerName: string): Observable<StreamConsumerInfo | undefined> {
    return defer(() => {
      const consumer = this.consumers.get(consumerName);
      return of(consumer === undefined ? undefined : this.info(consumer));
    });
  }

  registerConsumer(consumerName: string): Observable<StreamConsumerInfo> {
    return defer(() => {
      if (this.consumers.has(consumerName)) return throwError(() => awsError('ResourceInUseException', { message: `Consumer ${consumerName} exists` }));
      const now = this.now();
      const consumer: Consumer = { name: consumerName, arn: `arn:aws:kinesis:us-east-1:000000000000:stream/${this.stream.streamLabel}/consumer/${consumerName}:${Math.floor(now / 1000)}`, createdAtMs: now };
      this.consumers.set(consumerName, consumer);
      return of(this.info(consumer));
    });
  }

  deregisterConsumer(consumerName: string): Observable<void> {
    return defer(() => {
      if (!this.consumers.delete(consumerName)) return throwError(() => awsError('ResourceNotFoundException', { message: `Consumer ${consumerName} not found` }));
      return of(undefined);
    });
  }

  subscribeToShard(consumerArn: string, shardId: string, start: IteratorStart): Observable<ShardEventPull> {
    return new RxObservable<ShardEventPull>((subscriber) => {
      this.subscribes += 1;
      const now = this.now();
      const consumer = [...this.consumers.values()].find((c) => c.arn === consumerArn);
      let position: number;
      try {
        if (consumer === undefined) throw awsError('ResourceNotFoundException', { message: `Consumer ${consumerArn} not found` });
        if (this.info(consumer).status !== 'ACTIVE') throw awsError('ResourceInUseException', { message: `Consumer ${consumer.name} is not ACTIVE` });
        const key = `${consumerArn} ${shardId}`;
        const previous = this.current.get(key);
        if (previous !== undefined && now - previous.atMs < this.takeoverMs) {
          throw awsError('ResourceInUseException', { message: `Another subscription to ${shardId} began ${now - previous.atMs} ms ago` });
        }
        position = this.stream.positionOf(shardId, start);
        if (previous !== undefined) previous.subscription.takenOver = true;
        const subscription: Subscription = { shardId, endsAtMs: now + this.subscriptionMs, position, lastEventAtMs: now, takenOver: false, ended: false, shardEndSent: false };
        this.current.set(key, { atMs: now, subscription });
        // The stream's clock when it accepted (exact: no Date header to round).
        subscriber.next({ next: () => this.pull(subscription), streamTime: new Date(now) });
        return () => {
          subscription.ended = true;
        };
      } catch (error) {
        subscriber.error(error);
        return undefined;
      }
    });
  }

  private info(consumer: Consumer): StreamConsumerInfo {
    const status = this.now() - consumer.createdAtMs >= this.activationMs ? 'ACTIVE' : 'CREATING';
    return { consumerName: consumer.name, consumerArn: consumer.arn, status };
  }

  private now(): number {
    return this.clock.wallNow();
  }

  /** The next event: once records are there (or a heartbeat is due), `undefined` at the subscription's end. */
  private pull(subscription: Subscription): Observable<ShardEvent | undefined> {
    return new RxObservable<ShardEvent | undefined>((subscriber) => {
      const { scheduler } = this.options;
      const check = (): void => {
        if (subscription.ended) return;
        const now = this.now();
        if (subscription.takenOver) {
          subscription.ended = true;
          subscriber.error(awsError('ResourceInUseException', { message: `Another subscription to ${subscription.shardId} took over` }));
          return;
        }
        const event = this.eventAt(subscription, now);
        if (event === 'wait') {
          // Wake at the next event slot, or at the subscription's end, whichever comes first.
          const wait = Math.max(1, Math.min(this.eventIntervalMs, subscription.endsAtMs - now));
          action = scheduler.schedule(check, wait);
          return;
        }
        if (event === undefined) subscription.ended = true;
        else {
          subscription.lastEventAtMs = now;
          this.events += 1;
        }
        subscriber.next(event);
        subscriber.complete();
      };
      let action = scheduler.schedule(check, Math.max(0, subscription.lastEventAtMs + this.eventIntervalMs - this.now()));
      return () => action.unsubscribe();
    });
  }

  /** The event due now, `undefined` for the end of the subscription, or 'wait'. */
  private eventAt(subscription: Subscription, now: number): ShardEvent | undefined | 'wait' {
    if (now >= subscription.endsAtMs || subscription.shardEndSent) return undefined;
    const { shardId } = subscription;
    const records = this.stream.records(shardId);
    const children = this.stream.closedWith(shardId);
    const atEnd = children !== undefined && subscription.position >= records.length;
    if (subscription.position >= records.length && !atEnd && now - subscription.lastEventAtMs < this.heartbeatMs) return 'wait';
    const batch = records.slice(subscription.position, subscription.position + this.maxEventRecords);
    subscription.position += batch.length;
    const unread = records[subscription.position];
    const millisBehindLatest = unread === undefined ? 0 : Math.max(1, now - unread.approximateArrivalTimestamp.getTime());
    const last = children !== undefined && subscription.position >= records.length;
    subscription.shardEndSent = last;
    return {
      records: batch,
      continuationSequenceNumber: last ? undefined : this.stream.sequenceBefore(shardId, subscription.position),
      millisBehindLatest,
      childShardIds: last ? children : undefined,
    };
  }
}
