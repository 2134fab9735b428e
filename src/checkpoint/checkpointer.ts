// One leased shard's checkpointer. Acks move the pure CheckpointState; every write of the lease —
// commit, renewal, release — goes through one lane, one at a time (write-lane.ts): a request goes
// at once when the lane is free, and the latest request that came meanwhile when it is free again. Commits are asked for at most every
// commitFrequencyMs, renewals after renewIntervalMs without a write (an idle shard keeps its
// lease, W2), the release once, by close(). A fenced write means another client took the lease:
// that shard stops with LeaseLostError, the consumer carries on.
import {
  BehaviorSubject, EMPTY, Subject, catchError, concat, defer, filter, first,
  identity, ignoreElements, interval, lastValueFrom, map, merge, mergeMap, Observable, share, startWith, switchMap, take, takeUntil,
  tap, throttleTime, throwError,
} from 'rxjs';
import { KinsumerError, LeaseLostError } from '../errors/kinsumer-errors.js';
import { retryTransient } from '../errors/retry-backoff.js';
import { schedulerClock } from '../ports/clock.js';
import type { StoredCheckpoint } from '../ports/lease-store.js';
import type { Position } from '../ports/position.js';
import type { CheckpointPosition } from '../types.js';
import { type Checkpointer, type CheckpointerOptions, LEASE_KEEPALIVE_MS } from './checkpointer-api.js';
import { CheckpointState, type CommitDecision } from './checkpoint-state.js';
import { DeliveryLedger } from './delivery-ledger.js';
import { deliveryRecording } from './delivery-recording.js';
import { EffectsLane } from './effects-lane.js';
import { DEFAULT_STALL_WARNING_MS, StallClock } from './stall-clock.js';
import { weighWrites } from './transact-writes.js';
import { oneWriteAtATime } from './write-lane.js';

export { type Checkpointer, type CheckpointerOptions, LEASE_KEEPALIVE_MS } from './checkpointer-api.js';

/** Transient failures of the final release retried before close() gives up (the lease then expires on its own). */
const RELEASE_RETRIES = 5;

/** Where the lease stands: the one state machine of the lane, close() and finish(). */
type Phase =
  /** Holding the lease: commits and renewals go out. */
  | { readonly kind: 'open' }
  /** close() was called: no more commits or renewals, the release is the last write. */
  | { readonly kind: 'closing' }
  /** Released, or the release failed for good (reported; the lease then expires on its own). */
  | { readonly kind: 'closed' }
  /** A write was fenced: another client holds the lease. */
  | { readonly kind: 'lost'; readonly error: LeaseLostError }
  /** A write failed for good (access denied, a missing table). */
  | { readonly kind: 'failed'; readonly error: KinsumerError };

/** What goes through the lane. `write`: a commit if something changed, else a renewal if one is due. */
type Request = 'write' | 'release';

/** Creates the checkpointer of a freshly captured lease. */
export function createCheckpointer(options: CheckpointerOptions): Checkpointer {
  const { store, lease, scheduler, emit, stats, commitFrequencyMs, renewIntervalMs, liveness, stallWarningMs = DEFAULT_STALL_WARNING_MS } = options;
  if (!(commitFrequencyMs >= 0)) throw new RangeError('commitFrequencyMs must be >= 0');
  if (!(renewIntervalMs > 0)) throw new RangeError('renewIntervalMs must be > 0');
  if (!(stallWarningMs > 0)) throw new RangeError('stallWarningMs must be > 0');
  const { shardId } = lease;
  const clock = options.clock ?? schedulerClock(scheduler);
  // The delivery count (§9.3): what the row says of earlier deliveries, and what this lease records of its own.
  const ledger = new DeliveryLedger(lease.deliveries, lease.checkpoint);
  const state = new CheckpointState(lease.checkpoint, { start: options.start, finished: lease.finished, acked: lease.acked, ledger });
  const phase = new BehaviorSubject<Phase>({ kind: 'open' });
  // Each ack that changed something, for whoever waits on acks$ (a reader out of room, a drain).
  // Passed on only while someone listens: a Subject's next() makes garbage, at an ack's rate.
  const acks = new Subject<void>();
  // Asks the lane for a commit: after acks, or finish(), or a first record narrowing the kept start.
  const commitWanted = new Subject<void>();
  // An ack asked for a commit the lane has not decided yet: later acks are in that decision (it
  // snapshots the state when it is made), so they need not ask again until it is made.
  let commitAsked = false;
  const wantCommit = (): void => {
    if (!commitAsked) {
      commitAsked = true;
      commitWanted.next();
    }
  };
  const acked = (): void => {
    wantCommit();
    if (acks.observed) acks.next();
    recordIfOwed();
  };
  // Each write that confirmed the lease: restarts the renewal clock, wakes a reader held back by leaseConfirmed().
  const confirmed = new Subject<void>();
  // The watermark moved with records still pending, or records became pending: restarts the stall clock.
  const progress = new StallClock(scheduler, () => clock.elapsedNow());
  // When the last write that confirmed the lease was sent (its LastUpdate is no earlier); the
  // capture has just confirmed it. Renewals come every renewIntervalMs (a third of the TTL): two
  // intervals without a confirmation leave the lease a third of its TTL from being takeable.
  let confirmedAtMs = clock.elapsedNow();
  let renewDue = false;
  // What the row holds as a position, and when this lease wrote one (status()).
  let stored: { checkpoint: CheckpointPosition | undefined; atMs: number | undefined } = {
    checkpoint: checkpointPosition(lease.checkpoint), atMs: undefined,
  };
  const wrote = (checkpoint: CheckpointPosition | undefined): void => {
    if (checkpoint === undefined) return;
    stored = { checkpoint, atMs: clock.wallNow() };
    stats?.checkpoint?.();
  };
  let closing: Promise<void> | undefined;
  let released = false;
  // Asks the lane for a turn at once (not throttled): records whose writes wait are committed as
  // soon as the lane is free, so each transaction takes what was acked while the last one was out.
  const laneWanted = new Subject<void>();
  // A handler waits for its record's delivery to be recorded (§9.3): see delivery-recording.ts.
  const { recordIfOwed, recording$ } = deliveryRecording({
    ledger, scheduler, next: () => state.next(), open: () => phase.value.kind === 'open', writeNow: () => laneWanted.next(), commitSoon: wantCommit,
  });
  const effects = new EffectsLane({
    store, lease, state, scheduler, clock, emit,
    committed: (decision, sentAtMs) => {
      confirmedAtMs = Math.max(confirmedAtMs, sentAtMs);
      renewDue = false;
      committed(decision);
      // The watermark went beyond what the transaction wrote (records skipped meanwhile): a commit is owed.
      if (state.dirty) wantCommit();
      recordIfOwed();
      if (state.pending > 0) progress.progressed();
      if (acks.observed) acks.next();
      confirmed.next();
    },
    wake: () => laneWanted.next(),
  });

  // Writes still waiting when the lease is over are not applied: their records go to the next owner.
  phase.subscribe((p) => {
    if (p.kind !== 'open') ledger.release();
    if (p.kind === 'lost' || p.kind === 'failed') effects.abandon(p.error);
    else if (p.kind === 'closed') effects.abandon(new KinsumerError(`the lease on ${shardId} was given up before these writes were committed`));
  });

  const lose = (error: LeaseLostError): LeaseLostError => {
    if (phase.value.kind !== 'lost') {
      emit({ type: 'lease-lost', shardId, error });
      phase.next({ kind: 'lost', error });
    }
    return error;
  };

  const fail = (error: unknown, message: string): KinsumerError => {
    const failure = asKinsumerError(error, message);
    phase.next({ kind: 'failed', error: failure });
    return failure;
  };

  // A commit or a renewal, retried while transient; a retry after close() sends nothing (the
  // release that follows writes the latest position anyway).
  const confirm = (operation: 'commit' | 'renew', request: () => Observable<void>, onWritten: () => void): Observable<never> => defer(() => {
    let sentAtMs = clock.elapsedNow();
    return defer(() => {
      if (phase.value.kind !== 'open') return EMPTY;
      sentAtMs = clock.elapsedNow();
      return request();
    }).pipe(
      retryTransient({ operation, shardId, scheduler, emit }),
      tap(() => {
        confirmedAtMs = Math.max(confirmedAtMs, sentAtMs);
        renewDue = false;
        onWritten();
        // After onWritten: a reader waiting for the kept start to be stored looks again now.
        confirmed.next();
      }),
      ignoreElements(),
      catchError((error: unknown) => throwError(() => (error instanceof LeaseLostError ? lose(error) : fail(error, `${operation} of shard ${shardId} failed`)))),
    );
  });

  const committed = (decision: CommitDecision): void => {
    state.committed(decision);
    recordIfOwed();
    const checkpoint = checkpointPosition(decision.write.checkpoint);
    wrote(checkpoint);
    // A commit that only stored the kept start is, for the application, a renewal.
    if (checkpoint !== undefined || decision.write.finished) emit({ type: 'checkpoint', shardId, checkpoint, finished: decision.write.finished });
  };

  const release = (): Observable<never> => defer(() => {
    const decision = state.decide();
    return store.release(lease, decision.write).pipe(
      retryTransient({ operation: 'release', shardId, scheduler, emit, maxRetries: RELEASE_RETRIES }),
      ignoreElements(),
      tap({
        complete: () => {
          state.committed(decision);
          const checkpoint = checkpointPosition(decision.write.checkpoint);
          wrote(checkpoint);
          emit({ type: 'lease-released', shardId, checkpoint, finished: state.finishedWritten });
          released = true;
          phase.next({ kind: 'closed' });
        },
      }),
      catchError((error: unknown) => {
        if (error instanceof LeaseLostError) return throwError(() => lose(error));
        emit({ type: 'error', shardId, error: asKinsumerError(error, `releasing shard ${shardId} failed`) });
        phase.next({ kind: 'closed' });
        return EMPTY;
      }),
    );
  });

  // The write a request stands for, decided when the lane gets to it (so it carries the latest state).
  const transaction = catchError<never, Observable<never>>((error: unknown) => throwError(() => (error instanceof LeaseLostError ? lose(error) : fail(error, `transaction of shard ${shardId} failed`))));
  const write = (request: Request): Observable<never> => defer(() => {
    if (request === 'release') return phase.value.kind === 'closing' ? concat(effects.settleUnknown().pipe(transaction), release()) : EMPTY;
    if (phase.value.kind !== 'open') return EMPTY;
    const failure = effects.failure;
    if (failure !== undefined) return throwError(() => fail(failure, `writes of shard ${shardId} failed`));
    const turn = effects.turn();
    if (turn !== undefined) {
      return turn.pipe(
        // A commit asked for meanwhile (acks without writes) gets a turn of its own next.
        tap({ complete: () => { if (commitAsked) laneWanted.next(); } }),
        transaction,
      );
    }
    commitAsked = false;
    const decision = state.decide();
    if (decision.changed) return confirm('commit', () => store.commit(lease, decision.write), () => committed(decision));
    if (renewDue) return confirm('renew', () => store.renew(lease), () => undefined);
    return EMPTY;
  });

  // Records pending and the watermark stuck for stallWarningMs: a record that was never acked.
  // One timer, re-armed as it fires (never per record): at the end of the stretch without
  // progress, or a stallWarningMs on when nothing is pending.
  const stalls$ = new Observable<never>(() => {
    let action = scheduler.schedule(check, Math.max(0, progress.sinceMs + stallWarningMs - clock.elapsedNow()));
    function check(): void {
      const now = clock.elapsedNow();
      const sinceMs = progress.sinceMs;
      const oldest = state.oldest;
      let dueMs = now + stallWarningMs;
      if (oldest !== undefined && now - sinceMs < stallWarningMs) dueMs = sinceMs + stallWarningMs;
      else if (oldest !== undefined) emit({ type: 'shard-stalled', shardId, oldest: positionOf(oldest), pending: state.pending, sinceMs: now - sinceMs });
      action = scheduler.schedule(check, dueMs - now);
    }
    return () => action.unsubscribe();
  });

  const run$ = defer(() => {
    const current = phase.value;
    if (current.kind === 'lost' || current.kind === 'failed') return throwError(() => current.error);
    if (current.kind === 'closed') return EMPTY;
    // A request asked of a lane that no longer runs was never decided: this lane decides afresh.
    commitAsked = false;
    const closing$ = phase.pipe(filter((p) => p.kind !== 'open'), take(1));
    // Acks from before the lane started, and a kept start, still deserve their commit.
    const commits$ = commitWanted.pipe(
      state.decide().changed ? startWith(undefined) : identity,
      throttleTime(commitFrequencyMs, scheduler, { leading: true, trailing: true }),
    );
    // Its own row every renewal interval while that is what keeps it (or while a member judges
    // leases by their rows), else a keep-alive; re-timed when the rule changes.
    const renewals$ = merge(confirmed, liveness?.perLeaseRenewalChanged$ ?? EMPTY).pipe(
      startWith(undefined),
      switchMap(() => interval(liveness === undefined || liveness.perLeaseRenewal() ? renewIntervalMs : Math.max(renewIntervalMs, LEASE_KEEPALIVE_MS), scheduler)),
      tap(() => { renewDue = true; }),
    );
    const revoked$ = phase.pipe(
      filter((p): p is Extract<Phase, { kind: 'lost' }> => p.kind === 'lost'),
      take(1),
      mergeMap((p) => throwError(() => p.error)),
    );
    const requests$ = merge(
      merge(commits$, renewals$, laneWanted.pipe(effects.waiting ? startWith(undefined) : identity)).pipe(map((): Request => 'write'), takeUntil(closing$)),
      phase.pipe(filter((p) => p.kind === 'closing'), map((): Request => 'release')),
    );
    // One write at a time; a request that comes while one is in flight waits for it (the latest only).
    const lane$ = oneWriteAtATime(requests$, write);
    return merge(lane$, stalls$.pipe(takeUntil(closing$)), revoked$).pipe(
      ignoreElements(),
      takeUntil(phase.pipe(filter((p) => p.kind === 'closed'))),
    );
  }).pipe(share());

  return {
    shardId,
    fencingToken: lease.leaseCounter,
    run$,
    acks$: acks.asObservable(),
    narrowStart(first: Position, arrivedAt: Date): void {
      // Stored before the first record is emitted (startStored gates the reader), so it is worth a write at once.
      if (state.narrowStart(first, arrivedAt)) commitWanted.next();
    },
    streamStart(streamTime: Date): void {
      if (state.raiseStart(streamTime)) commitWanted.next();
    },
    track(record: Position & { readonly approximateArrivalTimestamp?: Date }): number {
      const wasDirty = state.dirty;
      const ticket = state.track(record);
      ledger.track(ticket, record);
      if (state.pending === 1) progress.progressed();
      // The first record narrowed a kept start: worth storing before any ack.
      if (!wasDirty && state.dirty) commitWanted.next();
      return ticket;
    },
    ack(ticket: number): void {
      const pendingBefore = state.pending;
      if (!state.ack(ticket)) return;
      if (state.pending < pendingBefore && state.pending > 0) progress.progressed();
      acked();
    },
    ackWithWrites(tickets, recordIds, writes, settle): void {
      if (phase.value.kind === 'open') {
        effects.add(tickets, recordIds, writes, settle);
        return;
      }
      // The lease ended: nothing is applied, the next owner delivers the records again.
      weighWrites(writes, recordIds[0] ?? '(unknown)');
      settle?.({ kind: 'abandoned', error: new KinsumerError(`the lease on ${shardId} ended before the writes of ${recordIds.join(', ')} were committed`) });
    },
    skip(position: Position): boolean {
      const pendingBefore = state.pending;
      if (!state.skip(position)) return false;
      // At the watermark it moved it: as an ack does, that frees room and asks for a commit.
      if (state.pending <= pendingBefore) {
        if (state.pending > 0) progress.progressed();
        acked();
      }
      return true;
    },
    inFlight: () => state.inFlight,
    pending: () => state.pending,
    finish(last: Position | undefined): Observable<void> {
      return defer(() => {
        if (!state.finished && phase.value.kind === 'open') {
          state.finish(last);
          commitWanted.next();
        }
        // Done once Finished is stored or the lease is given up; a loss or a failure first is an error.
        return merge(phase, confirmed).pipe(
          map(() => phase.value),
          first((p) => state.finishedWritten || (p.kind !== 'open' && p.kind !== 'closing')),
          mergeMap((p) => ((p.kind === 'lost' || p.kind === 'failed') && !state.finishedWritten ? throwError(() => p.error) : EMPTY)),
        );
      });
    },
    close(): Promise<void> {
      closing ??= (async () => {
        if (phase.value.kind !== 'open') return;
        phase.next({ kind: 'closing' });
        // The lane (started here when nobody runs it) ends with the release; a loss it finds is an event.
        await lastValueFrom(run$, { defaultValue: undefined }).catch(() => undefined);
      })();
      return closing;
    },
    leaseConfirmed: () => {
      if (!state.startStored) return false;
      const nowMs = clock.elapsedNow();
      if (liveness === undefined) return nowMs - confirmedAtMs < 2 * renewIntervalMs;
      // The client's heartbeat keeps the lease; its own renewals too while members judge it by its row.
      const clientAtMs = liveness.confirmedAtMs();
      if (clientAtMs === undefined || nowMs - clientAtMs >= 2 * renewIntervalMs) return false;
      return !liveness.perLeaseRenewal() || nowMs - confirmedAtMs < 2 * renewIntervalMs;
    },
    confirmed$: liveness === undefined ? confirmed.asObservable() : merge(confirmed, liveness.confirmed$),
    revoke(error: LeaseLostError): void {
      if (phase.value.kind === 'open' || phase.value.kind === 'closing') lose(error);
    },
    checkpoint: () => state.position,
    finishedWritten: () => state.finishedWritten,
    releaseWritten: () => released,
    stored: () => stored,
    deliveryCount: (ticket) => ledger.count(ticket),
    paced: (ticket) => ledger.paced(ticket),
    recording$,
  };
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
