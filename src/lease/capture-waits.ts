// Says when a capture has to wait for another client's lease (a hand-off, or a holder that ended
// without stop()): which shards, who holds them, and how long at most — once per wait, not per
// capture poll. The refusals of one poll round (captures are spread over half a poll) make one event.
import { type SchedulerLike, type Subscription, timer } from 'rxjs';
import { logStillWaiting } from '../telemetry/event-log.js';
import type { KinsumerEvent, Logger } from '../types.js';

/** What the waits need from the lease manager. */
export interface CaptureWaitsDeps {
  readonly scheduler: SchedulerLike;
  /** Monotonic milliseconds (the client's `clock.elapsedNow`): how long a wait has lasted is a difference of it. */
  readonly elapsedNow: () => number;
  readonly leaseTtlMs: number;
  /** How long the refusals of one round are gathered before they are reported. */
  readonly gatherMs: number;
  readonly emit: (event: KinsumerEvent) => void;
  /** The client holding a shard, as the group's clients rows say; `undefined` when none says. */
  readonly holderOf?: (shardId: string) => string | undefined;
  /** Leases this client holds now. */
  readonly held: () => number;
  /** Where a wait that outlives {@link CaptureWaitsDeps.stillWaitingAfterMs} is told, as a warning. */
  readonly logger: Logger;
  /**
   * How long after it was reported a wait is no longer a hand-off: a live holder gives its leases
   * up at its next shard check, and the capture poll after it takes them.
   */
  readonly stillWaitingAfterMs: number;
}

interface Wait {
  /** When the first capture of this wait was refused (this client's clock). */
  readonly sinceMs: number;
  reported: boolean;
  /** Its holder, as reported. */
  holder: string | undefined;
}

/**
 * The shards whose capture is refused (leased by another client whose lease has not expired for
 * this one), from the first refusal to the capture, or until the shard is no longer wanted.
 */
export class CaptureWaits {
  readonly #waits = new Map<string, Wait>();
  #gathering: Subscription | undefined;
  /** The checks, after one shard check, of the waits reported. */
  readonly #checks = new Set<Subscription>();

  constructor(private readonly deps: CaptureWaitsDeps) {}

  /** A capture of `shardId` was refused. */
  refused(shardId: string): void {
    if (this.#waits.has(shardId)) return;
    this.#waits.set(shardId, { sinceMs: this.deps.elapsedNow(), reported: false, holder: undefined });
    this.#gathering ??= timer(this.deps.gatherMs, this.deps.scheduler).subscribe(() => this.report());
  }

  /** The wait for `shardId` is over: captured, or no longer wanted. */
  ended(shardId: string): void {
    this.#waits.delete(shardId);
  }

  /** Stops reporting (the client stops). */
  close(): void {
    this.#gathering?.unsubscribe();
    this.#gathering = undefined;
    for (const check of this.#checks) check.unsubscribe();
    this.#checks.clear();
    this.#waits.clear();
  }

  // A lease whose holder has stopped stands still: it expires for this client leaseTtlMs after the
  // first refused capture saw it so (or sooner, if it was read before); the next capture poll takes it.
  private report(): void {
    this.#gathering = undefined;
    const fresh = [...this.#waits].filter(([, wait]) => !wait.reported).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (fresh.length === 0) return;
    const nowMs = this.deps.elapsedNow();
    let boundMs = 0;
    const holders = new Set<string>();
    for (const [shardId, wait] of fresh) {
      wait.reported = true;
      boundMs = Math.max(boundMs, wait.sinceMs + this.deps.leaseTtlMs - nowMs);
      wait.holder = this.deps.holderOf?.(shardId);
      if (wait.holder !== undefined) holders.add(wait.holder);
    }
    const check = timer(this.deps.stillWaitingAfterMs, this.deps.scheduler).subscribe(() => {
      this.#checks.delete(check);
      this.stillWaiting(fresh);
    });
    this.#checks.add(check);
    this.deps.emit({
      type: 'waiting',
      reason: 'leases-held',
      shardIds: fresh.map(([shardId]) => shardId),
      holders: [...holders].sort(),
      boundMs: Math.ceil(boundMs),
      held: this.deps.held(),
    });
  }

  // The waits of one report still standing one shard check later (the same waits, not new ones
  // for the same shards): their holder did not hand them over.
  private stillWaiting(reported: readonly (readonly [string, Wait])[]): void {
    const standing = reported.filter(([shardId, wait]) => this.#waits.get(shardId) === wait);
    if (standing.length === 0) return;
    const nowMs = this.deps.elapsedNow();
    const sinceMs = Math.min(...standing.map(([, wait]) => wait.sinceMs));
    const boundMs = Math.max(0, ...standing.map(([, wait]) => wait.sinceMs + this.deps.leaseTtlMs - nowMs));
    const holders = [...new Set(standing.flatMap(([, wait]) => (wait.holder === undefined ? [] : [wait.holder])))].sort();
    logStillWaiting(this.deps.logger, { shardIds: standing.map(([shardId]) => shardId), holders, waitedMs: nowMs - sinceMs, boundMs: Math.ceil(boundMs) });
  }
}
