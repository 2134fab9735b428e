// The transactions of one shard's write lane (design §8.1): records acked with writes of their own
// are held out of every checkpoint until one TransactWriteItems commits their writes with the
// checkpoint that covers them. One turn of the lane is one transaction (or one key lookup): packed
// by EffectQueue, written as CheckpointState.decide(including) says, re-sent identically (same
// token) while it is unknown whether it applied, re-packed (new token) after a definite
// cancellation. The checkpointer runs the turns one at a time, between its commits and renewals.
import { randomUUID } from 'node:crypto';
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import {
  type Observable, type SchedulerLike, EMPTY, Subject, catchError, defer, filter, from, ignoreElements, mergeMap, race, take, tap, throwError, timer,
} from 'rxjs';
import { classifyAwsError, isInternalServerError } from '../errors/aws-error-kind.js';
import { KinsumerError } from '../errors/kinsumer-errors.js';
import { backoffDelay, retryTransient } from '../errors/retry-backoff.js';
import {
  EarlierTransactionAppliedError, TransactionCancelledError, TransactionRejectedError, WriteConditionError, WriteRejectedError,
} from '../errors/write-errors.js';
import type { Clock } from '../ports/clock.js';
import type { HeldLease, LeaseStore, WritesTransaction } from '../ports/lease-store.js';
import type { WritesOutcome } from '../ports/shard-tracker.js';
import type { KinsumerEvent } from '../types.js';
import type { CheckpointState, CommitDecision, TrackedRecord } from './checkpoint-state.js';
import { EffectQueue, type PendingEffect } from './effects.js';
import { weighWrites } from './transact-writes.js';

/** Backoff after a transaction cancelled for a moment (a conflict, throttling): short, the lane waits meanwhile. */
const CANCELLED_BACKOFF = { baseMs: 50, maxMs: 2000 } as const;
/**
 * Answers of HTTP 500 in a row to one identical request (the same token, re-sent with the normal
 * backoff: 12.7 s of waits at most, 6.4 s on average) before the lane stops sending it and takes
 * its writes for the cause: DynamoDB Local answers some malformed items (a plain value where an
 * AttributeValue belongs) with the same 500 forever. A real burst of 500s that outlasts it blames
 * nobody: the lane splits the transaction, and fails a record alone only when a transaction
 * without it then goes through at its first attempt (see #probe).
 */
const SERVER_ERROR_ATTEMPTS = 8;
/**
 * After a transaction whose records someone waited for (processRecords: the next record of each of
 * their keys is handled only then), the next one waits this long at most for as many records to
 * come back, so the freed lanes join it instead of alternating between every other transaction.
 */
const REJOIN_MS = 5;

/** What the lane needs from its checkpointer. */
export interface EffectsLaneOptions {
  readonly store: LeaseStore;
  readonly lease: HeldLease;
  readonly state: CheckpointState;
  readonly scheduler: SchedulerLike;
  /** The rejoin window and `sentAtMs` are on its `elapsedNow` (the checkpointer's zombie guard compares them). */
  readonly clock: Clock;
  readonly emit: (event: KinsumerEvent) => void;
  /** A transaction committed `decision` (the records are acked in the state by then); `sentAtMs`: when its last attempt was sent (`clock.elapsedNow()`). */
  readonly committed: (decision: CommitDecision, sentAtMs: number) => void;
  /** Asks the checkpointer for another turn of the lane. */
  readonly wake: () => void;
  readonly random?: () => number;
}

/** The effects of one leased shard: what waits, and the next transaction. */
export class EffectsLane {
  readonly #options: EffectsLaneOptions;
  readonly #queue = new EffectQueue();
  // After a transaction refused as a whole: at most this many effects per transaction, until one
  // that reaches `through` commits (halving until the record at fault is alone and fails).
  #narrow: { max: number; through: TrackedRecord } | undefined;
  #cancellations = 0;
  // A plain ack's writes failed: the shard ends once the records packed with them are committed.
  #failure: { readonly error: KinsumerError; flush: number } | undefined;
  // After a transaction that settled awaited writes: wait (until `untilMs`) for `count` effects to gather.
  #rejoin: { readonly untilMs: number; readonly count: number } | undefined;
  readonly #added = new Subject<void>();
  // Transactions given up after 500s, oldest first: they may have applied. Until a later one
  // settles it, every transaction names their tokens (`earlier`) and no plain write goes.
  #unknown: Unknown[] = [];
  // The one effect of a transaction given up after 500s: failed when a probe proves it did not apply.
  #suspect: { readonly effect: PendingEffect; readonly error: unknown } | undefined;
  // The token the row holds, as this lease knows it: every transaction follows it (WritesTransaction.after).
  #rowToken: string | undefined;

  constructor(options: EffectsLaneOptions) {
    this.#options = options;
    this.#rowToken = options.lease.transactionToken;
  }

  /** Effects wait for a transaction, or a transaction's outcome is unknown. */
  get waiting(): boolean {
    return this.#queue.size > 0 || this.#unknown.length > 0;
  }

  /**
   * What must go before the release: a probe when a transaction's outcome is unknown (a release
   * without its records would move the checkpoint back under writes that applied); else nothing.
   */
  settleUnknown(): Observable<never> {
    return this.#unknown.length === 0 ? EMPTY : this.#probe();
  }

  /** A plain `ack({ writes })` failed and the records committed beside it are: the shard must end with this error. */
  get failure(): KinsumerError | undefined {
    return this.#failure?.flush === 0 ? this.#failure.error : undefined;
  }

  /**
   * Holds `tickets` and queues their writes (see `ShardTracker.ackWithWrites`).
   * @throws WritesTooLargeError, or KinsumerError when a record was acked already.
   */
  add(tickets: readonly TrackedRecord[], recordIds: readonly string[], writes: readonly TransactWriteItem[], settle?: (outcome: WritesOutcome) => void): void {
    const { store, state } = this.#options;
    if (store.commitWithWrites === undefined || store.tableKeys === undefined) {
      throw new KinsumerError('ack({ writes }) needs a lease store with transactions (DynamoDB, or the in-memory store of kinsumer/testing)');
    }
    const weight = weighWrites(writes, recordIds[0] ?? '(unknown)');
    const held: TrackedRecord[] = [];
    for (const [index, ticket] of tickets.entries()) {
      if (!state.hold(ticket)) {
        for (const back of held) state.unhold(back);
        throw new KinsumerError(`record ${recordIds[index] ?? ticket} was acked already: ack({ writes }) applied nothing`);
      }
      held.push(ticket);
    }
    this.#queue.add({ records: [...tickets].sort((a, b) => a - b), recordIds, writes, weight, settle });
    if (this.#added.observed) this.#added.next();
    this.#options.wake();
  }

  /** The lease ended: every waiting effect is abandoned (not applied; the next owner delivers its records again). */
  abandon(error: Error): void {
    for (const effect of this.#queue.drain()) effect.settle?.({ kind: 'abandoned', error });
  }

  /**
   * The lane's next turn for the effects: a key lookup or one transaction, ending when it is
   * settled (committed, cancelled, refused). `undefined` when nothing can go now (nothing waits,
   * or what waits waits for the watermark). Errors with `LeaseLostError` when fenced, or with a
   * fatal store error; transient errors are retried inside, the same request re-sent.
   */
  turn(): Observable<never> | undefined {
    const { store } = this.#options;
    if (this.#queue.size === 0) return this.#unknown.length === 0 ? undefined : this.#probe();
    if (this.#suspect !== undefined) return this.#probe();
    const unknown = this.#queue.unknownTables();
    const tableKeys = store.tableKeys?.bind(store);
    if (unknown.length > 0 && tableKeys !== undefined) {
      // One table at a time (DescribeTable is per table anyway): a failure belongs to its table only.
      return from(unknown).pipe(
        mergeMap((table) => tableKeys([table]).pipe(
          retryTransient({ operation: 'DescribeTable', shardId: this.#options.lease.shardId, scheduler: this.#options.scheduler, emit: this.#options.emit }),
          tap((keys) => this.#queue.learnKeys(keys)),
          // Not allowed to describe it (an IAM policy without DescribeTable): the writes to it
          // fail, the shard and the client go on.
          catchError((error: unknown) => {
            const reason = `cannot tell the items of ${table} apart: DescribeTable failed (${error instanceof Error ? error.name : String(error)})`;
            this.#queue.learnKeys(new Map([[table, undefined]]), reason);
            return EMPTY;
          }),
        )),
        tap({ complete: () => this.#options.wake() }),
        ignoreElements(),
      );
    }
    const rejoin = this.#rejoin;
    this.#rejoin = undefined;
    const now = this.#options.clock.elapsedNow();
    if (rejoin !== undefined && this.#queue.size < rejoin.count && now < rejoin.untilMs) {
      return race(timer(rejoin.untilMs - now, this.#options.scheduler), this.#added.pipe(filter(() => this.#queue.size >= rejoin.count))).pipe(
        take(1),
        mergeMap(() => {
          this.#options.wake();
          return EMPTY;
        }),
      );
    }
    const failure = this.#failure;
    const flushing = failure !== undefined && failure.flush > 0;
    const packed = this.#queue.pack(flushing ? failure.flush : this.#narrow?.max);
    if (failure !== undefined) failure.flush = 0;
    // No write fails while a transaction's outcome is unknown (it may hold them): they wait for it.
    if (this.#unknown.length === 0) for (const { effect, error } of packed.rejected) this.#fail(effect, error);
    const batch = [...packed.effects];
    let decision: CommitDecision | undefined;
    while (batch.length > 0) {
      decision = this.#options.state.decide(batch.flatMap((effect) => effect.records));
      if (decision.covers === true) break;
      batch.pop();
    }
    if (decision === undefined || batch.length === 0) {
      if (this.#unknown.length > 0) return this.#probe();
      if (packed.rejected.length > 0 || flushing) this.#options.wake();
      return undefined;
    }
    return this.#transact(batch, decision);
  }

  #transact(batch: readonly PendingEffect[], decision: CommitDecision): Observable<never> {
    const { store, lease, scheduler, clock, emit } = this.#options;
    const writes = batch.flatMap((effect) => effect.writes);
    // Built once: every re-send is the identical request, with the same token.
    const token = randomUUID();
    const request$ = (store.commitWithWrites as NonNullable<LeaseStore['commitWithWrites']>)(lease, decision.write, this.#transaction(token, writes));
    // The lease counts as confirmed when the first attempt went out, not the last: a re-send's
    // success may be DynamoDB replaying an earlier attempt (same token) that applied before
    // another client captured the lease, and proves nothing about the lease at the re-send.
    let sentAtMs: number | undefined;
    let serverErrors = 0;
    // Re-sent even after close(): until it is known whether it applied, no other write may follow
    // (a release without its records would move the checkpoint back under writes that applied).
    return defer(() => {
      sentAtMs ??= clock.elapsedNow();
      return request$;
    }).pipe(
      retryTransient({
        operation: 'transaction', shardId: lease.shardId, scheduler, emit,
        isRetriable: (error) => {
          if (error instanceof TransactionCancelledError || error instanceof TransactionRejectedError || classifyAwsError(error) !== 'transient') return false;
          serverErrors = isInternalServerError(error) ? serverErrors + 1 : 0;
          return serverErrors < SERVER_ERROR_ATTEMPTS;
        },
      }),
      tap(() => {
        this.#applied(token);
        this.#committedBatch(batch, decision, sentAtMs ?? clock.elapsedNow());
      }),
      ignoreElements(),
      catchError((error: unknown) => {
        // Settle unknown transactions before failing any write (one of them may hold it): the batch goes again after.
        if ((error instanceof TransactionCancelledError || error instanceof TransactionRejectedError) && this.#unknown.length > 0) return this.#probe();
        if (error instanceof TransactionCancelledError) return this.#cancelled(batch, error);
        if (error instanceof TransactionRejectedError) return this.#rejected(batch, error);
        if (error instanceof EarlierTransactionAppliedError) return this.#appliedEarlier(error.token);
        if (isInternalServerError(error)) return this.#gaveUp({ token, decision, batch, sentAtMs: sentAtMs ?? clock.elapsedNow() }, error);
        return throwError(() => error);
      }),
    );
  }

  /** A transaction of `batch` committed `decision`: its records are acked and kept, and told. */
  #committedBatch(batch: readonly PendingEffect[], decision: CommitDecision, sentAtMs: number): void {
    const { state, clock } = this.#options;
    const records = batch.flatMap((effect) => effect.records);
    state.commitHeld(decision, records);
    this.#queue.remove(batch);
    this.#cancellations = 0;
    if (this.#narrow !== undefined && (records.at(-1) ?? -1) >= this.#narrow.through) this.#narrow = undefined;
    this.#options.committed(decision, sentAtMs);
    let awaited = 0;
    for (const effect of batch) {
      if (effect.settle === undefined) continue;
      effect.settle({ kind: 'committed' });
      awaited += 1;
    }
    if (awaited > 0) this.#rejoin = { untilMs: clock.elapsedNow() + REJOIN_MS, count: this.#queue.size + awaited };
    if (this.#queue.size > 0 || this.#failure !== undefined) this.#options.wake();
  }

  /**
   * A transaction after the row's token, naming the unknown ones. All of them follow the same
   * token, so at most one can ever apply, and a later one's success proves none did.
   */
  #transaction(token: string, writes: WritesTransaction['writes']): WritesTransaction {
    const after = this.#rowToken;
    return this.#unknown.length === 0 ? { token, writes, after } : { token, writes, after, earlier: this.#unknown.map((unknown) => unknown.token) };
  }

  /** The transaction `token` applied: the row holds it, and every unknown one did not apply (nor can now). */
  #applied(token: string): void {
    this.#rowToken = token;
    this.#unknown = [];
  }

  /**
   * 500 to every attempt: stop sending it. Several effects: half go next (as after a refusal),
   * until the one at fault is alone; one alone is a suspect, tried by a probe. Its outcome stays
   * unknown until a later transaction settles it.
   */
  #gaveUp(unknown: Unknown, error: unknown): Observable<never> {
    this.#unknown.push(unknown);
    const { batch } = unknown;
    const only = batch.length === 1 ? batch[0] : undefined;
    if (only !== undefined) this.#suspect = { effect: only, error };
    else this.#narrowTo(batch);
    this.#options.wake();
    return EMPTY;
  }

  /**
   * A transaction of the checkpoint alone (no writes), naming the unknown ones: it settles them
   * (its success: none applied; its condition meeting one's token: that one did). A suspect is
   * failed only when the probe went through at its first attempt, right after the suspect's 500s:
   * the server was answering then, so the 500s were the suspect's writes'. After a retried probe
   * (an outage), the suspect goes again.
   */
  #probe(): Observable<never> {
    const { store, lease, state, scheduler, clock, emit } = this.#options;
    const decision = state.decide();
    const token = randomUUID();
    const request$ = (store.commitWithWrites as NonNullable<LeaseStore['commitWithWrites']>)(lease, decision.write, this.#transaction(token, []));
    let attempts = 0;
    let sentAtMs: number | undefined;
    return defer(() => {
      attempts += 1;
      sentAtMs ??= clock.elapsedNow();
      return request$;
    }).pipe(
      retryTransient({ operation: 'transaction', shardId: lease.shardId, scheduler, emit }),
      tap(() => {
        this.#applied(token);
        this.#options.committed(decision, sentAtMs ?? clock.elapsedNow());
        const suspect = this.#suspect;
        this.#suspect = undefined;
        if (suspect !== undefined && attempts === 1) {
          const reason = `DynamoDB answered HTTP 500 to all ${SERVER_ERROR_ATTEMPTS} attempts of a transaction holding only these writes, and took one without them at once: `
            + 'they are taken for malformed (a plain value where an AttributeValue belongs, say)';
          this.#fail(suspect.effect, new WriteRejectedError(suspect.effect.recordIds, reason, undefined, { cause: suspect.error, retriable: true }));
        }
        this.#options.wake();
      }),
      ignoreElements(),
      catchError((error: unknown) => (error instanceof EarlierTransactionAppliedError ? this.#appliedEarlier(error.token) : throwError(() => error))),
    );
  }

  /** The unknown transaction `token` applied after all (the row holds its token): its records are committed; the others did not apply. */
  #appliedEarlier(token: string): Observable<never> {
    const applied = this.#unknown.find((unknown) => unknown.token === token);
    this.#applied(token);
    if (applied === undefined) return throwError(() => new KinsumerError(`the row holds the token of transaction ${token}, which this lane did not send`));
    if (this.#suspect !== undefined && applied.batch.includes(this.#suspect.effect)) this.#suspect = undefined;
    this.#narrow = undefined;
    this.#committedBatch(applied.batch, applied.decision, applied.sentAtMs);
    this.#options.wake();
    return EMPTY;
  }

  /** Nothing applied: the writes that failed fail their records; the rest go again, at once or after a backoff. */
  #cancelled(batch: readonly PendingEffect[], error: TransactionCancelledError): Observable<never> {
    let offset = 0;
    let failed = 0;
    let plainFailure = false;
    for (const effect of batch) {
      const reasons = error.reasons.slice(offset, offset + effect.writes.length);
      offset += effect.writes.length;
      const condition = reasons.indexOf('ConditionalCheckFailed');
      const refused = reasons.findIndex((reason) => reason !== 'None' && reason !== 'ConditionalCheckFailed' && !isTransientReason(reason));
      if (condition < 0 && refused < 0) continue;
      failed += 1;
      const cause = { cause: error.cause ?? error };
      plainFailure = this.#fail(effect, condition >= 0
        ? new WriteConditionError(effect.recordIds, condition, cause)
        : new WriteRejectedError(effect.recordIds, `DynamoDB cancelled it: ${reasons[refused]}`, refused, cause)) || plainFailure;
    }
    // The records packed with a plain ack's failed writes commit without them, then the shard ends.
    if (plainFailure && this.#failure !== undefined) this.#failure.flush = batch.length - failed;
    if (failed > 0 || !error.retriable) {
      this.#options.wake();
      return EMPTY;
    }
    this.#cancellations += 1;
    const delayMs = backoffDelay(this.#cancellations, CANCELLED_BACKOFF, this.#options.random);
    this.#options.emit({ type: 'retrying', operation: 'transaction', attempt: this.#cancellations, delayMs, error, shardId: this.#options.lease.shardId });
    return timer(delayMs, this.#options.scheduler).pipe(
      mergeMap(() => {
        this.#options.wake();
        return EMPTY;
      }),
    );
  }

  /** Refused as a whole: one effect alone is at fault; of several, half go next (until the one at fault is alone). */
  #rejected(batch: readonly PendingEffect[], error: TransactionRejectedError): Observable<never> {
    const only = batch.length === 1 ? batch[0] : undefined;
    if (only !== undefined) {
      this.#fail(only, new WriteRejectedError(only.recordIds, error.cause instanceof Error ? error.cause.message : error.message, undefined, { cause: error.cause ?? error }));
    } else {
      this.#narrowTo(batch);
    }
    this.#options.wake();
    return EMPTY;
  }

  /** Half of `batch` goes next, and so on, until a transaction reaching its last record commits. */
  #narrowTo(batch: readonly PendingEffect[]): void {
    const through = batch.at(-1)?.records.at(-1) ?? 0;
    this.#narrow = { max: Math.ceil(batch.length / 2), through: Math.max(through, this.#narrow?.through ?? through) };
  }

  /**
   * The effect's records are unacked again and told why. A plain ack's failure (nobody to tell)
   * ends the shard after the transaction being built; returns `true` for one.
   */
  #fail(effect: PendingEffect, error: WriteConditionError | WriteRejectedError): boolean {
    for (const record of effect.records) this.#options.state.unhold(record);
    this.#queue.remove([effect]);
    if (effect.settle !== undefined) {
      effect.settle({ kind: 'failed', error });
      return false;
    }
    this.#failure ??= { error, flush: 0 };
    return true;
  }
}

/** A transaction given up after 500s: it may have applied. */
interface Unknown {
  readonly token: string;
  readonly decision: CommitDecision;
  readonly batch: readonly PendingEffect[];
  /** When its first attempt was sent (`clock.elapsedNow()`). */
  readonly sentAtMs: number;
}

function isTransientReason(reason: string): boolean {
  return reason === 'TransactionConflict' || reason === 'ThrottlingError' || reason === 'ProvisionedThroughputExceeded';
}
