// What to do after a failed handler call: try again after a backoff delay, or give up
// (maxAttempts spent, an error that cannot succeed on another try, or the record grew older than
// maxRecordAgeMs). Pure functions, but for a record's age, which reads the clock.
import type { SchedulerLike } from 'rxjs';
import { KinsumerError } from '../errors/kinsumer-errors.js';
import { backoffDelay } from '../errors/retry-backoff.js';
import { schedulerClock } from '../ports/clock.js';
import { StreamRecord } from '../reading/delivered-record.js';
import type { KinsumerRecord } from '../types.js';
import type { RetryPredicate } from './process-types.js';

/** Retry options with every default filled in. */
export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

/**
 * Three calls per record, 100 ms then 200 ms apart: rides out a blip of a downstream service
 * without holding a shard (ordering 'shard') for long on a record that will never succeed.
 */
export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 30_000 };

/** A record is older than `maxRecordAgeMs`: it goes to `onFailure` without (another) handler call. */
export class RecordTooOldError extends KinsumerError {
  /** How old the record was, by its `approximateArrivalTimestamp` on the stream's clock, when it was found too old. */
  readonly ageMs: number;
  /** The `maxRecordAgeMs` option it exceeded. */
  readonly maxRecordAgeMs: number;

  constructor(ageMs: number, maxRecordAgeMs: number, options: { cause?: unknown } = {}) {
    super(`record is ${ageMs} ms old, older than maxRecordAgeMs (${maxRecordAgeMs} ms)`, options);
    this.ageMs = ageMs;
    this.maxRecordAgeMs = maxRecordAgeMs;
  }
}

/** After `attempts` failed calls: retry after `delayMs`, or give up. */
export type NextStep = { readonly kind: 'retry'; readonly delayMs: number } | { readonly kind: 'give-up' };

/** Decides the step after `attempts` (>= 1) failed calls. */
export function afterFailure(policy: RetryPolicy, attempts: number, random: () => number): NextStep {
  if (attempts >= policy.maxAttempts) return { kind: 'give-up' };
  return { kind: 'retry', delayMs: backoffDelay(attempts, { baseMs: policy.initialDelayMs, maxMs: policy.maxDelayMs }, random) };
}

/** `true` for an error that says it cannot succeed on another try (`retriable: false`, as every kinsumer error can say). */
export function saysNotRetriable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { retriable?: unknown }).retriable === false;
}

/**
 * Whether `record`, whose call failed with `error`, may be tried again (the attempts left aside):
 * never when the error says `retriable: false`, else as `retryIf` says (default: yes). A throwing
 * `retryIf` throws here.
 */
export function worthRetrying(error: unknown, record: KinsumerRecord, retryIf: RetryPredicate | undefined): boolean {
  if (saysNotRetriable(error)) return false;
  return retryIf === undefined || retryIf(error, record);
}

/**
 * The error to give up with if `record` is older than `maxRecordAgeMs` now (checked before every
 * call, the first included); `undefined` while it is young enough or without a limit. Its age is
 * on the stream's clock (a delivered record carries it: see `StreamRecord.ageMs`), never this
 * host's wall clock against Kinesis's; `scheduler`'s clock stands in only for a record made
 * outside a reader.
 */
export function tooOld(record: KinsumerRecord, scheduler: SchedulerLike, maxRecordAgeMs: number | undefined, lastError?: unknown): RecordTooOldError | undefined {
  if (maxRecordAgeMs === undefined) return undefined;
  // Whole milliseconds, as arrival times are (the monotonic clock counts fractions).
  const ageMs = Math.round(StreamRecord.ageMs(record, schedulerClock(scheduler)));
  if (!(ageMs > maxRecordAgeMs)) return undefined;
  return new RecordTooOldError(ageMs, maxRecordAgeMs, lastError === undefined ? {} : { cause: lastError });
}
