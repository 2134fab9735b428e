import { type MonoTypeOperatorFunction, type SchedulerLike, retry, throwError, timer } from 'rxjs';
import type { KinsumerEvent } from '../types.js';
import { classifyAwsError } from './aws-error-kind.js';

/** Capped exponential backoff. */
export interface BackoffPolicy {
  /** Delay before the first retry. */
  readonly baseMs: number;
  /** No delay grows beyond this. */
  readonly maxMs: number;
}

/** Starting point for AWS calls: 100 ms, doubling, at most 10 s. */
export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 100, maxMs: 10_000 };

/**
 * Delay before retry number `attempt` (1-based): "full jitter" — uniform in [0, min(max, base·2^(attempt-1))].
 * Full jitter spreads many clients that failed at the same moment (a throttled table, a restarted
 * server) instead of having them retry in lockstep. `random` is injectable for tests.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(attempt - 1, 30));
  return Math.floor(random() * (ceiling + 1));
}

/** Options of {@link retryTransient}. */
export interface RetryTransientOptions {
  /** Names the call in `retrying` events (`GetRecords`, `commit`, ...). */
  readonly operation: string;
  readonly shardId?: string;
  readonly scheduler: SchedulerLike;
  /** Receives a `retrying` event before each wait. */
  readonly emit: (event: KinsumerEvent) => void;
  readonly policy?: BackoffPolicy;
  /** Which errors to retry. Default: AWS errors classified `transient`. */
  readonly isRetriable?: (error: unknown) => boolean;
  /** Give up after this many retries. Default: never (retry while subscribed). */
  readonly maxRetries?: number;
  readonly random?: () => number;
}

/**
 * Resubscribes to the source (re-sends the request) after transient errors, forever by default,
 * with capped exponential backoff and jitter, reporting each attempt. Other errors pass through.
 * The attempt count resets after a success, so a long-lived source backs off per incident.
 */
export function retryTransient<T>(options: RetryTransientOptions): MonoTypeOperatorFunction<T> {
  const isRetriable = options.isRetriable ?? ((error: unknown) => classifyAwsError(error) === 'transient');
  return retry<T>({
    resetOnSuccess: true,
    delay: (error: unknown, attempt: number) => {
      if (!isRetriable(error) || (options.maxRetries !== undefined && attempt > options.maxRetries)) return throwError(() => error);
      const delayMs = backoffDelay(attempt, options.policy, options.random);
      options.emit({
        type: 'retrying',
        operation: options.operation,
        attempt,
        delayMs,
        error: error instanceof Error ? error : new Error(String(error)),
        ...(options.shardId === undefined ? {} : { shardId: options.shardId }),
      });
      return timer(delayMs, options.scheduler);
    },
  });
}
