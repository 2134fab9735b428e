// The seams of group coordination: who is alive (the clients table) and who leads and what the
// shard list is (the metadata table). Like src/ports.ts, every method returns a cold Observable of
// one request (subscribe = send, unsubscribe = abort), so the coordinator runs alike on DynamoDB,
// on the in-memory stores of `kinsumer/testing`, and on virtual time.
import type { Observable } from 'rxjs';

/** Client rows not renewed for this long are deleted by the leader (the Go kinsumer's 48 h). */
export const REAP_CLIENTS_AFTER_MS = 48 * 60 * 60 * 1000;

/** A row of `<app>_clients` renewed within the lease TTL. */
export interface LiveClient {
  /** The client's id (`clientId` option). */
  readonly id: string;
  /** For humans; `undefined` when absent, NULL or empty. */
  readonly name: string | undefined;
  /** Last heartbeat, Unix nanoseconds on the writer's clock. */
  readonly lastUpdateNs: bigint;
  /**
   * The shards it held at its last heartbeat, sorted. `undefined` when the row has no `Shards`
   * attribute (a Go kinsumer's row: what it holds is unknown).
   */
  readonly shardIds: readonly string[] | undefined;
}

/** The clients table, seen by one client. */
export interface MembershipStore {
  /** Writes this client's row: `LastUpdate` = now, and the shards it holds (unconditional put). */
  heartbeat(heldShardIds: readonly string[]): Observable<void>;
  /** The clients whose `LastUpdate` is newer than now − leaseTtlMs (strongly consistent), sorted by id. */
  liveClients(): Observable<LiveClient[]>;
  /** Deletes this client's row (graceful stop). */
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
  /** When it last took or renewed the lock, Unix nanoseconds on its clock. */
  readonly lastUpdateNs: bigint;
}

/** The metadata table (leader lock and shard cache), seen by one client. */
export interface MetadataStore {
  /**
   * Takes or renews the leader lock: succeeds when it is free, this client's, or not renewed for
   * leaseTtlMs. Emits whether this client holds it now; losing the race is an answer, not an error.
   */
  acquireLeadership(): Observable<boolean>;
  /** Gives the lock up if this client holds it. Emits whether it did (`false`: someone else holds it, or nobody). */
  stepDown(): Observable<boolean>;
  /** The lock's holder, if it renewed the lock within leaseTtlMs (strongly consistent). */
  leader(): Observable<Leader | undefined>;
  /** The cached shard list (strongly consistent); `undefined` when there is none. */
  readShardCache(): Observable<ShardCache | undefined>;
  /** Replaces the cached shard list (unconditional put): `ShardIDs` = the unfinished shards, plus the lineage of all given. */
  writeShardCache(shards: readonly CachedShard[]): Observable<void>;
}
