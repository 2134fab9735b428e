// One client's memory of the lease rows it read: since when each has looked as it does now, and
// which fencing tokens this very process captured with. The capture rule (capture-rule.ts) judges
// each read against it, and against the owners' lives as the membership last read them.
import type { MemberView } from '../ports/coordination.js';
import type { CheckpointRow } from '../ports/lease-store.js';
import { type Judgement, leaseAvailable, leaseVersion } from './capture-rule.js';
import { RowObserver } from './row-observer.js';

/**
 * One client's view of the lease rows: every read goes through {@link LeaseObservations.see}, so
 * the rows it watches (while it tries to capture them, or while their owner looks dead to the
 * coordinator) expire for it one TTL after it first saw them as they are.
 */
export class LeaseObservations {
  readonly #observer = new RowObserver();
  readonly #ownTokens = new Map<string, number>();

  constructor(
    private readonly clientId: string,
    private readonly leaseTtlMs: number,
    private readonly now: () => number,
    /** The members' lives (the clients table as this client read it); absent: every lease is judged by its own row. */
    private readonly members?: MemberView,
  ) {}

  /** Records a read of `shardId` that answered `row` (call it when the answer arrived); returns whether the lease is available to this client now. */
  see(shardId: string, row: CheckpointRow | undefined, judgement: Judgement = 'capture'): boolean {
    const nowMs = this.now();
    if (row === undefined) {
      this.#observer.forget(shardId);
      return true;
    }
    const unchangedForMs = this.#observer.see(shardId, leaseVersion(row), nowMs);
    const self = this.members?.self();
    const ownerLife = row.ownerId === undefined || row.ownerIncarnation === undefined ? undefined : this.members?.life(row.ownerId, row.ownerIncarnation);
    const me = { clientId: this.clientId, ownToken: this.#ownTokens.get(shardId), ...(self?.clientId === this.clientId ? { incarnation: self.incarnation } : {}) };
    return leaseAvailable(row, me, unchangedForMs, this.leaseTtlMs, ownerLife, judgement);
  }

  /** This process's life, if it is registered (a capture writes it into the row). */
  incarnation(): number | undefined {
    const self = this.members?.self();
    return self?.clientId === this.clientId ? self.incarnation : undefined;
  }

  /** Records that this process captured `shardId` with fencing token `token`. */
  captured(shardId: string, token: number): void {
    this.#ownTokens.set(shardId, token);
  }
}
