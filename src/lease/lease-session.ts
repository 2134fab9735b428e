import {
  type Observable, EMPTY, NEVER, Subject, defer, filter, firstValueFrom, merge, race, share, startWith, switchMap, take, takeUntil,
  throwError, timer, catchError, ignoreElements, finalize,
} from 'rxjs';
import { createCheckpointer, type Checkpointer } from '../checkpoint/checkpointer.js';
import { ShardTally } from '../checkpoint/shard-tally.js';
import { asError, stopsTheClient } from '../errors/fault-scope.js';
import { DataLostError, KinsumerError, LeaseLostError } from '../errors/kinsumer-errors.js';
import type { ResolvedOptions } from '../options.js';
import type { HeldLease, LeaseStore } from '../ports/lease-store.js';
import type { ClientLiveness } from '../ports/liveness.js';
import { DATE_HEADER_RESOLUTION_MS } from '../ports/server-date.js';
import type { ShardTracker } from '../ports/shard-tracker.js';
import type { StreamPort } from '../ports/stream.js';
import type { ByteBudget } from '../reading/byte-budget.js';
import { Multicast } from '../reading/multicast.js';
import { readerFor } from '../reading/read-mode.js';
import { planStart, startToKeep } from '../reading/start-position.js';
import { linkLease } from '../telemetry/lease-link.js';
import { nameLeaseStream } from '../reading/delivered-record.js';
import { streamOfShard } from '../telemetry/names.js';
import type { KinsumerEvent, KinsumerRecord, ShardLease, ShardStatus, StartingPosition } from '../types.js';

/** What a session needs from the client that captured the lease. */
export interface SessionDeps {
  readonly store: LeaseStore;
  readonly stream: StreamPort;
  readonly options: ResolvedOptions;
  readonly emit: (event: KinsumerEvent) => void;
  /** A fault of the whole group (access denied, a missing table) met on this lease: the client must stop. */
  readonly fail: (error: Error, shardId?: string) => void;
  /** The client's `pause()` / `resume()`. Absent: never paused. */
  readonly reading?: ReadingSwitch;
  /**
   * `true` while nobody is subscribed to the client's `records$` or `leases$`: the drain then ends
   * once no ack has come for `commitFrequencyMs`. Absent: always watched.
   */
  readonly unwatched$?: Observable<boolean>;
  /** The client's running totals of a shard (records delivered, acked). Absent: counted for nobody. */
  readonly tally?: (shardId: string) => ShardTally;
  /** The client's heartbeat, which keeps its leases alive (see `CheckpointerOptions.liveness`). Absent: each lease by its own writes. */
  readonly liveness?: ClientLiveness;
  /** The client's byte budget (`maxInFlightBytes`), shared by its leases. Absent: bounded by count only. */
  readonly bytes?: ByteBudget;
}

/** Whether the client reads (`pause()` / `resume()`): what every lease's reader waits on. */
export interface ReadingSwitch {
  /** `true` between `pause()` and `resume()`. */
  paused(): boolean;
  /** Emits at each `resume()`. */
  readonly resumed$: Observable<void>;
}

/**
 * How long a lease being given up waits for its emitted records to be acked: three quarters of
 * the shorter of the shutdown bound and the lease TTL, which leaves the last quarter for the final
 * commit and the release (so a slow handler does not turn a graceful stop into a timeout) and
 * keeps a handoff within one lease TTL.
 */
export function drainBoundMs(options: Pick<ResolvedOptions, 'shutdownTimeoutMs' | 'leaseTtlMs'>): number {
  return Math.floor(0.75 * Math.min(options.shutdownTimeoutMs, options.leaseTtlMs));
}

/**
 * How a session ended. `unreleased`: given up, but the release could not be written — the row may
 * still name this client's life, and (a live life's lease being nobody else's) only it can free it.
 */
export type SessionEnd = 'released' | 'finished' | 'unreleased' | 'lost' | 'failed';

/**
 * One captured lease, from capture to release: the checkpointer renews and commits from the
 * start (even before anyone reads), the reader runs while `records$` is subscribed, and the end
 * — given up, stopped, fully consumed, lost — always goes through drain → final commit → release
 * unless the lease was lost.
 */
export class LeaseSession {
  readonly lease: ShardLease;
  /** Resolves with how the session ended, after the release (or the loss) is settled. Never rejects. */
  readonly done: Promise<SessionEnd>;

  private readonly checkpointer: Checkpointer;
  private readonly stopReading = new Subject<void>();
  private readonly lost = new Subject<never>();
  // Aborted when the lease is lost, or given up after the drain: the processing operators stop
  // calling handlers for this lease's records then (the next owner gets them again).
  private readonly leaseEnd = new AbortController();
  private readerStarted = false;
  private ending: Promise<SessionEnd> | undefined;
  private resolveDone!: (end: SessionEnd) => void;
  private lostError: Error | undefined;
  // status() figures the reader reports.
  private millisBehindLatest: number | undefined;
  private lastRecordAtMs: number | undefined;
  // The metrics' totals of this shard; this lease's unacked records count in them while it lasts.
  private readonly tally: ShardTally;
  private readonly inFlight = (): number => this.checkpointer.inFlight();
  /** Why reading ended early, if it failed (the lease manager paces its next capture by it). */
  readError: Error | undefined;

  constructor(held: HeldLease, parentShardIds: readonly string[], private readonly deps: SessionDeps) {
    const { options, emit } = deps;
    this.done = new Promise((resolve) => { this.resolveDone = resolve; });
    const plan = planStart(held.checkpoint, options.initialPosition);
    // Taken now, before the reader asks for its first iterator: a LATEST start is kept as a time
    // no later than that request, so a hand-off before the first ack skips nothing.
    // On the store's clock at the capture where it tells it (the next owner must never get a start
    // from this client's clock: a crash before the iterator's answer is stored hands it on).
    const start = held.capturedAt === undefined
      ? startToKeep(plan.iteratorStart, options.clock.wallNow(), plan.skipThrough, plan.notBefore)
      : startToKeep(plan.iteratorStart, held.capturedAt.getTime(), plan.skipThrough, plan.notBefore, DATE_HEADER_RESOLUTION_MS);
    this.checkpointer = createCheckpointer({
      store: deps.store,
      lease: held,
      ...(start === undefined ? {} : { start }),
      commitFrequencyMs: options.commitFrequencyMs,
      renewIntervalMs: Math.max(1, Math.floor(options.leaseTtlMs / 3)),
      stallWarningMs: options.stallWarningMs,
      ...(deps.liveness === undefined ? {} : { liveness: deps.liveness }),
      scheduler: options.scheduler,
      clock: options.clock,
      emit,
      stats: options.stats,
    });
    const startingPosition: StartingPosition = plan.startingPosition;
    this.tally = deps.tally?.(held.shardId) ?? new ShardTally();
    this.tally.attach(this.inFlight);
    const streamName = streamOfShard(options, held.shardId);
    linkLease(this.leaseEnd.signal, { stream: streamName, tracerProvider: options.tracerProvider });
    nameLeaseStream(this.leaseEnd.signal, streamName);

    // Renewal must not wait for a reader: an idle or not-yet-read lease stays ours.
    this.checkpointer.run$.subscribe({
      error: (error: unknown) => {
        this.lostError = asError(error);
        // A loss is reported by the checkpointer (lease-lost); a failed write is reported here.
        if (!(error instanceof LeaseLostError)) this.report(this.lostError);
        this.leaseEnd.abort(this.lostError);
        this.lost.error(this.lostError);
        this.stopReading.next();
        this.settle(error instanceof LeaseLostError ? 'lost' : 'failed');
      },
    });

    const records$ = defer((): Observable<KinsumerRecord> => {
      if (this.lostError !== undefined) return throwError(() => this.lostError);
      if (this.ending !== undefined || this.readerStarted) return EMPTY;
      this.readerStarted = true;
      return readerFor(options, deps.stream)({
        shardId: held.shardId,
        stream: deps.stream,
        tracker: this.readerTracker(),
        start: plan.iteratorStart,
        ...(plan.skipThrough === undefined ? {} : { skipThrough: plan.skipThrough }),
        throttleDelayMs: options.throttleDelayMs,
        maxInFlightRecords: options.maxInFlightRecords,
        scheduler: options.scheduler,
        clock: options.clock,
        emit,
        stats: options.stats,
        onFetch: ({ millisBehindLatest }) => { this.millisBehindLatest = millisBehindLatest; },
        // Once per run of records emitted, not per record: no clock read per record.
        onDelivered: () => { this.lastRecordAtMs = options.clock.wallNow(); },
        leaseSignal: this.leaseEnd.signal,
        tally: this.tally,
        ...(deps.bytes === undefined ? {} : { bytes: deps.bytes }),
        onDataLoss: options.onDataLoss,
      }).pipe(
        takeUntil(this.stopReading),
        // `lost` only ever errors: takeUntil passes that error on, and, unlike merge, lets the
        // shard's records$ complete when reading ends (given up, stopped, fully consumed).
        takeUntil(this.lost),
        catchError((error: unknown) => {
          const err = asError(error);
          this.readError = err;
          // The checkpointer's own failure ends reading too, and was reported when it happened; a
          // data loss was, by its own event.
          if (!(err instanceof LeaseLostError) && !(err instanceof DataLostError) && err !== this.lostError) this.report(err);
          return throwError(() => err);
        }),
        // A shard stopped on data loss keeps its lease, unread and renewed (not captured again at
        // every check, its checkpoint as it is) until the client gives it up, or a reset revokes it.
        finalize(() => { if (!(this.readError instanceof DataLostError)) void this.end(); }),
      );
    }).pipe(share({ connector: () => new Multicast<KinsumerRecord>(), resetOnError: false, resetOnComplete: false, resetOnRefCountZero: false }));

    this.lease = {
      shardId: held.shardId,
      streamName,
      parentShardIds,
      startingPosition,
      fencingToken: held.leaseCounter,
      records$,
    };

    // A Finished row has nothing left to read (a reset keeps Finished): given up at once, so a
    // client that captures it, e.g. again after a reset fenced it, never reads it from the start.
    if (held.finished) void this.end(0);
  }

  /** The lease was taken without a write of its telling it (a reset, the end of the client's life): it ends as lost. */
  revoke(error: LeaseLostError): void {
    this.checkpointer.revoke(error);
  }

  /** This lease as `status()` shows it. */
  status(): ShardStatus {
    const { checkpoint, atMs } = this.checkpointer.stored();
    return {
      shardId: this.lease.shardId,
      streamName: this.lease.streamName,
      fencingToken: this.lease.fencingToken,
      checkpoint,
      inFlight: this.checkpointer.inFlight(),
      pending: this.checkpointer.pending(),
      millisBehindLatest: this.millisBehindLatest,
      ...(this.lastRecordAtMs === undefined ? {} : { lastRecordAt: new Date(this.lastRecordAtMs) }),
      ...(atMs === undefined ? {} : { lastCheckpointAt: new Date(atMs) }),
      ...(this.readError instanceof DataLostError ? { stopped: 'data-lost' as const } : {}),
    };
  }

  // The checkpointer as the reader sees it; a paused client's reader waits as for an unconfirmed
  // lease (no fetch, no emission) and looks again at resume(). Renewals go on: the lease stays ours.
  private readerTracker(): ShardTracker {
    const { checkpointer } = this;
    const { reading } = this.deps;
    if (reading === undefined) return checkpointer;
    return {
      fencingToken: checkpointer.fencingToken,
      track: (record) => checkpointer.track(record),
      ack: (ticket) => checkpointer.ack(ticket),
      ackWithWrites: (tickets, recordIds, writes, settle) => { checkpointer.ackWithWrites?.(tickets, recordIds, writes, settle); },
      skip: (position) => checkpointer.skip?.(position) ?? false,
      deliveryCount: (ticket) => checkpointer.deliveryCount(ticket),
      recording$: (ticket) => checkpointer.recording$(ticket),
      paced: (ticket) => checkpointer.paced(ticket),
      narrowStart: (first, arrivedAt) => { checkpointer.narrowStart?.(first, arrivedAt); },
      streamStart: (streamTime) => { checkpointer.streamStart?.(streamTime); },
      inFlight: () => checkpointer.inFlight(),
      pending: () => checkpointer.pending(),
      acks$: checkpointer.acks$,
      finish: (last) => checkpointer.finish(last),
      leaseConfirmed: () => !reading.paused() && checkpointer.leaseConfirmed?.() !== false,
      confirmed$: merge(checkpointer.confirmed$ ?? EMPTY, reading.resumed$),
    };
  }

  /**
   * Gives the lease up gracefully: stop reading, wait (at most `drainMs`; not at all for 0) for the
   * records already emitted to be acked, write the final checkpoint and release. Idempotent.
   */
  end(drainMs = drainBoundMs(this.deps.options)): Promise<SessionEnd> {
    if (this.ending !== undefined) return this.ending;
    // Set before the drain starts: stopping the reader ends records$, whose finalize calls end()
    // again, synchronously — that call must find this one, not start a second drain.
    let begin!: (drained: Promise<SessionEnd>) => void;
    this.ending = new Promise<SessionEnd>((resolve) => { begin = resolve; });
    begin(this.drainAndRelease(drainMs));
    return this.ending;
  }

  private async drainAndRelease(drainMs: number): Promise<SessionEnd> {
    this.stopReading.next();
    if (this.lostError !== undefined) return this.done;
    const checkpointer = this.checkpointer;
    if (drainMs > 0) {
      const { clock } = this.deps.options;
      const sinceMs = clock.elapsedNow();
      await this.drain(drainMs);
      const unacked = checkpointer.inFlight();
      if (this.lostError === undefined && unacked > 0) {
        this.deps.emit({ type: 'drain-gave-up', shardId: this.lease.shardId, unacked, waitedMs: clock.elapsedNow() - sinceMs });
      }
    }
    if (this.lostError !== undefined) return this.done;
    // After the drain: in-flight work had its chance to finish and ack; what is left goes to the next owner.
    this.leaseEnd.abort(new KinsumerError(`lease on ${this.lease.shardId} given up`));
    // close() never rejects: a failed release is reported as an event (the manager settles the row).
    await checkpointer.close();
    if (this.lostError === undefined) this.settle(!checkpointer.releaseWritten() ? 'unreleased' : checkpointer.finishedWritten() ? 'finished' : 'released');
    return this.done;
  }

  // Until every emitted record is acked, `drainMs` runs out, or the lease is lost — or, once nobody
  // is subscribed any more, until no ack has come for commitFrequencyMs: a pipeline that ended
  // (most often by an error) acks only what its handlers still had in flight, and a stop must not
  // sit out the whole bound for records nobody can ack.
  private async drain(drainMs: number): Promise<void> {
    const { checkpointer } = this;
    const { scheduler, commitFrequencyMs } = this.deps.options;
    const acked$ = checkpointer.acks$.pipe(startWith(undefined), filter(() => checkpointer.inFlight() === 0));
    const quiet$ = (this.deps.unwatched$ ?? NEVER).pipe(
      switchMap((unwatched) => (unwatched ? checkpointer.acks$.pipe(startWith(undefined), switchMap(() => timer(commitFrequencyMs, scheduler))) : NEVER)),
    );
    await firstValueFrom(race(acked$, quiet$, timer(drainMs, scheduler)).pipe(
      take(1),
      takeUntil(this.lost.pipe(ignoreElements(), catchError(() => [undefined]))),
    ), { defaultValue: undefined });
  }

  /**
   * A fault of this lease: a shard's own (an unknown AWS error, a malformed record) is an `error`
   * event naming the shard, which is then taken again later; a fault of the whole group stops the client.
   */
  private report(error: Error): void {
    const { shardId } = this.lease;
    if (stopsTheClient(error)) this.deps.fail(error, shardId);
    else this.deps.emit({ type: 'error', error, shardId });
  }

  private settle(end: SessionEnd): void {
    this.tally.detach(this.inFlight);
    this.resolveDone(end);
  }
}
