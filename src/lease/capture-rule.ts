// The capture rule: when a client may take a shard's lease. The DynamoDB store, the in-memory store
// and `reset` judge a row by this one rule (the stores then make the write conditional on the row
// being exactly as judged, so a write in between fails the capture instead of being overwritten).
//
// An owned lease expires by local observation (src/lease/row-observer.ts): when this client has seen the
// row unchanged for leaseTtlMs on its own clock. The owner's LastUpdate is never read as a time.
import type { CheckpointRow } from '../ports/lease-store.js';
import { observedExpired } from './row-observer.js';

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
