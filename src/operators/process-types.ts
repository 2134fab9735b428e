// The public types of processRecords and processBatches.
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { Observable, SchedulerLike } from 'rxjs';
import type { KinsumerRecord } from '../types.js';

/**
 * Which records of a shard may be processed at the same time:
 * - `'shard'`: one at a time, in sequence order (shards in parallel);
 * - `'partitionKey'`: one at a time per partition key, in sequence order; different keys in parallel;
 * - `'none'`: any of them, in any order.
 */
export type RecordOrdering = 'shard' | 'partitionKey' | 'none';

/** Per-record retries: capped exponential backoff with full jitter, on the operator's scheduler. */
export interface RetryOptions {
  /** Handler calls per record, the first included; `Infinity` retries until `maxRecordAgeMs`. Default 3. */
  readonly maxAttempts?: number;
  /** Delay before the first retry, doubling for each later one (the jitter draws in [0, delay]). Default 100. */
  readonly initialDelayMs?: number;
  /** No delay grows beyond this. Default 30000. */
  readonly maxDelayMs?: number;
}

/** What a handler call knows besides the record. */
export interface ProcessContext {
  /** 1 for the first call on this record (or batch), 2 for the first retry, ... */
  readonly attempt: number;
  /**
   * Aborted when this client no longer holds the record's lease (lost to another client, or given
   * up after the drain of a stop or a rebalance) or when the operator is unsubscribed. The record
   * then goes to the next owner: stop early (reject, e.g. `signal.throwIfAborted()`); whatever the
   * handler does then, the record is neither acked nor retried.
   */
  readonly signal: AbortSignal;
}

/** What `onFailure` receives: a record that failed every attempt, or became too old to try again. */
export interface FailedRecord {
  /** The record. It is acked once `onFailure` resolves. */
  readonly record: KinsumerRecord;
  /** The last handler error, or a `RecordTooOldError` (whose `cause` is the last handler error, if any). */
  readonly error: unknown;
  /** Handler calls made on the record (0 when it was too old to try at all). */
  readonly attempts: number;
}

/**
 * What a handler or `onFailure` returns: a promise (done when it resolves), an Observable (done
 * when it completes; its last value counts), or a value (done at once).
 */
export type HandlerResult<T> = T | PromiseLike<T> | Observable<T>;

/**
 * What a record handler may return: nothing, or the record's own DynamoDB writes (design §8.1),
 * committed in one transaction with the checkpoint that covers the record. The record is settled
 * once they are; a write whose condition fails is this attempt's failure (`WriteConditionError`:
 * the handler is called again for fresh writes, then `onFailure`), writes too large for one
 * transaction (`WritesTooLargeError`) or refused by DynamoDB (`WriteRejectedError`) go to `onFailure` at once.
 */
export interface RecordResult {
  /** `TransactWriteItem`s of the DynamoDB API: at most 99 actions and 4 MB, no two on one item. */
  readonly writes?: readonly TransactWriteItem[];
}

/**
 * Handles one record; rejecting (or throwing) fails this attempt. It returns nothing, or
 * `{ writes }` ({@link RecordResult}); anything else (an unknown key such as `write`, `writes`
 * that is not an array, a value that is not an object) fails the record with a
 * `HandlerResultError`, which is not retried.
 */
export type RecordHandler = (record: KinsumerRecord, ctx: ProcessContext) => HandlerResult<RecordResult | void>;

/** Takes a record that will not be processed (a dead-letter queue, a log): it is acked when this is done. */
export type FailureHandler = (failure: FailedRecord) => HandlerResult<unknown>;

/** What processRecords (and, per record, processBatches) tells about a settled record. */
export interface ProcessedRecord {
  /** The record, acked by now. */
  readonly record: KinsumerRecord;
  /** `'processed'`: a handler call succeeded; `'failed'`: it went to `onFailure`, which resolved. */
  readonly outcome: 'processed' | 'failed';
  /** Handler calls made on the record. */
  readonly attempts: number;
  /** With `'failed'`: what `onFailure` received as `error`. */
  readonly error?: unknown;
}

/** Options of `processRecords`. */
export interface ProcessRecordsOptions {
  /** What may run at the same time within a shard. Default `'shard'`. */
  readonly ordering?: RecordOrdering;
  /** Per shard: most records being processed at once (backoff waits included). Default 1 for `'shard'` (the only value it allows), 16 otherwise. */
  readonly concurrency?: number;
  /** Retries of a failing record. Default `{ maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 30000 }`. */
  readonly retry?: RetryOptions;
  /** Records older than this (by `approximateArrivalTimestamp`, on the stream's clock: the age Kinesis's own time gives it, never this host's wall clock) go to `onFailure` untried, or untried again. Needs `onFailure`. */
  readonly maxRecordAgeMs?: number;
  /**
   * Where records that failed every attempt go; the record is acked once it resolves. Without it,
   * such a record errors the output with the handler's error. If it throws or rejects, the
   * output errors with that error (the record is not acked).
   */
  readonly onFailure?: FailureHandler;
  /**
   * Whether a failed record is worth another attempt, asked after each failed attempt that
   * `retry` would follow with another: `false` sends the record to `onFailure` (or errors the
   * output without it) at once. Not asked about errors that say `retriable: false` (such as a
   * `RecordDecodeError` from `record.json()`): those are never retried. Default: retry every other error.
   */
  readonly retryIf?: RetryPredicate;
  /** Runs the retry delays: pass the consumer's scheduler. Default `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /** The jitter source, uniform in [0, 1). Default `Math.random` (tests fix it). */
  readonly random?: () => number;
}

/**
 * Decides whether a record whose handler call failed with `error` is tried again; it must not
 * throw (if it does, the output errors with that error).
 */
export type RetryPredicate = (error: unknown, record: KinsumerRecord) => boolean;

/** What a batch handler may return: the records of the batch that failed (the rest is acked), and their writes. */
export interface BatchResult {
  /** Records of this batch to retry (then to `onFailure`); records not in the batch are an error. */
  readonly failed?: readonly KinsumerRecord[];
  /**
   * DynamoDB writes that belong to the batch's records that did not fail (design §8.1): committed
   * in one transaction with the checkpoint that covers them all, within the same limits as one
   * record's (99 actions, 4 MB). A condition that fails retries those records with the failed
   * ones; writes too large or refused send them to `onFailure`, record by record.
   */
  readonly writes?: readonly TransactWriteItem[];
}

/**
 * Handles one batch of one shard's records, in sequence order. Rejecting fails the whole batch. It
 * returns nothing, or `{ failed, writes }` ({@link BatchResult}); anything else (an unknown key,
 * `failed` or `writes` that is not an array) fails the batch's records with a `HandlerResultError`,
 * which is not retried.
 */
export type BatchHandler = (records: readonly KinsumerRecord[], ctx: ProcessContext) => HandlerResult<BatchResult | void>;

/** A batch, settled: every record of it processed or sent to `onFailure`, and acked. */
export interface ProcessedBatch {
  /** The shard all its records come from. */
  readonly shardId: string;
  /** Its records in sequence order, each with how it ended. */
  readonly records: readonly ProcessedRecord[];
}

/** Options of `processBatches`. */
export interface ProcessBatchesOptions {
  /** Most records in one batch. Default 100. */
  readonly maxSize?: number;
  /** Longest a record waits for its batch to fill, counted from its arrival. Default 0 (whatever has arrived). */
  readonly maxWaitMs?: number;
  /** Retries of the failed records of a batch. Default as for `processRecords`. */
  readonly retry?: RetryOptions;
  /** As for `processRecords`: records older than this go to `onFailure` untried (again). Needs `onFailure`. */
  readonly maxRecordAgeMs?: number;
  /** As for `processRecords`, called for each record that failed every attempt, one at a time, in sequence order. */
  readonly onFailure?: FailureHandler;
  /**
   * As for `processRecords`, asked for each record of a failed call: those it refuses go to
   * `onFailure`, the others are retried as a smaller batch. For records the handler reported in
   * `failed`, `error` is a `KinsumerError` saying so.
   */
  readonly retryIf?: RetryPredicate;
  /** Runs the batching window and the retry delays. Default `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /** The jitter source, uniform in [0, 1). Default `Math.random`. */
  readonly random?: () => number;
}
