// The capture rule: when a client may take a shard's lease. The DynamoDB store, the in-memory store
// and `reset` judge a row by this one rule (the stores then make the write conditional on the row
// being exactly as judged, so a write in between fails the capture instead of being overwritten).
//
// A lease captured by a member with a life (the row names it: `OwnerIncarnation`) lives as long
// as that life: its clients row heartbeats, and nobody ended it (docs/architecture.md, "Liveness").
// Any other owned lease — the Go kinsumer's, an older kinsumer-ts's, or one whose owner's row this
// client cannot read — expires by local observation of its own row (src/lease/row-observer.ts):
// when this client has seen the row unchanged for leaseTtlMs on its own clock. The owner's
// LastUpdate is never read as a time.
import type { MemberLife } from '../ports/coordination.js';
import type { CheckpointRow } from '../ports/lease-store.js';
import { observedExpired } from './row-observer.js';

/** Who asks: the client id, its life, and the fencing token this very process captured the shard with, if any. */
export interface Capturer {
  readonly clientId: string;
  /** The token of this process's own last capture of the shard (another process with the same clientId has other tokens). */
  readonly ownToken: number | undefined;
  /** This process's life, once registered: a lease of its clientId from this life or an earlier one is its own to take. */
  readonly incarnation?: number | undefined;
}

/**
 * Why a lease is judged: to capture it (a member: only once the owner's life is ended, so the
 * owner can never renew again and stopped emitting two renewal intervals after its last
 * heartbeat), or to reset it (an operator: an owner whose life expired is gone; the reset tells
 * its row, and a zombie that wakes drops the lease at its next heartbeat).
 */
export type Judgement = 'capture' | 'reset';

/**
 * A lease is available when the row has no owner (no row, owner absent or NULL); when it is this
 * client's from this life or an earlier one (static membership: a process that took the
 * clientId's place takes its leases at once, fenced); when the life it was captured in is over
 * (`ownerLife`: ended — or, for a reset, expired); or, for a lease that lives by its own row, when
 * the row has not changed for `leaseTtlMs` since this client first saw it so (`unchangedForMs`,
 * on its own clock). Without a life on either side, this very process's own token counts as its own.
 */
export function leaseAvailable(
  row: CheckpointRow | undefined, me: Capturer, unchangedForMs: number, leaseTtlMs: number,
  ownerLife?: MemberLife, judgement: Judgement = 'capture',
): boolean {
  if (row?.ownerId === undefined) return true;
  if (row.ownerId === me.clientId) {
    if (row.ownerIncarnation !== undefined && me.incarnation !== undefined) return row.ownerIncarnation <= me.incarnation;
    if (row.leaseCounter === me.ownToken) return true;
  } else if (row.ownerIncarnation !== undefined && ownerLife !== undefined) {
    return ownerLife === 'ended' || (judgement === 'reset' && ownerLife === 'expired');
  }
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
