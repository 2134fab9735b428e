// The lives of a clientId, as its clients row carries them (docs/architecture.md, "Liveness"):
// every process that registers under a clientId takes the row over at once with a new life
// (`Incarnation` + 1) — static membership —, heartbeats only while the row is still its life's
// (same `InstanceID` and `Incarnation`, not `Ended`, nothing `Revoked`), and learns from a refused
// heartbeat what happened. Pure, shared by the DynamoDB store and the in-memory one: one rule.

/** A clients row as the lives rules need it. */
export interface RowLife {
  /** `InstanceID`: the process that wrote it; absent in a Go kinsumer's row. */
  readonly instanceId: string | undefined;
  /** `Incarnation`: absent in a Go kinsumer's or an older kinsumer-ts's row. */
  readonly incarnation?: number;
  /** `Ended`: the life another member ended (it stood still a TTL past its last heartbeat). */
  readonly ended: number | undefined;
  /** `Revoked`: shards an operator's reset took from this life, not yet acknowledged. */
  readonly revoked: readonly string[] | undefined;
  /** `Shards`: what the row says its writer holds. */
  readonly shardIds: readonly string[] | undefined;
}

/** `true` when the row's life was ended by another member: its writer can renew nothing more. */
export function lifeEnded(row: Pick<RowLife, 'incarnation' | 'ended'>): boolean {
  return row.incarnation !== undefined && row.ended !== undefined && row.ended >= row.incarnation;
}

/**
 * The first life of a row created anew: the creation time in whole seconds (wall clock), not 1. A
 * clientId whose row was reaped (48 hours without a heartbeat) and that comes back must not reuse a
 * life that lease rows it left behind still name: their leases would count as its live ones (and
 * as nobody else's to take) while it holds none of them.
 */
export function firstLife(wallNowMs: number): number {
  return Math.max(1, Math.floor(wallNowMs / 1000));
}

/** What a first registration does with the row it found in its place. */
export type Arrival =
  /** No row: create it, in a {@link firstLife}. */
  | { readonly kind: 'create' }
  /** This very process's row (an answer lost on the way): carry on in its life. */
  | { readonly kind: 'own'; readonly incarnation: number }
  /**
   * Another process's (or a Go kinsumer's, or an older kinsumer-ts's) row of this clientId: take
   * its place at once in the next life, keeping what it held as this process's claim.
   */
  | { readonly kind: 'take-over'; readonly incarnation: number; readonly claimed: readonly string[] };

/** The rule of a process registering under a clientId whose row reads as `row`. */
export function arrive(row: RowLife | undefined, instanceId: string): Arrival {
  if (row === undefined) return { kind: 'create' };
  if (row.instanceId === instanceId && row.incarnation !== undefined && !lifeEnded(row)) return { kind: 'own', incarnation: row.incarnation };
  return { kind: 'take-over', incarnation: (row.incarnation ?? 0) + 1, claimed: row.shardIds ?? [] };
}

/** What a heartbeat refused by its condition learns from the row as it reads now. */
export type Refusal =
  /** The row is gone (an operator deleted it): written again, same life. */
  | { readonly kind: 'recreate' }
  /** Another process took the clientId's place: this one must end. */
  | { readonly kind: 'replaced'; readonly by: string | undefined }
  /** The group ended this life (it missed heartbeats for a TTL): this process goes on in a new one. */
  | { readonly kind: 'new-life'; readonly incarnation: number }
  /** An operator's reset took these leases: acknowledged by the next heartbeat (removed from the row). */
  | { readonly kind: 'revoked'; readonly shardIds: readonly string[] }
  /** Nothing stands in the way any more (the row changed back meanwhile): the heartbeat is sent again. */
  | { readonly kind: 'retry' };

/** The rule of a heartbeat of life `incarnation` by process `instanceId` that the row's condition refused. */
export function refused(row: RowLife | undefined, instanceId: string, incarnation: number): Refusal {
  if (row === undefined) return { kind: 'recreate' };
  if (row.instanceId !== instanceId) return { kind: 'replaced', by: row.instanceId };
  if (row.incarnation !== incarnation || lifeEnded(row)) return { kind: 'new-life', incarnation: Math.max(row.incarnation ?? 0, incarnation) + 1 };
  if (row.revoked !== undefined && row.revoked.length > 0) return { kind: 'revoked', shardIds: [...row.revoked].sort() };
  return { kind: 'retry' };
}
