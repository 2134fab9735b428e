// The seams of group coordination: who is alive (the clients table) and who leads, what the shard
// list is and when a member left (the metadata table). Like the lease store (lease-store.ts), every method returns a
// cold Observable of one request (subscribe = send, unsubscribe = abort), so the coordinator runs
// alike on DynamoDB, on the in-memory stores of `kinsumer/testing`, and on virtual time.
//
// Liveness (of a client, of the leader lock) is judged by local observation (src/lease/row-observer.ts):
// a row is live until this client has seen it unchanged for leaseTtlMs on its own clock. The
// LastUpdate values below are what the writers wrote, for humans and for the Go kinsumer.
import type { Observable } from 'rxjs';

/** Client rows not renewed for this long are deleted by the leader (the Go kinsumer's 48 h). */
export const REAP_CLIENTS_AFTER_MS = 48 * 60 * 60 * 1000;

/** A row of `<app>_clients` this client has not seen unchanged for the lease TTL. */
export interface LiveClient {
  /** The client's id (`clientId` option). */
  readonly id: string;
  /** For humans; `undefined` when absent, NULL or empty. */
  readonly name: string | undefined;
  /** Last heartbeat, Unix nanoseconds on the writer's clock (never compared with the reader's). */
  readonly lastUpdateNs: bigint;
  /** How long the reader has seen this row unchanged, on its own clock: 0 when it just changed or is new to the reader. */
  readonly unchangedForMs: number;
  /** The writing process's instance id (`InstanceID`); `undefined` in a row without one (a Go kinsumer's). */
  readonly instanceId: string | undefined;
  /**
   * Which library wrote the row (`Library`, such as `kinsumer-ts/0.1.0`); `undefined` in a Go
   * kinsumer's row. While a live row lacks this library's marker, the group uses the Go assignment.
   */
  readonly library: string | undefined;
  /**
   * The shards it held at its last heartbeat, sorted. `undefined` when the row has no `Shards`
   * attribute (a Go kinsumer's row: what it holds is unknown).
   */
  readonly shardIds: readonly string[] | undefined;
  /**
   * Its life (`Incarnation`): raised by every process that takes the clientId's place (static
   * membership) and after the group ended a life that stopped heartbeating. `undefined` in a row
   * without it — a Go kinsumer's, or an older kinsumer-ts's —: such a member renews each lease, and
   * its leases live by their own rows; a member with a life keeps every lease it captured in that
   * life alive by this row alone (docs/architecture.md, "Liveness").
   */
  readonly incarnation?: number;
  /**
   * How long (from the read's answer, this reader's clock) until this reader takes the row for
   * gone if it stays as read: one TTL after the reader's bound on when its last heartbeat was sent.
   */
  readonly expiresInMs: number;
  /** When (ms from the read's answer) this reader expects the member's next heartbeat; absent until it has seen two. */
  readonly nextBeatInMs?: number;
  /** How far apart this reader's bounds on the member's heartbeat times are (∞ before it has bracketed one). */
  readonly beatUncertaintyMs?: number;
  /** The member drains (`drain()`, `kinsumer drain`, or a stop handing its leases over): it takes no shard. */
  readonly draining?: boolean;
  /** Shards it wants and does not hold yet: a draining holder hands each over once its successor wants it. */
  readonly wants?: readonly string[];
}

/** What a heartbeat writes besides the time: what the member holds, wants and whether it drains. */
export interface Heartbeat {
  /** The shards it holds (`Shards`). */
  readonly held: readonly string[];
  /** The shards it wants and does not hold yet (`Wants`). Default none. */
  readonly wants?: readonly string[];
  /** It drains: takes no shard, hands its own over (`Draining`). Default `false`. */
  readonly draining?: boolean;
}

/** What a heartbeat found. */
export type Registration =
  | {
    /** This process's row is written: `LastUpdate` and `Uptime` renewed, what it holds and wants. */
    readonly registered: true;
    /** Its life. */
    readonly incarnation: number;
    /**
     * `true` when this heartbeat began the life: the first registration, the take-over of a row
     * another process of this clientId wrote, or a new life after the group ended the previous one
     * (this process missed heartbeats for a TTL): leases of earlier lives are no longer its own.
     */
    readonly newLife: boolean;
    /** An operator asked this member to drain (`kinsumer drain`): `DrainRequested` is on its row. */
    readonly drainRequested: boolean;
    /** Shards whose leases an operator's reset took from this life since the last heartbeat: they are no longer its own. */
    readonly revoked: readonly string[];
    /**
     * With a take-over: the shards the row said the replaced process held. They stay this
     * process's in its row (so the group keeps them with it) until it captures them, at once.
     */
    readonly claimed?: readonly string[];
  }
  | {
    /** Another process took this clientId's place (static membership): this one must end. */
    readonly registered: false;
    /** The instance id the row now carries. */
    readonly replacedBy: string | undefined;
  };

/** The clients table, seen by one client. */
export interface MembershipStore {
  /**
   * Writes this process's row: `LastUpdate` = now, `Uptime` (its monotonic age), the shards it
   * holds and wants, whether it drains, its instance id, its incarnation and the library marker
   * (`Library`). The first heartbeat registers: a row another process of this clientId wrote is
   * taken over at once (its life raised: its leases become this process's to take, fenced).
   * Conditioned on the row being this life's: when another process took the place, it answers
   * `registered: false`; when the group ended this life, it begins a new one (`newLife`).
   */
  heartbeat(heldShardIds: readonly string[], beat?: Omit<Heartbeat, 'held'>): Observable<Registration>;
  /**
   * The clients this client does not take for gone (strongly consistent read of the whole
   * table), sorted by id: neither ended nor expired. A row with a life expires one TTL after this
   * reader's bound on its last heartbeat's send; a row without one when seen unchanged for the TTL.
   * A row new to this client is live.
   */
  liveClients(): Observable<LiveClient[]>;
  /**
   * Ends the lives the last {@link liveClients} found expired (`Ended` on their rows, each
   * conditioned on the row still being as read: a heartbeat in between keeps it alive). A member
   * whose life is ended can renew nothing more; its leases may then be captured. Emits the ids of
   * the members ended (this call or another reader's before), sorted.
   */
  endExpired(): Observable<string[]>;
  /** Deletes this process's row (graceful stop); leaves a row another process (same clientId) wrote. */
  deregister(): Observable<void>;
  /**
   * Deletes the rows not renewed for the reap age (default 48 hours, the Go kinsumer's), each
   * conditioned on still being that old, so a client that came back meanwhile stays. Emits the
   * ids it deleted, sorted. Leader only.
   */
  reapStale(): Observable<string[]>;
}

/** A member's life as a client last read its row: what a lease captured in that life is worth. */
export type MemberLife =
  /** Its row heartbeats: the lease is held. */
  | 'live'
  /** Its row stood still a TTL past its last heartbeat, and nobody ended the life yet. */
  | 'expired'
  /** Ended (by the group, or by a newer life of the clientId): its leases may be captured. */
  | 'ended';

/** A registered process: its clientId, and the life it holds the clientId's row in. */
export interface MemberSelf {
  /** Its clientId. */
  readonly clientId: string;
  /** Its life (`Incarnation`). */
  readonly incarnation: number;
}

/** What the lease store needs of the membership to judge a lease whose row names the life it was captured in. */
export interface MemberView {
  /** This process's clientId and life, once registered. */
  self(): MemberSelf | undefined;
  /**
   * Life `incarnation` of member `clientId`, as this client last read the member's row;
   * `undefined` when it cannot tell (no such row, or a row without lives): the lease is then
   * judged by its own row.
   */
  life(clientId: string, incarnation: number): MemberLife | undefined;
}

/** A shard of the cached shard list. */
export interface CachedShard {
  /** The shard's id. */
  readonly shardId: string;
  /** `ParentShardId` and `AdjacentParentShardId`, where present. */
  readonly parentShardIds: readonly string[];
  /** `false` once the shard is closed (it has an ending sequence number). */
  readonly open: boolean;
  /** Closed and fully consumed. Left out of `ShardIDs`; kept in the cache only if the writer wants its lineage remembered. */
  readonly finished: boolean;
}

/** The `ShardCache` item of `<app>_metadata`. */
export interface ShardCache {
  /** `ShardIDs`: the unfinished shards, sorted (what the Go kinsumer reads). */
  readonly shardIds: readonly string[];
  /**
   * Every cached shard with its parents and state, sorted by id. `undefined` when the item has
   * `ShardIDs` only (written by the Go kinsumer) or its lineage does not match `ShardIDs`: list
   * the shards again and rewrite the cache.
   */
  readonly shards: readonly CachedShard[] | undefined;
  /** When it was written, Unix nanoseconds on the writer's clock. */
  readonly lastUpdateNs: bigint | undefined;
}

/** The holder of the leader lock. */
export interface Leader {
  /** The leader's client id. */
  readonly id: string;
  /** The leader's client name (for humans); `undefined` when it has none. */
  readonly name: string | undefined;
  /** When it last took or renewed the lock, Unix nanoseconds on its clock (never compared with the reader's). */
  readonly lastUpdateNs: bigint;
}

/** The metadata table (leader lock and shard cache), seen by one client. */
export interface MetadataStore {
  /**
   * Takes or renews the leader lock: succeeds when it is free, this client's, or seen unchanged by
   * this client for leaseTtlMs (then conditioned on the item being as seen). Emits whether this
   * client holds it now; losing the race is an answer, not an error.
   */
  acquireLeadership(): Observable<boolean>;
  /** Gives the lock up if this client holds it. Emits whether it did (`false`: someone else holds it, or nobody). */
  stepDown(): Observable<boolean>;
  /** The lock's holder, unless this client has seen the lock unchanged for leaseTtlMs (strongly consistent). */
  leader(): Observable<Leader | undefined>;
  /** The cached shard list (strongly consistent); `undefined` when there is none. */
  readShardCache(): Observable<ShardCache | undefined>;
  /** Replaces the cached shard list (unconditional put): `ShardIDs` = the unfinished shards, plus the lineage of all given. */
  writeShardCache(shards: readonly CachedShard[]): Observable<void>;
  /**
   * The group epoch (the `GroupEpoch` item's `Epoch`; 0 while there is none): a count that only
   * grows, bumped by every member that leaves. Read with an eventually consistent `GetItem`, cheap
   * enough to poll every `throttleDelayMs`; a read may lag a bump a little, never run backwards
   * for long, so callers act on growth only.
   */
  groupEpoch(): Observable<number>;
  /** Adds one to the group epoch (an atomic `ADD`, never lost to a concurrent bump). */
  bumpGroupEpoch(): Observable<void>;
}
