// The failures of a record's own DynamoDB writes (`ack({ writes })`, design §8.1): each names the
// record (or the records of a batch) whose writes failed, never the records committed beside them.
import { KinsumerError } from './kinsumer-errors.js';

/** Which limit of one transaction a record's writes exceed. */
export type WritesLimit = 'actions' | 'bytes';

/**
 * A record's writes cannot fit in one `TransactWriteItems` beside its checkpoint: more than 99
 * actions, or more than 4 MB. Thrown by `ack({ writes })` at the call (the record stays unacked);
 * under `processRecords` the record goes to `onFailure` without another attempt. Never retriable.
 */
export class WritesTooLargeError extends KinsumerError {
  /** The record whose writes are too large (for a batch's writes, its first record). */
  readonly recordId: string;
  /** The limit exceeded. */
  readonly limit: WritesLimit;
  /** What the writes hold: actions, or bytes as DynamoDB counts item sizes. */
  readonly actual: number;
  /** The most allowed: 99 actions (the checkpoint is the 100th), or the bytes left beside the checkpoint. */
  readonly max: number;

  constructor(recordId: string, limit: WritesLimit, actual: number, max: number) {
    super(`the writes of record ${recordId} do not fit in one transaction: ${actual} ${limit}, at most ${max}`, { retriable: false });
    this.recordId = recordId;
    this.limit = limit;
    this.actual = actual;
    this.max = max;
  }
}

/**
 * A condition of one of the record's own actions did not hold (`ConditionalCheckFailed`): none of
 * its writes were applied, and the records committed with it were committed without it. Under
 * `processRecords` the handler is called again for fresh writes (`retry`), then `onFailure`; with
 * a plain `ack({ writes })` the shard ends with an `error` event carrying this error and is read
 * again from its checkpoint, so the record is delivered again.
 */
export class WriteConditionError extends KinsumerError {
  /** The record whose condition failed (for a batch's writes, its first record). */
  readonly recordId: string;
  /** Every record the failed writes belonged to (one, or a batch's records). */
  readonly recordIds: readonly string[];
  /** The failing action's index in the record's `writes`. */
  readonly actionIndex: number;

  constructor(recordIds: readonly string[], actionIndex: number, options: { cause?: unknown } = {}) {
    super(`the condition of action ${actionIndex} of the writes of record ${recordIds.join(', ')} did not hold: its writes were not applied`, { ...options, retriable: true });
    this.recordId = recordIds[0] ?? '(none)';
    this.recordIds = recordIds;
    this.actionIndex = actionIndex;
  }
}

/**
 * DynamoDB refuses a record's writes whatever the moment: a table that does not exist, an invalid
 * expression, two actions on one item, an action on the shard's own checkpoint row. None of its
 * writes were applied. Under `processRecords` the record goes to `onFailure` without another
 * attempt; with a plain `ack({ writes })` the shard ends with an `error` event carrying it.
 *
 * `retriable` when kinsumer inferred the refusal rather than being told: DynamoDB answered HTTP 500
 * to every attempt of a transaction holding only these writes (as DynamoDB Local does for a
 * malformed item), and at once to one without them. Then `processRecords` calls the handler again
 * (`retry`) before `onFailure`.
 */
export class WriteRejectedError extends KinsumerError {
  /** The record whose writes were refused (for a batch's writes, its first record). */
  readonly recordId: string;
  /** Every record the refused writes belonged to. */
  readonly recordIds: readonly string[];
  /** The refused action's index in the record's `writes`, when DynamoDB or kinsumer could tell. */
  readonly actionIndex: number | undefined;

  constructor(recordIds: readonly string[], reason: string, actionIndex?: number, options: { cause?: unknown; retriable?: boolean } = {}) {
    const action = actionIndex === undefined ? '' : ` (action ${actionIndex})`;
    super(`the writes of record ${recordIds.join(', ')} were refused${action}: ${reason}`, { ...options, retriable: options.retriable ?? false });
    this.recordId = recordIds[0] ?? '(none)';
    this.recordIds = recordIds;
    this.actionIndex = actionIndex;
  }
}

/** Cancellation reasons that say "try again": the same transaction may commit then. */
const TRANSIENT_REASONS = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded']);

/**
 * A transaction of records' writes was cancelled, nothing of it applied, and the lease still
 * holds (the checkpoint's own condition held): `reasons[i]` is DynamoDB's cancellation code for
 * the transaction's write `i` (`None` for the writes that did not fail). Retriable when every
 * failing write failed for a moment only (a conflict with another transaction, throttling).
 * Raised by a lease store's `commitWithWrites`; the write lane turns it into the records' errors.
 */
export class TransactionCancelledError extends KinsumerError {
  /** One code per write of the transaction (the checkpoint's action not included). */
  readonly reasons: readonly string[];

  /**
   * @param reasons one code per write.
   * @param options.checkpointReason the code of the checkpoint's own action, when not `None`
   * (a conflict or throttling on the checkpoint row: it counts for `retriable`).
   */
  constructor(reasons: readonly string[], options: { cause?: unknown; checkpointReason?: string } = {}) {
    const { checkpointReason, ...rest } = options;
    const failing = [...(checkpointReason === undefined || checkpointReason === 'None' ? [] : [checkpointReason]), ...reasons.filter((reason) => reason !== 'None')];
    super(`transaction cancelled: ${failing.join(', ') || 'no reason given'}`, { ...rest, retriable: failing.length > 0 && failing.every((reason) => TRANSIENT_REASONS.has(reason)) });
    this.reasons = reasons;
  }
}

/**
 * DynamoDB refused a transaction of records' writes as a whole, without saying which write
 * (a `ValidationException`: an invalid expression, an item too large, a type mismatch DynamoDB
 * Local finds at run time). Nothing of it was applied. Raised by a lease store's
 * `commitWithWrites`; the write lane narrows it down to the record at fault.
 */
export class TransactionRejectedError extends KinsumerError {
  constructor(options: { cause?: unknown } = {}) {
    const detail = options.cause instanceof Error ? `: ${options.cause.message}` : '';
    super(`transaction refused${detail}`, { ...options, retriable: false });
  }
}

/**
 * A transaction's checkpoint condition failed because the row holds the token of an earlier
 * transaction of the same lease, one sent without a success ever answered (its attempts were
 * answered 500, and the lane went on without it): that one applied after all, with its
 * checkpoint. Nothing of this transaction applied. Raised by a lease store's `commitWithWrites`
 * (see `WritesTransaction.earlier`); the write lane commits the earlier one's records.
 */
export class EarlierTransactionAppliedError extends KinsumerError {
  /** The earlier transaction's token, which the row holds. */
  readonly token: string;

  constructor(token: string, options: { cause?: unknown } = {}) {
    super(`an earlier transaction (${token}) applied after all`, { ...options, retriable: false });
    this.token = token;
  }
}
