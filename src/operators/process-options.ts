// Checks the options of processRecords and processBatches synchronously (where the pipeline is
// built, not where it runs) and fills in the defaults; a bad option throws ConfigError naming it.
import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { didYouMean } from '../errors/did-you-mean.js';
import { ConfigError } from '../errors/kinsumer-errors.js';
import { schedulerClock } from '../ports/clock.js';
import type { FailureHandler, ProcessBatchesOptions, ProcessRecordsOptions, RecordOrdering, RetryOptions, RetryPredicate } from './process-types.js';
import { DEFAULT_MAX_DELIVERIES } from './delivery-limit.js';
import { DEFAULT_RETRY, type RetryPolicy } from './record-retry.js';

/** What both operators share once resolved. */
export interface ResolvedFailurePolicy {
  readonly retry: RetryPolicy;
  readonly maxRecordAgeMs: number | undefined;
  readonly onFailure: FailureHandler | undefined;
  readonly maxDeliveries: number;
  readonly retryIf: RetryPredicate | undefined;
  readonly scheduler: SchedulerLike;
  /** How long a batch has waited is a difference of this (monotonic, or the given scheduler's `now()`). */
  readonly elapsedNow: () => number;
  readonly random: () => number;
}

/** processRecords' options with defaults filled in. */
export interface ResolvedRecordsOptions extends ResolvedFailurePolicy {
  readonly ordering: RecordOrdering;
  readonly concurrency: number;
}

/** processBatches' options with defaults filled in. */
export interface ResolvedBatchesOptions extends ResolvedFailurePolicy {
  readonly maxSize: number;
  readonly maxWaitMs: number;
}

/** The default concurrency of orderings that allow more than one: enough to hide a 10 ms call at 1,000 records/s per shard. */
const DEFAULT_CONCURRENCY = 16;
/** The default batch size: Lambda's default BatchSize for Kinesis. */
const DEFAULT_BATCH_SIZE = 100;

// setTimeout clamps anything above 2^31-1 ms to 1 ms.
const MAX_TIMER_MS = 2_147_483_647;
const ORDERINGS: readonly RecordOrdering[] = ['shard', 'partitionKey', 'none'];
const FAILURE_KEYS = ['retry', 'retryIf', 'maxRecordAgeMs', 'onFailure', 'maxDeliveries', 'scheduler', 'random'];
const RECORDS_KEYS = new Set(['ordering', 'concurrency', ...FAILURE_KEYS]);
const BATCHES_KEYS = new Set(['maxSize', 'maxWaitMs', ...FAILURE_KEYS]);
const RETRY_KEYS = new Set(['maxAttempts', 'initialDelayMs', 'maxDelayMs']);

/** Checks processRecords' handler and options; throws {@link ConfigError} naming the option at fault. */
export function resolveRecordsOptions(handler: unknown, options: ProcessRecordsOptions | undefined): ResolvedRecordsOptions {
  const input = checkShape('processRecords', handler, options, RECORDS_KEYS) as ProcessRecordsOptions;
  const ordering = input.ordering ?? 'shard';
  if (!ORDERINGS.includes(ordering)) throw new ConfigError('ordering', "must be 'shard', 'partitionKey' or 'none'");
  const concurrency = positiveInteger(input.concurrency, 'concurrency', ordering === 'shard' ? 1 : DEFAULT_CONCURRENCY);
  if (ordering === 'shard' && concurrency !== 1) {
    throw new ConfigError('concurrency', "must be 1 with ordering 'shard' (one record at a time per shard); use 'partitionKey' or 'none' for more");
  }
  return { ordering, concurrency, ...failurePolicy(input) };
}

/** Checks processBatches' handler and options; throws {@link ConfigError} naming the option at fault. */
export function resolveBatchesOptions(handler: unknown, options: ProcessBatchesOptions | undefined): ResolvedBatchesOptions {
  const input = checkShape('processBatches', handler, options, BATCHES_KEYS) as ProcessBatchesOptions;
  const maxSize = positiveInteger(input.maxSize, 'maxSize', DEFAULT_BATCH_SIZE);
  const maxWaitMs = milliseconds(input.maxWaitMs, 'maxWaitMs', 0);
  return { maxSize, maxWaitMs, ...failurePolicy(input) };
}

function checkShape(operator: string, handler: unknown, options: unknown, known: ReadonlySet<string>): object {
  if (typeof handler !== 'function') throw new ConfigError('handler', `${operator} needs a function as its first argument`);
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object') throw new ConfigError('options', 'must be an object');
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw new ConfigError(key, `is not an option of ${operator}${didYouMean(key, known)}`);
  }
  return options;
}

function failurePolicy(input: ProcessRecordsOptions | ProcessBatchesOptions): ResolvedFailurePolicy {
  const retry = resolveRetry(input.retry);
  const onFailure = optionalFunction<FailureHandler>(input.onFailure, 'onFailure');
  let maxRecordAgeMs: number | undefined;
  if (input.maxRecordAgeMs !== undefined) {
    maxRecordAgeMs = milliseconds(input.maxRecordAgeMs, 'maxRecordAgeMs', 0);
    if (maxRecordAgeMs === 0) throw new ConfigError('maxRecordAgeMs', 'must be a positive finite number of milliseconds');
    if (onFailure === undefined) throw new ConfigError('maxRecordAgeMs', 'needs onFailure (records older than it go there)');
  }
  const scheduler = input.scheduler ?? asyncScheduler;
  if (typeof scheduler !== 'object' || scheduler === null
    || typeof (scheduler as Partial<SchedulerLike>).schedule !== 'function' || typeof (scheduler as Partial<SchedulerLike>).now !== 'function') {
    throw new ConfigError('scheduler', 'must be an RxJS SchedulerLike (now() and schedule())');
  }
  const random = optionalFunction<() => number>(input.random, 'random') ?? Math.random;
  const retryIf = optionalFunction<RetryPredicate>(input.retryIf, 'retryIf');
  const clock = schedulerClock(input.scheduler);
  const maxDeliveries = resolveMaxDeliveries(input.maxDeliveries);
  return { retry, maxRecordAgeMs, onFailure, maxDeliveries, retryIf, scheduler, elapsedNow: () => clock.elapsedNow(), random };
}

// At least 2: a record's first delivery may come with others (its session's first run, or records
// handed to handlers in bulk), so one process that died cannot tell which of them killed it.
function resolveMaxDeliveries(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_DELIVERIES;
  if (value === Infinity) return Infinity;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 2) {
    throw new ConfigError('maxDeliveries', 'must be an integer of at least 2, or Infinity (a first delivery may come with other records: one crash cannot tell which of them caused it)');
  }
  return value;
}

function resolveRetry(value: RetryOptions | undefined): RetryPolicy {
  if (value === undefined) return DEFAULT_RETRY;
  if (value === null || typeof value !== 'object') throw new ConfigError('retry', 'must be an object { maxAttempts, initialDelayMs, maxDelayMs }');
  for (const key of Object.keys(value)) {
    if (!RETRY_KEYS.has(key)) throw new ConfigError(`retry.${key}`, `is not a retry option (maxAttempts, initialDelayMs, maxDelayMs)${didYouMean(key, RETRY_KEYS)}`);
  }
  const maxAttempts = value.maxAttempts === Infinity ? Infinity : positiveInteger(value.maxAttempts, 'retry.maxAttempts', DEFAULT_RETRY.maxAttempts);
  const initialDelayMs = milliseconds(value.initialDelayMs, 'retry.initialDelayMs', DEFAULT_RETRY.initialDelayMs);
  const maxDelayMs = milliseconds(value.maxDelayMs, 'retry.maxDelayMs', Math.max(DEFAULT_RETRY.maxDelayMs, initialDelayMs));
  if (maxDelayMs < initialDelayMs) throw new ConfigError('retry.maxDelayMs', 'must not be less than retry.initialDelayMs');
  return { maxAttempts, initialDelayMs, maxDelayMs };
}

function positiveInteger(value: unknown, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw new ConfigError(option, 'must be a positive integer');
  return value;
}

function milliseconds(value: unknown, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new ConfigError(option, 'must be a finite number of milliseconds, at least 0');
  if (value > MAX_TIMER_MS) throw new ConfigError(option, `must be at most ${MAX_TIMER_MS} ms (about 24.8 days)`);
  return value;
}

function optionalFunction<F>(value: unknown, option: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw new ConfigError(option, 'must be a function');
  return value as F;
}
