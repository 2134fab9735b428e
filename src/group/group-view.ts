// Pure: turns what one coordination check read (live clients, the cached shard list, the rows of
// the closed shards) into the assignment's input, and ListShards' answer into the cached list;
// decides which assignment rule is in force (sticky, or the Go kinsumer's while a Go client lives).
import type { CachedShard, LiveClient } from '../ports/coordination.js';
import type { CheckpointRow } from '../ports/lease-store.js';
import type { ShardInfo } from '../ports/stream.js';
import { assignShards, eligibleShardIds, type AssignmentInput, type ShardToAssign } from './assignment.js';
import { goAssignment } from './go-assignment.js';
import { writtenByThisLibrary } from './library-marker.js';

/** The assignment rule a check applied: this library's sticky balanced one, or the Go kinsumer's round robin. */
export type AssignmentStrategy = 'sticky' | 'go';

/** What the Go kinsumer's rule gives, as seen by one client. */
export interface GoPlan {
  /** Ids of the live clients whose rows lack this library's marker (Go kinsumer clients), sorted. */
  readonly goMembers: readonly string[];
  /** Shard id → client id, over the cache's `ShardIDs` and every live client (this one included). */
  readonly assignment: ReadonlyMap<string, string>;
}

/**
 * The Go plan when a live client other than `selfId` is not of this library, else `undefined`
 * (sticky). `shards` is the cached list: its unfinished shards in order are the cache's `ShardIDs`,
 * the very list the Go clients index.
 */
export function goPlan(selfId: string, clients: readonly LiveClient[], shards: readonly CachedShard[]): GoPlan | undefined {
  const goMembers = clients.filter((c) => c.id !== selfId && !writtenByThisLibrary(c.library)).map((c) => c.id).sort();
  if (goMembers.length === 0) return undefined;
  const shardIds = shards.filter((s) => !s.finished).map((s) => s.shardId);
  return { goMembers, assignment: goAssignment({ clients: [...clients.map((c) => c.id), selfId], shardIds }) };
}

/**
 * This client's share of the Go assignment that it may read now: given to it, not finished (the
 * rows may know that before the cache does), every parent finished. The Go kinsumer reads children
 * beside their parents; this library keeps parents before children also under the Go rule.
 */
export function goShare(plan: GoPlan, selfId: string, input: AssignmentInput): string[] {
  const eligible = new Set(eligibleShardIds(input.shards));
  return [...plan.assignment].filter(([shardId, client]) => client === selfId && eligible.has(shardId)).map(([shardId]) => shardId);
}

/**
 * The clients as {@link rowsToRead} should see them under the Go rule: a Go client's row does not
 * say what it holds, but the rule does (each holds what the round robin gives it), so the leases
 * of a Go client that misses heartbeats are watched from then on, as a member of this library's are.
 */
export function withGoHoldings(clients: readonly LiveClient[], plan: GoPlan): LiveClient[] {
  const goMembers = new Set(plan.goMembers);
  return clients.map((client) => {
    if (!goMembers.has(client.id) || client.shardIds !== undefined) return client;
    return { ...client, shardIds: [...plan.assignment].filter(([, owner]) => owner === client.id).map(([shardId]) => shardId) };
  });
}

/**
 * The assignment input. Owners come from the clients' heartbeats (what each said it holds);
 * `finished` and `lastOwner` of closed shards from their checkpoint rows, which are fresher than
 * the cache; open shards cannot be finished. `takers`: the clients that may take shards (default:
 * every live one, this one included); a draining member's shards then count as held by nobody.
 */
export function assignmentInput(
  selfId: string,
  clients: readonly LiveClient[],
  shards: readonly CachedShard[],
  closedRows: ReadonlyMap<string, CheckpointRow>,
  takers?: readonly string[],
): AssignmentInput {
  const ids = takers === undefined ? clients.map((c) => c.id) : [...takers];
  // A check just wrote our own heartbeat; a slow read or a skewed clock must not drop us from our own view.
  if (takers === undefined && !ids.includes(selfId)) ids.push(selfId);
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
 * Who would get what among `clientIds` under the rule in force: the sticky assignment of `input`
 * (its owners that are not among them count as gone), or, under the Go rule, the Go kinsumer's
 * round robin over the cache's unfinished shards.
 */
export function assignerFor(go: GoPlan | undefined, input: AssignmentInput, shards: readonly CachedShard[]): (clientIds: readonly string[]) => ReadonlyMap<string, string> {
  if (go === undefined) return (clientIds) => assignShards({ clients: clientIds, shards: input.shards });
  const shardIds = shards.filter((s) => !s.finished).map((s) => s.shardId);
  return (clientIds) => goAssignment({ clients: clientIds, shardIds });
}

/**
 * The shards another live client holds that this client would be given if that client alone left
 * the group (`assign` answers who gets what among the given clients, as the check would), by that
 * client: should it die, this client takes them over. For a holder whose leases live by their own
 * rows (a Go kinsumer, an older kinsumer-ts), its successor reads their rows at every check, so
 * each row expires for it one TTL after its last change; for a holder with a life, its successor
 * aims its checks at the holder's heartbeats (check-plan.ts). Each shard has one successor.
 */
export function successorWatch(
  selfId: string,
  clients: readonly LiveClient[],
  assign: (clientIds: readonly string[]) => ReadonlyMap<string, string>,
): Map<string, string[]> {
  const ids = [...new Set([...clients.map((c) => c.id), selfId])];
  const watched = new Map<string, string[]>();
  for (const owner of clients) {
    if (owner.id === selfId || (owner.shardIds ?? []).length === 0) continue;
    const without = assign(ids.filter((id) => id !== owner.id));
    const mine = (owner.shardIds ?? []).filter((shardId) => without.get(shardId) === selfId).sort();
    if (mine.length > 0) watched.set(owner.id, mine);
  }
  return watched;
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
