// The registered stream consumer that enhanced fan-out reads through: found, or registered and
// waited for until ACTIVE. RegisterStreamConsumer allows 5 calls per second per account, and a
// fleet starting at once would all try: every client describes first, registers only when there is
// nothing, takes "already exists" as success, and polls the status with a growing, jittered delay.
import { type Observable, type SchedulerLike, catchError, concat, defer, ignoreElements, of, shareReplay, switchMap, throwError, timer } from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { type BackoffPolicy, backoffDelay, retryTransient } from '../errors/retry-backoff.js';
import type { FanOutPort, StreamConsumerInfo } from '../ports/stream.js';
import type { KinsumerEvent } from '../types.js';

/** Status polls start this far apart (under 5 per second) and double up to 5 s. */
const CONSUMER_POLL: BackoffPolicy = { baseMs: 250, maxMs: 5000 };

/** What to do about the consumer, from what DescribeStreamConsumer said. */
export type ConsumerStep = 'register' | 'wait' | 'ready';

/** Pure: none → register; ACTIVE → ready; CREATING, DELETING (then gone, then register) → wait. */
export function consumerStep(info: StreamConsumerInfo | undefined): ConsumerStep {
  if (info === undefined) return 'register';
  return info.status === 'ACTIVE' ? 'ready' : 'wait';
}

/** Options of {@link ensureConsumer}. */
export interface EnsureConsumerOptions {
  readonly port: FanOutPort;
  readonly consumerName: string;
  readonly scheduler: SchedulerLike;
  readonly emit: (event: KinsumerEvent) => void;
  /** Spacing of the status polls. Default {@link CONSUMER_POLL}. */
  readonly poll?: BackoffPolicy;
  readonly random?: () => number;
}

/**
 * Emits the consumer's ARN once it is ACTIVE, registering it if absent, then completes. Throttling
 * and other transient faults are retried with backoff (`retrying` events); access denied and the
 * like end it with the AWS error.
 */
export function ensureConsumer(options: EnsureConsumerOptions): Observable<string> {
  const { port, consumerName, scheduler, emit } = options;
  const retry = <T>(operation: string) => retryTransient<T>({
    operation, scheduler, emit, ...(options.random === undefined ? {} : { random: options.random }),
  });
  const describe$ = defer(() => port.describeConsumer(consumerName)).pipe(retry<StreamConsumerInfo | undefined>('DescribeStreamConsumer'));
  // Another client registering the same name at the same moment wins the race: fine, wait for it.
  const register$ = defer(() => port.registerConsumer(consumerName)).pipe(
    retry<StreamConsumerInfo>('RegisterStreamConsumer'),
    catchError((error: unknown) => (classifyAwsError(error) === 'in-use' ? of(undefined) : throwError(() => error))),
    ignoreElements(),
  );
  const waitMs = (polls: number) => Math.max(CONSUMER_POLL.baseMs, backoffDelay(polls, options.poll ?? CONSUMER_POLL, options.random));
  const check = (polls: number): Observable<string> => describe$.pipe(switchMap((info) => {
    const step = consumerStep(info);
    if (step === 'ready' && info !== undefined) return of(info.consumerArn);
    const next$ = concat(timer(waitMs(polls + 1), scheduler).pipe(ignoreElements()), defer(() => check(polls + 1)));
    return step === 'register' ? concat(register$, next$) : next$;
  }));
  return check(0);
}

// One registration per (adapter, consumer name): every lease of a client shares it. Keyed on the
// port object, which belongs to one client, so nothing outlives the client that made it.
const registrations = new WeakMap<FanOutPort, Map<string, Observable<string>>>();

/**
 * {@link ensureConsumer}, shared: the first caller registers and waits, later callers get the ARN
 * at once. A failure is not remembered (the next caller tries again).
 */
export function consumerArn(options: EnsureConsumerOptions): Observable<string> {
  let byName = registrations.get(options.port);
  if (byName === undefined) {
    byName = new Map();
    registrations.set(options.port, byName);
  }
  let shared = byName.get(options.consumerName);
  if (shared === undefined) {
    shared = ensureConsumer(options).pipe(shareReplay({ bufferSize: 1, refCount: false }));
    byName.set(options.consumerName, shared);
  }
  return shared;
}
