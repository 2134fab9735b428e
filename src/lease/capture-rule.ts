// The capture rule: when a client may take a shard's lease. The DynamoDB store, the in-memory store
// and `reset` judge a row by this one rule (the stores then make the write conditional on the row
// being exactly as judged, so a write in between fails the capture instead of being overwritten).
//
// An owned lease expires by local observation (src/lease/row-observer.ts): when this client has seen the
// row unchanged for leaseTtlMs on its own clock. The owner's LastUpdate is never read as a time.
import type { CheckpointRow } from '../ports/ports.js';
import { RowObserver, observedExpired } from './row-observer.js';

/** Who asks: the client id, and the fencing token this very process captured the shard with, if any. */
export interface Capturer {
  readonly clientId: string;
  /** The token of this process's own last capture of the shard (another process with the same clientId has other tokens). */
  readonly ownToken: number | undefined;
}

/**
 * A lease is available when the row has no owner (no row, owner absent or NULL), when this very
 * process holds it (same client id AND its own token: another process configured with the same
 * clientId does not count as "me"), or when the row has not changed for `leaseTtlMs` since this
 * client first saw it so (`unchangedForMs`, on its own clock).
 */
export function leaseAvailable(row: CheckpointRow | undefined, me: Capturer, unchangedForMs: number, leaseTtlMs: number): boolean {
  if (row?.ownerId === undefined) return true;
  if (row.ownerId === me.clientId && row.leaseCounter === me.ownToken) return true;
  return observedExpired(unchangedForMs, leaseTtlMs);
}

/**
 * The part of a row that every write of its owner changes (a capture moves the owner and the
 * counter, a commit or renewal LastUpdate), as one opaque value. The stores' conditional writes
 * check exactly these attributes unchanged.
 */
export function leaseVersion(row: CheckpointRow): string {
  return `${row.ownerId ?? ''}\u0000${row.leaseCounter}\u0000${row.lastUpdateNs?.toString() ?? ''}`;
}

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
  ) {}

  /** Records a read of `shardId` that answered `row` (call it when the answer arrived); returns whether the lease is available to this client now. */
  see(shardId: string, row: CheckpointRow | undefined): boolean {
    const nowMs = this.now();
    if (row === undefined) {
      this.#observer.forget(shardId);
      return true;
    }
    const unchangedForMs = this.#observer.see(shardId, leaseVersion(row), nowMs);
    return leaseAvailable(row, { clientId: this.clientId, ownToken: this.#ownTokens.get(shardId) }, unchangedForMs, this.leaseTtlMs);
  }

  /** Records that this process captured `shardId` with fencing token `token`. */
  captured(shardId: string, token: number): void {
    this.#ownTokens.set(shardId, token);
  }
}
