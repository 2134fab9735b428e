// Pure: turns what one coordination check read (live clients, the cached shard list, the rows of
// the closed shards) into the assignment's input, and ListShards' answer into the cached list.
import type { AssignmentInput, ShardToAssign } from './assignment.js';
import type { CachedShard, LiveClient } from './coordination-ports.js';
import type { CheckpointRow, ShardInfo } from './ports.js';

/**
 * The assignment input. Owners come from the clients' heartbeats (what each said it holds);
 * `finished` and `lastOwner` of closed shards from their checkpoint rows, which are fresher than
 * the cache; open shards cannot be finished.
 */
export function assignmentInput(
  selfId: string,
  clients: readonly LiveClient[],
  shards: readonly CachedShard[],
  closedRows: ReadonlyMap<string, CheckpointRow>,
): AssignmentInput {
  const ids = clients.map((c) => c.id);
  // A check just wrote our own heartbeat; a slow read or a skewed clock must not drop us from our own view.
  if (!ids.includes(selfId)) ids.push(selfId);
  const owners = new Map<string, string>();
  for (const client of [...clients].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    for (const shardId of client.shardIds ?? []) if (!owners.has(shardId)) owners.set(shardId, client.id);
  }
  const toAssign: ShardToAssign[] = shards.map((shard) => {
    const row = shard.open ? undefined : closedRows.get(shard.shardId);
    return {
      shardId: shard.shardId,
      parentShardIds: shard.parentShardIds,
      finished: shard.finished || (row?.finished ?? false),
      owner: owners.get(shard.shardId),
      lastOwner: row?.lastOwnerId,
    };
  });
  return { clients: ids, shards: toAssign };
}

/** Who reads, and when another client's row counts as suspect. */
export interface RowsToReadOptions {
  /** This client's id (its own row is never suspect). */
  readonly selfId: string;
  /** A client whose row this client has seen unchanged this long has likely missed a heartbeat. */
  readonly suspectAfterMs: number;
}

/**
 * The only checkpoint rows a check needs: closed shards the cache does not know to be finished
 * (have they finished since?), the parents of shards nobody holds (who finished them: the child
 * should go there), and the leases of suspect clients (rows that stood still past a heartbeat):
 * reading them starts their expiry clock now, in step with the client's row, instead of one TTL
 * after the client is found dead. In steady state, none.
 */
export function rowsToRead(shards: readonly CachedShard[], clients: readonly LiveClient[], options: RowsToReadOptions): string[] {
  const owned = new Set(clients.flatMap((c) => c.shardIds ?? []));
  const closed = new Set(shards.filter((s) => !s.open).map((s) => s.shardId));
  const wanted = new Set(shards.filter((s) => !s.open && !s.finished).map((s) => s.shardId));
  for (const shard of shards) {
    if (shard.finished || owned.has(shard.shardId)) continue;
    for (const parent of shard.parentShardIds) if (closed.has(parent)) wanted.add(parent);
  }
  const known = new Set(shards.filter((s) => !s.finished).map((s) => s.shardId));
  for (const client of clients) {
    if (client.id === options.selfId || client.unchangedForMs < options.suspectAfterMs) continue;
    for (const shardId of client.shardIds ?? []) if (known.has(shardId)) wanted.add(shardId);
  }
  return [...wanted].sort();
}

/**
 * The cached shard list from ListShards' answer: every listed shard with its parents; a closed
 * shard is finished when the cache already said so or its row says so now. Shards that aged out of
 * the stream drop out (their children treat a missing parent as finished).
 */
export function cachedShardList(listed: readonly ShardInfo[], previous: readonly CachedShard[], rows: ReadonlyMap<string, CheckpointRow>): CachedShard[] {
  const knownFinished = new Set(previous.filter((s) => s.finished).map((s) => s.shardId));
  return listed
    .map((shard) => ({
      shardId: shard.shardId,
      parentShardIds: [...shard.parentShardIds],
      open: shard.open,
      finished: !shard.open && (knownFinished.has(shard.shardId) || (rows.get(shard.shardId)?.finished ?? false)),
    }))
    .sort((a, b) => (a.shardId < b.shardId ? -1 : a.shardId > b.shardId ? 1 : 0));
}

/** `true` when two cached lists say the same (so the leader skips a needless write). */
export function sameShardList(a: readonly CachedShard[] | undefined, b: readonly CachedShard[]): boolean {
  if (a === undefined || a.length !== b.length) return false;
  return a.every((x, i) => {
    const y = b[i];
    return y !== undefined && x.shardId === y.shardId && x.open === y.open && x.finished === y.finished
      && x.parentShardIds.length === y.parentShardIds.length && x.parentShardIds.every((p, j) => p === y.parentShardIds[j]);
  });
}
