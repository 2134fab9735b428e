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
}

/**
 * What a heartbeat found: this process's row written, or the row of another process with the same
 * `clientId` (another instance id) in its place, which it did not overwrite.
 */
export type Registration =
  | {
    /** The row is this process's: written with `LastUpdate` = now and the shards it holds. */
    readonly registered: true;
  }
  | {
    /** Another process's row holds this clientId, and it is not (yet) seen unchanged for the lease TTL. */
    readonly registered: false;
    /** `true` once this process has seen that row change: the other process is alive and heartbeating. */
    readonly heartbeating: boolean;
    /** The shards that row says the other process holds (`undefined`: it does not say). */
    readonly shardIds: readonly string[] | undefined;
  };

/** The clients table, seen by one client. */
export interface MembershipStore {
  /**
   * Writes this process's row: `LastUpdate` = now, the shards it holds, its instance id, the
   * library marker (`Library`). It never
   * overwrites the row of another live process with the same clientId: it takes that row over only
   * once it has seen it unchanged for the lease TTL (its writer is gone), conditioned on the row
   * being as seen.
   */
  heartbeat(heldShardIds: readonly string[]): Observable<Registration>;
  /**
   * The clients whose rows this client has not seen unchanged for leaseTtlMs (strongly consistent
   * read of the whole table), sorted by id. A row new to this client is live.
   */
  liveClients(): Observable<LiveClient[]>;
  /** Deletes this process's row (graceful stop); leaves a row another process (same clientId) wrote. */
  deregister(): Observable<void>;
  /**
   * Deletes the rows not renewed for the reap age (default 48 hours, the Go kinsumer's), each
   * conditioned on still being that old, so a client that came back meanwhile stays. Emits the
   * ids it deleted, sorted. Leader only.
   */
  reapStale(): Observable<string[]>;
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
