// One leased shard's checkpointer: acks move the pure CheckpointState; a commit loop writes it
// through the lease store at most every commitFrequencyMs, one write at a time, and renews the
// lease when nothing changed (an idle shard keeps its lease, W2); close() writes the final acked
// position with the release. A fenced write means another client took the lease: that shard stops
// with LeaseLostError, the consumer carries on.
import {
  type MonoTypeOperatorFunction, type Observable, type SchedulerLike, BehaviorSubject, EMPTY, ReplaySubject, Subject,
  catchError, defer, filter, finalize, first, firstValueFrom, identity, ignoreElements, interval, lastValueFrom, merge,
  mergeMap, share, startWith, switchMap, takeUntil, tap, throttleTime, throwError,
} from 'rxjs';
import { retryTransient } from './backoff.js';
import { CheckpointState, type CommitDecision } from './checkpoint-state.js';
import { KinsumerError, LeaseLostError } from './errors.js';
import { DEFAULTS } from './options.js';
import { exhaustMapLatest } from './operators/exhaust-map-latest.js';
import type { HeldLease, LeaseStore, ShardTracker, StoredCheckpoint } from './ports.js';
import type { Position } from './sequence-number.js';
import type { CheckpointPosition, KinsumerEvent, StatReceiver } from './types.js';

/** Transient failures of the final release retried before close() gives up (the lease then expires on its own). */
const RELEASE_RETRIES = 5;

/** Options of {@link createCheckpointer}. */
export interface CheckpointerOptions {
  readonly store: LeaseStore;
  /** The lease as captured: its counter fences every write. */
  readonly lease: HeldLease;
  /**
   * Where reading really starts when the stored checkpoint does not say it (a LATEST or timestamp
   * start, see `startToKeep`): written with the first write, and by a release with nothing acked.
   * No record is emitted before it is stored.
   */
  readonly start?: StoredCheckpoint;
  /** Least time between two commits of this shard. */
  readonly commitFrequencyMs: number;
  /** Renew the lease after this long without a write (well within leaseTtlMs; the coordination layer passes leaseTtlMs / 3). */
  readonly renewIntervalMs: number;
  /** Report `shard-stalled` after this long with records pending and the watermark not moving, and again as often. Default 60000. */
  readonly stallWarningMs?: number;
  readonly scheduler: SchedulerLike;
  /** Receives `checkpoint`, `lease-released`, `lease-lost`, `shard-stalled`, `retrying` and `error` events. */
  readonly emit: (event: KinsumerEvent) => void;
  readonly stats?: StatReceiver;
}

/** A {@link ShardTracker} that also runs the commit loop and releases the lease. */
export interface Checkpointer extends ShardTracker {
  readonly shardId: string;
  /**
   * The commit and renewal loop, while subscribed (shared: one loop however many subscribers).
   * Never emits; completes after {@link Checkpointer.close}; errors with `LeaseLostError` when a
   * write (the release included) is fenced, or with a `KinsumerError` on a fatal store error.
   * Transient errors are retried.
   */
  readonly run$: Observable<never>;
  /**
   * Idempotent: waits for a write in flight, then releases the lease writing the latest acked
   * position (and `Finished` when the Go rule allows). Does nothing once the lease was lost.
   * Never rejects: failures are reported as events.
   */
  close(): Promise<void>;
  /** The latest acked checkpoint (the watermark), written or not. */
  checkpoint(): StoredCheckpoint | undefined;
  /** `Finished` is stored for this shard. */
  finishedWritten(): boolean;
}

type Status =
  | { readonly kind: 'open' }
  | { readonly kind: 'finished' }
  | { readonly kind: 'closed' }
  | { readonly kind: 'lost'; readonly error: LeaseLostError };

/** Creates the checkpointer of a freshly captured lease. */
export function createCheckpointer(options: CheckpointerOptions): Checkpointer {
  const { store, lease, scheduler, emit, stats, commitFrequencyMs, renewIntervalMs, stallWarningMs = DEFAULTS.stallWarningMs } = options;
  if (!(commitFrequencyMs >= 0)) throw new RangeError('commitFrequencyMs must be >= 0');
  if (!(renewIntervalMs > 0)) throw new RangeError('renewIntervalMs must be > 0');
  if (!(stallWarningMs > 0)) throw new RangeError('stallWarningMs must be > 0');
  const { shardId } = lease;
  const state = new CheckpointState(lease.checkpoint, { start: options.start, finished: lease.finished });
  const acks = new Subject<void>();
  // The watermark moved, or records became pending: the stall clock starts again.
  const progress = new Subject<void>();
  // Anything that may make a commit worth writing: an ack, a finish.
  const triggers = new Subject<void>();
  // Each successful write, which restarts the renewal clock.
  const written = new Subject<void>();
  // Writes in flight: a count, not a flag, because the next write can start (from the completion
  // of the previous one) before the previous one's finalize runs.
  const writing = new BehaviorSubject(0);
  const status = new BehaviorSubject<Status>(lease.finished ? { kind: 'finished' } : { kind: 'open' });
  const ended = new ReplaySubject<void>(1);
  // When the last write that confirmed the lease was sent (its LastUpdate is no earlier); the
  // capture has just confirmed it. Renewals come every renewIntervalMs (a third of the TTL): two
  // intervals without a confirmation leave the lease a third of its TTL from being takeable.
  const confirmed = new Subject<void>();
  let confirmedAtMs = scheduler.now();
  let phase: 'open' | 'closing' | 'closed' | 'lost' = 'open';
  let renewDue = false;
  let closing: Promise<void> | undefined;

  const lose = (error: LeaseLostError): void => {
    if (phase === 'lost') return;
    phase = 'lost';
    emit({ type: 'lease-lost', shardId, error });
    status.next({ kind: 'lost', error });
  };

  const onCommitted = (decision: CommitDecision): void => {
    state.committed(decision);
    renewDue = false;
    const checkpoint = checkpointPosition(decision.write.checkpoint);
    if (checkpoint !== undefined) stats?.checkpoint?.();
    emit({ type: 'checkpoint', shardId, checkpoint, finished: decision.write.finished });
    if (decision.write.finished && status.value.kind === 'open') status.next({ kind: 'finished' });
    written.next();
  };

  // One write: snapshotted at subscription, retried while transient and while not closing.
  const send = (operation: 'commit' | 'renew', request: () => Observable<void>, onSuccess: () => void): Observable<void> => defer(() => {
    writing.next(writing.value + 1);
    let sentAtMs = scheduler.now();
    return defer(() => {
      sentAtMs = scheduler.now();
      return phase === 'open' ? request() : EMPTY;
    }).pipe(
      retryTransient({ operation, shardId, scheduler, emit }),
      tap(() => {
        confirmedAtMs = Math.max(confirmedAtMs, sentAtMs);
        onSuccess();
        // After onSuccess: a reader waiting for the start to be stored looks again now.
        confirmed.next();
      }),
      catchError((error: unknown) => {
        if (error instanceof LeaseLostError) lose(error);
        return throwError(() => asKinsumerError(error, `${operation} of shard ${shardId} failed`));
      }),
      finalize(() => writing.next(writing.value - 1)),
    );
  });

  const write$ = defer(() => {
    if (phase !== 'open') return EMPTY;
    const decision = state.decide();
    if (decision.changed) return send('commit', () => store.commit(lease, decision.write), () => onCommitted(decision));
    if (renewDue) {
      return send('renew', () => store.renew(lease), () => {
        renewDue = false;
        written.next();
      });
    }
    return EMPTY;
  });

  const run$ = defer(() => {
    const current = status.value;
    if (current.kind === 'lost') return throwError(() => current.error);
    if (phase !== 'open') return EMPTY;
    // Acks from before the loop started still deserve their commit.
    const commits$ = triggers.pipe(
      state.decide().changed ? startWith(undefined) : identity,
      throttleTime(commitFrequencyMs, scheduler, { leading: true, trailing: true }),
    );
    const renewals$ = written.pipe(
      startWith(undefined),
      switchMap(() => interval(renewIntervalMs, scheduler)),
      tap(() => { renewDue = true; }),
    );
    // A loss found by any write, the release included, ends the loop with that LeaseLostError.
    const lost$ = status.pipe(mergeMap((s) => (s.kind === 'lost' ? throwError(() => s.error) : EMPTY)));
    // Records pending and the watermark stuck for stallWarningMs: a record that was never acked.
    const stalls$ = progress.pipe(
      startWith(undefined),
      switchMap(() => {
        if (state.pending === 0) return EMPTY;
        const sinceMs = scheduler.now();
        return interval(stallWarningMs, scheduler).pipe(tap(() => {
          const oldest = state.oldest;
          if (phase !== 'open' || oldest === undefined) return;
          emit({ type: 'shard-stalled', shardId, oldest: positionOf(oldest), pending: state.pending, sinceMs: scheduler.now() - sinceMs });
        }));
      }),
    );
    return merge(merge(commits$, renewals$).pipe(exhaustMapLatest(() => write$)), lost$, stalls$).pipe(ignoreElements(), takeUntil(ended));
  }).pipe(share());

  const release = async (): Promise<void> => {
    if (phase !== 'open') return;
    phase = 'closing';
    try {
      await firstValueFrom(writing.pipe(filter((count) => count === 0)));
      // The write that was in flight may have found the lease lost.
      if (phase !== 'closing') return;
      const decision = state.decide();
      await lastValueFrom(
        store.release(lease, decision.write).pipe(retryTransient({ operation: 'release', shardId, scheduler, emit, maxRetries: RELEASE_RETRIES })),
        { defaultValue: undefined },
      );
      state.committed(decision);
      phase = 'closed';
      const checkpoint = checkpointPosition(decision.write.checkpoint);
      if (checkpoint !== undefined) stats?.checkpoint?.();
      if (decision.write.finished && status.value.kind === 'open') status.next({ kind: 'finished' });
      emit({ type: 'lease-released', shardId, checkpoint, finished: status.value.kind === 'finished' });
    } catch (error) {
      if (error instanceof LeaseLostError) lose(error);
      else {
        phase = 'closed';
        emit({ type: 'error', shardId, error: asKinsumerError(error, `releasing shard ${shardId} failed`) });
      }
    } finally {
      if (status.value.kind === 'open') status.next({ kind: 'closed' });
      ended.next();
      ended.complete();
    }
  };

  return {
    shardId,
    run$,
    acks$: acks.asObservable(),
    track(position: Position, arrivedAt?: Date): () => void {
      const wasDirty = state.dirty;
      const record = state.track(position, arrivedAt);
      if (state.pending === 1) progress.next();
      // The first record narrowed a timestamp start: worth a commit even before its ack.
      if (!wasDirty && state.dirty) triggers.next();
      return () => {
        const pendingBefore = state.pending;
        if (!state.ack(record)) return;
        if (state.pending < pendingBefore) progress.next();
        acks.next();
        triggers.next();
      };
    },
    inFlight: () => state.inFlight,
    pending: () => state.pending,
    finish(last: Position | undefined): Observable<void> {
      return defer(() => {
        if (!state.finished && phase === 'open') {
          state.finish(last);
          triggers.next();
        }
        return status.pipe(
          first((s) => s.kind !== 'open'),
          mergeMap((s) => (s.kind === 'lost' ? throwError(() => s.error) : EMPTY)),
        );
      });
    },
    close(): Promise<void> {
      closing ??= release();
      return closing;
    },
    leaseConfirmed: () => state.startStored && scheduler.now() - confirmedAtMs < 2 * renewIntervalMs,
    confirmed$: confirmed.asObservable(),
    checkpoint: () => state.position,
    finishedWritten: () => state.finishedWritten || lease.finished,
  };
}

/**
 * Closes the checkpointer when the pipeline it is used in ends (completion, error or unsubscribe).
 * `finalize` cannot wait, so it starts the release and hands the promise to `register`; the
 * client's `stop()` awaits every registered promise.
 */
export function releaseOnFinalize<T>(checkpointer: Pick<Checkpointer, 'close'>, register: (done: Promise<void>) => void): MonoTypeOperatorFunction<T> {
  return (source) => source.pipe(finalize(() => register(checkpointer.close())));
}

function checkpointPosition(checkpoint: StoredCheckpoint | undefined): CheckpointPosition | undefined {
  return checkpoint?.type === 'position' ? positionOf(checkpoint.position) : undefined;
}

function positionOf({ sequenceNumber, subSequenceNumber }: Position): CheckpointPosition {
  return subSequenceNumber === undefined ? { sequenceNumber } : { sequenceNumber, subSequenceNumber };
}

function asKinsumerError(error: unknown, message: string): KinsumerError {
  return error instanceof KinsumerError ? error : new KinsumerError(message, { cause: error });
}
