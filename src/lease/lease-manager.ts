import {
  EMPTY, type Observable, type Subscription, Subject, catchError, concatMap, defer, filter, finalize, map, of, repeat, retry, take, tap, throwError, timer,
} from 'rxjs';
import { isTransient } from '../errors/aws-error-kind.js';
import { asError, stopsTheClient } from '../errors/fault-scope.js';
import { CorruptCheckpointError, LeaseLostError } from '../errors/kinsumer-errors.js';
import type { HeldLease } from '../ports/lease-store.js';
import { ByteBudget } from '../reading/byte-budget.js';
import { inheritedStart } from '../reading/start-position.js';
import type { ShardLease, ShardStatus } from '../types.js';
import { CaptureWaits } from './capture-waits.js';
import { LeaseSession, type SessionDeps } from './lease-session.js';

/** What the lease manager needs beyond a session's needs. */
export interface LeaseManagerDeps extends SessionDeps {
  /** Jitter source (tests make it deterministic). Default `Math.random`. */
  readonly random?: () => number;
  /** The client holding a shard, as the group's clients rows say (names the holder in `waiting` events). */
  readonly holderOf?: (shardId: string) => string | undefined;
}

interface Slot {
  readonly shardId: string;
  parentShardIds: readonly string[];
  wanted: boolean;
  capture: Subscription | undefined;
  session: LeaseSession | undefined;
  /** The message of the corrupt-row error last reported for this shard, while it stays corrupt. */
  corrupt: string | undefined;
  /** The shard's last lease or capture ended in a fault of its own: it is taken again at the shard-check pace. */
  faulted: boolean;
  /** Transient capture failures in a row (numbers the `retrying` events). */
  retries: number;
  /** Settles when the capture request in flight (if any) has its answer. */
  requesting: Promise<void> | undefined;
  /**
   * A write of this client may have left the row naming its life with no session behind it (a
   * capture whose answer never came, a release not written): a live life's lease is nobody
   * else's, so when the slot is dropped the row is read, and released if it is still this life's.
   */
  unsettled: boolean;
}

/**
 * Keeps this client's leases in line with what the assignment wants: a capture loop for each
 * wanted shard it does not hold, a graceful end (drain, final commit, release) for each shard it
 * holds and is no longer given — and nothing else moves. Shards that stay keep flowing.
 */
export class LeaseManager {
  private readonly slots = new Map<string, Slot>();
  private readonly captured = new Subject<ShardLease>();
  private readonly settled = new Subject<string>();
  private stopping = false;
  /** `false` while the client drains: it captures nothing, and gives up what it holds as it is told. */
  private taking = true;
  private readonly random: () => number;
  private readonly waits: CaptureWaits;
  /** The reads of rows being settled (see `drop`). */
  private readonly settling = new Set<Subscription>();
  // What every session gets: the deps, with the client's one byte budget (maxInFlightBytes) for all its leases.
  private readonly sessionDeps: LeaseManagerDeps;

  /** Each lease when captured (hot). */
  readonly captured$: Observable<ShardLease> = this.captured.asObservable();
  /** The shard of each lease once its end is settled (released, finished, lost or failed) and it is no longer held (hot). */
  readonly ended$: Observable<string> = this.settled.asObservable();

  constructor(private readonly deps: LeaseManagerDeps) {
    this.random = deps.random ?? Math.random;
    const { options, emit, holderOf } = deps;
    this.sessionDeps = { ...deps, bytes: deps.bytes ?? new ByteBudget(options.maxInFlightBytes) };
    this.waits = new CaptureWaits({
      scheduler: options.scheduler,
      elapsedNow: () => options.clock.elapsedNow(),
      leaseTtlMs: options.leaseTtlMs,
      // The first attempts of one round are spread over half a poll: one event for all of them.
      gatherMs: options.throttleDelayMs,
      emit,
      ...(holderOf === undefined ? {} : { holderOf }),
      held: () => this.held().length,
      logger: options.logger,
      stillWaitingAfterMs: options.shardCheckFrequencyMs + options.throttleDelayMs,
    });
  }

  /** Shards this client holds and is not giving up (what its heartbeat reports). */
  held(): string[] {
    return [...this.slots.values()].filter((s) => s.session !== undefined && s.wanted).map((s) => s.shardId).sort();
  }

  /** Shards wanted and not held yet (their capture is under way): what the client's row says it waits for. */
  wants(): string[] {
    return [...this.slots.values()].filter((s) => s.wanted && s.session === undefined && s.capture !== undefined).map((s) => s.shardId).sort();
  }

  /**
   * Captures nothing more (the client drains): every capture under way stops; what is held stays
   * until {@link want} gives it up. {@link resumeTaking} undoes it.
   */
  stopTaking(): void {
    if (!this.taking) return;
    this.taking = false;
    for (const slot of [...this.slots.values()]) {
      // A request in flight may take effect: its answer is awaited (the loop then ends by itself).
      if (slot.session !== undefined || slot.requesting !== undefined) continue;
      slot.capture?.unsubscribe();
      slot.capture = undefined;
      this.drop(slot);
    }
  }

  /** Captures again (a drain undone). */
  resumeTaking(): void {
    this.taking = true;
  }

  /**
   * The leases of `shardIds` (default: all held) were taken without a write of theirs telling them
   * (a reset revoked them, or the group ended this client's life): each ends as lost, writing nothing.
   */
  revoke(error: (shardId: string) => LeaseLostError, shardIds?: readonly string[]): void {
    for (const slot of this.slots.values()) {
      if (shardIds === undefined || shardIds.includes(slot.shardId)) slot.session?.revoke(error(slot.shardId));
    }
  }

  /** The leases held now, for late subscribers. */
  active(): ShardLease[] {
    return [...this.slots.values()].flatMap((s) => (s.session === undefined ? [] : [s.session.lease]));
  }

  /**
   * Makes `wanted` (shard id → parent ids) the set of shards this client reads; each lease given
   * up waits at most `drainMs` for its emitted records to be acked (default: the drain bound).
   */
  want(wanted: ReadonlyMap<string, readonly string[]>, drainMs?: number): void {
    if (this.stopping) return;
    for (const [shardId, parentShardIds] of wanted) {
      const slot = this.slots.get(shardId);
      if (slot === undefined) {
        if (!this.taking) continue;
        this.startCapture(this.slot(shardId, parentShardIds), this.firstDelayMs());
      } else {
        slot.parentShardIds = parentShardIds;
        slot.wanted = true;
        if (slot.session === undefined && slot.capture === undefined && this.taking) this.startCapture(slot, this.firstDelayMs());
      }
    }
    for (const slot of [...this.slots.values()]) {
      if (wanted.has(slot.shardId) || !slot.wanted) continue;
      slot.wanted = false;
      this.waits.ended(slot.shardId);
      if (slot.session !== undefined) {
        void slot.session.end(drainMs);
        continue;
      }
      // A request in flight may take effect: its answer is awaited (a lease it gives is released
      // at once, and the loop then ends by itself).
      if (slot.requesting !== undefined) continue;
      slot.capture?.unsubscribe();
      slot.capture = undefined;
      this.drop(slot);
    }
  }

  /**
   * Stops every capture loop and ends every session gracefully, each waiting at most `drainMs` for
   * its emitted records to be acked (default: the drain bound; 0: not at all); resolves when all are settled.
   */
  async stop(drainMs?: number): Promise<void> {
    this.stopping = true;
    this.waits.close();
    for (const settling of [...this.settling]) settling.unsubscribe();
    const endings: Promise<unknown>[] = [];
    for (const slot of this.slots.values()) {
      slot.wanted = false;
      if (slot.session !== undefined) {
        endings.push(slot.session.end(drainMs));
      } else if (slot.requesting !== undefined) {
        // Aborting a capture the store may already have applied would leave the lease owned by a
        // client that has left: wait for the answer, and release what it gave.
        endings.push(slot.requesting.then(() => {
          slot.capture?.unsubscribe();
          slot.capture = undefined;
          return slot.session?.end(drainMs);
        }));
        continue;
      }
      slot.capture?.unsubscribe();
      slot.capture = undefined;
    }
    await Promise.all(endings);
    this.captured.complete();
  }

  /** The leases held now (being released included), by shard id, as `status()` shows them. */
  statuses(): ShardStatus[] {
    return [...this.slots.values()].flatMap((s) => (s.session === undefined ? [] : [s.session.status()]))
      .sort((a, b) => (a.shardId < b.shardId ? -1 : a.shardId > b.shardId ? 1 : 0));
  }

  /** Shard ids still being released (for a timeout message). */
  pending(): string[] {
    return [...this.slots.values()].filter((s) => s.session !== undefined).map((s) => s.shardId).sort();
  }

  // The first attempt soon (a released shard is taken within one poll), but spread, so clients
  // that saw the same change do not hit the same rows in the same millisecond.
  private slot(shardId: string, parentShardIds: readonly string[]): Slot {
    const created: Slot = {
      shardId, parentShardIds, wanted: true, capture: undefined, session: undefined, corrupt: undefined, faulted: false, retries: 0, requesting: undefined, unsettled: false,
    };
    this.slots.set(shardId, created);
    return created;
  }

  /**
   * Forgets a slot that holds and captures nothing. One left unsettled is settled first: its row
   * read (after a poll's pause) and, if it still names this client and no slot took the shard up
   * again, released as it stands (checkpoint and acked records kept; conditioned on owner and
   * counter as read, so a capture in between wins). Nothing is captured, so a draining client
   * takes nothing. Not while stopping: the departure ends the life, and the lease then expires for
   * the others as a departed member's does.
   */
  private drop(slot: Slot): void {
    if (slot.session !== undefined || slot.capture !== undefined) return;
    this.waits.ended(slot.shardId);
    if (this.slots.get(slot.shardId) !== slot) return;
    this.slots.delete(slot.shardId);
    if (!slot.unsettled || this.stopping) return;
    const { store, options } = this.deps;
    const settling = timer(this.pollDelayMs(), options.scheduler).pipe(
      concatMap(() => store.read(slot.shardId)),
      concatMap((row) => {
        if (this.stopping || this.slots.has(slot.shardId) || row?.ownerId !== options.clientId) return EMPTY;
        const lease: HeldLease = {
          shardId: row.shardId, ownerId: row.ownerId, leaseCounter: row.leaseCounter, checkpoint: row.checkpoint, finished: row.finished,
          ...(row.ownerIncarnation === undefined ? {} : { ownerIncarnation: row.ownerIncarnation }),
        };
        return store.release(lease, { checkpoint: undefined, finished: false, ...(row.acked === undefined ? {} : { acked: row.acked }) }).pipe(
          catchError((error: unknown) => (error instanceof LeaseLostError ? EMPTY : throwError(() => error))),
        );
      }),
      retry({ delay: () => (this.stopping ? EMPTY : timer(options.shardCheckFrequencyMs, options.scheduler)) }),
      finalize(() => this.settling.delete(settling)),
    ).subscribe({ error: () => undefined });
    if (!settling.closed) this.settling.add(settling);
  }

  private firstDelayMs(): number {
    return Math.floor(this.random() * (this.deps.options.throttleDelayMs / 2));
  }

  private pollDelayMs(): number {
    return Math.floor(this.deps.options.throttleDelayMs * (0.75 + this.random() * 0.5));
  }

  // A shard whose row is corrupt, or whose last lease ended in a fault of its own, is looked at
  // again at the shard-check pace: soon after a repair, without a capture (and, for a rejected
  // sequence number, a GetShardIterator) every poll.
  private retryDelayMs(slot: Slot): number {
    return slot.corrupt === undefined && !slot.faulted ? this.pollDelayMs() : this.deps.options.shardCheckFrequencyMs;
  }

  private startCapture(slot: Slot, initialDelayMs: number): void {
    const { store, options, emit } = this.deps;
    const attempt$ = defer(() => {
      let answered!: () => void;
      slot.requesting = new Promise((resolve) => { answered = resolve; });
      return store.capture(slot.shardId).pipe(
        concatMap((lease) => (lease === undefined ? of(undefined) : this.withInheritedStart(lease, slot.parentShardIds))),
        finalize(() => {
          slot.requesting = undefined;
          answered();
        }),
      );
    }).pipe(
      tap((lease) => {
        slot.retries = 0;
        slot.unsettled = false;
        // Leased by another client whose lease has not expired for this one: a wait worth saying.
        if (lease === undefined && !this.stopping && slot.wanted) this.waits.refused(slot.shardId);
      }),
      catchError((error: unknown) => {
        const err = asError(error);
        // No answer, or a fault after the write perhaps: the row may name this life now.
        slot.unsettled = !(err instanceof CorruptCheckpointError);
        if (stopsTheClient(error)) {
          this.deps.fail(err, slot.shardId);
        } else if (err instanceof CorruptCheckpointError) {
          // A corrupt row stays corrupt until someone repairs it: report it once, not every poll.
          if (slot.corrupt !== err.message) emit({ type: 'error', error: err, shardId: slot.shardId });
          slot.corrupt = err.message;
        } else if (isTransient(error)) {
          // Throttling, a timeout: tried again at the next poll; other shards are unaffected.
          slot.retries += 1;
          emit({ type: 'retrying', operation: 'capture', attempt: slot.retries, delayMs: this.retryDelayMs(slot), error: err, shardId: slot.shardId });
        } else {
          // A fault of this shard's own: reported, tried again at the shard-check pace.
          slot.faulted = true;
          emit({ type: 'error', error: err, shardId: slot.shardId });
        }
        return of(undefined);
      }),
    );
    slot.capture = timer(initialDelayMs, options.scheduler).pipe(
      // A client that starts draining, or a shard no longer wanted, lets the request in flight answer, and tries no more.
      concatMap(() => attempt$.pipe(repeat({ delay: () => (this.taking && slot.wanted ? timer(this.retryDelayMs(slot), options.scheduler) : EMPTY) }))),
      filter((lease): lease is HeldLease => lease !== undefined),
      take(1),
    ).subscribe({
      complete: () => {
        if (slot.session !== undefined) return;
        slot.capture = undefined;
        this.drop(slot);
      },
      next: (lease) => {
        this.waits.ended(slot.shardId);
        slot.capture = undefined;
        slot.corrupt = undefined;
        slot.faulted = false;
        this.open(slot, lease);
      },
      error: (error: unknown) => this.deps.fail(asError(error)),
    });
  }

  // A child shard never read before starts where its parents' group started (see inheritedStart):
  // one read of the parents' rows, at its first capture only. In a TRIM_HORIZON group too: a parent
  // reset to LATEST or to a time stands for that time, and the child starts there, as export-kcl says.
  private withInheritedStart(lease: HeldLease, parentShardIds: readonly string[]): Observable<HeldLease> {
    if (lease.checkpoint !== undefined || parentShardIds.length === 0) return of(lease);
    return this.deps.store.readMany(parentShardIds).pipe(map((parents) => {
      const checkpoint = inheritedStart(parents);
      return checkpoint === undefined ? lease : { ...lease, checkpoint };
    }));
  }

  private open(slot: Slot, held: HeldLease): void {
    const { emit } = this.deps;
    const session = new LeaseSession(held, slot.parentShardIds, this.sessionDeps);
    slot.session = session;
    emit({ type: 'lease-acquired', shardId: slot.shardId, fencingToken: held.leaseCounter, startingPosition: session.lease.startingPosition });
    void session.done.then((end) => {
      if (slot.session === session) slot.session = undefined;
      if (end === 'unreleased' || end === 'failed') slot.unsettled = true;
      if (this.stopping || !this.taking || !slot.wanted || end === 'finished') {
        this.drop(slot);
        this.settled.next(slot.shardId);
        return;
      }
      this.settled.next(slot.shardId);
      // Lost or failed while still wanted: try again (capture fails until the lease is free or ours).
      if (session.readError instanceof CorruptCheckpointError) slot.corrupt = session.readError.message;
      else if (end === 'failed' || (session.readError !== undefined && !(session.readError instanceof LeaseLostError))) slot.faulted = true;
      this.startCapture(slot, this.retryDelayMs(slot));
    });
    if (!slot.wanted || this.stopping) {
      void session.end();
      return;
    }
    this.captured.next(session.lease);
  }
}
