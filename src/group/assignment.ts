// Which client reads which shard: a pure function every client of the group evaluates on the same
// inputs (live clients, shard list, current owners) and so reaches the same answer without talking
// to the others. Priorities, in order: correctness (eligible shards only, parents before children),
// balance (per-client counts differ by at most one), stickiness (as few moves as balance allows),
// preference (a shard nobody holds goes back to its last owner, a child to its parent's finisher).

import { compareIds } from './compare-ids.js';

/** A shard as the assignment sees it. */
export interface ShardToAssign {
  readonly shardId: string;
  /** `ParentShardId` and `AdjacentParentShardId` (a merge has two), where present. */
  readonly parentShardIds: readonly string[];
  /** Fully consumed (`Finished` written). Only closed shards finish. */
  readonly finished: boolean;
  /** The client holding the lease now; ignored unless it is one of the live clients. */
  readonly owner?: string | undefined;
  /**
   * The client that released the lease last: for a finished shard, the client that finished it.
   * A shard nobody holds prefers it; a child prefers its parents' finishers.
   */
  readonly lastOwner?: string | undefined;
}

/** Everything the assignment depends on. Order does not matter; client ids may repeat. */
export interface AssignmentInput {
  /** Ids of the live clients. */
  readonly clients: readonly string[];
  /** The shard list, parents included where known. Shard ids must be unique. */
  readonly shards: readonly ShardToAssign[];
}

/** Shard id → client id, for every eligible shard (in shard id order). */
export type Assignment = ReadonlyMap<string, string>;

/**
 * The shards that may be read now, sorted: not finished, and every parent finished. A parent
 * missing from the list has aged out of the stream (or was dropped from the cache as finished), so
 * it counts as finished.
 */
export function eligibleShardIds(shards: readonly ShardToAssign[]): string[] {
  const byId = indexShards(shards);
  return [...byId.values()].filter((s) => isEligible(s, byId)).map((s) => s.shardId).sort(compareIds);
}

/**
 * Assigns every eligible shard to one live client.
 *
 * - Balanced: per-client counts differ by at most one (with E shards and N clients, `E mod N`
 *   clients get ⌈E/N⌉, the others ⌊E/N⌋).
 * - Sticky: a shard stays with its live owner unless balance needs it to move, and the number of
 *   moves is the least balance allows: a client keeps up to its quota (its lowest shard ids), and
 *   the ⌈E/N⌉ quotas go first to the clients that hold that many.
 * - Preference: among the assignments with the fewest moves, as many shards without a live owner
 *   as possible go to a client they prefer (their own last owner, or a parent's finisher).
 * - Deterministic: ties are broken by ids, never by input order.
 */
export function assignShards(input: AssignmentInput): Map<string, string> {
  const clients = [...new Set(input.clients)].sort(compareIds);
  const assignment = new Map<string, string>();
  if (clients.length === 0) return assignment;
  const live = new Set(clients);
  const byId = indexShards(input.shards);
  const eligible = [...byId.values()].filter((s) => isEligible(s, byId)).sort((a, b) => compareIds(a.shardId, b.shardId));

  const quota = Math.floor(eligible.length / clients.length);
  const extras = eligible.length % clients.length;
  const held = new Map<string, string[]>(clients.map((c) => [c, []]));
  for (const shard of eligible) {
    if (shard.owner !== undefined && live.has(shard.owner)) held.get(shard.owner)?.push(shard.shardId);
  }
  const count = (client: string) => held.get(client)?.length ?? 0;

  // A client that holds more than the quota keeps one more shard if it gets one of the `extras`
  // larger targets; any `extras` of them give the same number of moves, so the lowest ids win.
  const heavy = clients.filter((c) => count(c) > quota);
  const target = new Map(clients.map((c) => [c, quota]));
  for (const client of heavy.slice(0, extras)) target.set(client, quota + 1);
  const extrasLeft = extras - Math.min(extras, heavy.length);

  const kept = new Map<string, string>();
  for (const client of clients) {
    for (const shardId of (held.get(client) ?? []).slice(0, target.get(client))) kept.set(shardId, client);
  }
  const room = new Map(clients.map((c) => [c, (target.get(c) ?? 0) - Math.min(count(c), target.get(c) ?? 0)]));
  // Only clients at or below the quota can still take one of the larger targets (the heavy ones have theirs).
  const canTakeExtra = (client: string) => extrasLeft > 0 && count(client) <= quota;

  const unowned = eligible.filter((s) => s.owner === undefined || !live.has(s.owner));
  const preferences = new Map<string, string[]>();
  for (const shard of unowned) {
    const wanted = preferredClients(shard, byId)
      .filter((c) => live.has(c) && ((room.get(c) ?? 0) > 0 || canTakeExtra(c)));
    if (wanted.length > 0) preferences.set(shard.shardId, wanted);
  }
  const placement = placePreferred(unowned.map((s) => s.shardId), preferences, room, canTakeExtra, extrasLeft);

  // Whatever is left (moved surplus, shards nobody prefers or whose favourites are full) fills the
  // remaining slots in id order: base slots by client id, then the unused larger targets by client id.
  const slots: string[] = [];
  for (const client of clients) {
    const left = (room.get(client) ?? 0) - Math.min(placement.loads.get(client) ?? 0, room.get(client) ?? 0);
    for (let i = 0; i < left; i += 1) slots.push(client);
  }
  const extraTakers = clients.filter((c) => canTakeExtra(c) && !placement.extraUsers.has(c));
  slots.push(...extraTakers.slice(0, extrasLeft - placement.extraUsers.size));
  const rest = eligible.filter((s) => !kept.has(s.shardId) && !placement.placed.has(s.shardId));
  if (rest.length !== slots.length) throw new Error(`assignment invariant broken: ${rest.length} shards for ${slots.length} slots`);

  const restTo = new Map(rest.map((s, i) => [s.shardId, slots[i] ?? '']));
  for (const shard of eligible) {
    const id = shard.shardId;
    assignment.set(id, kept.get(id) ?? placement.placed.get(id) ?? restTo.get(id) ?? '');
  }
  return assignment;
}

/** What one client must do to match an assignment: shards to capture and shards to give up (both sorted). */
export interface AssignmentChanges {
  readonly acquire: string[];
  readonly release: string[];
}

/**
 * Compares an assignment with the shards `clientId` holds: it acquires what is assigned to it and
 * not held, and releases what it holds and is not assigned to it (moved elsewhere, or no longer
 * eligible).
 */
export function assignmentChanges(assignment: Assignment, clientId: string, heldShardIds: Iterable<string>): AssignmentChanges {
  const held = new Set(heldShardIds);
  const acquire: string[] = [];
  for (const [shardId, client] of assignment) if (client === clientId && !held.has(shardId)) acquire.push(shardId);
  const release = [...held].filter((shardId) => assignment.get(shardId) !== clientId);
  return { acquire: acquire.sort(compareIds), release: release.sort(compareIds) };
}

function indexShards(shards: readonly ShardToAssign[]): Map<string, ShardToAssign> {
  const byId = new Map<string, ShardToAssign>();
  for (const shard of shards) {
    if (byId.has(shard.shardId)) throw new TypeError(`shard ${shard.shardId} is listed twice`);
    byId.set(shard.shardId, shard);
  }
  return byId;
}

function isEligible(shard: ShardToAssign, byId: ReadonlyMap<string, ShardToAssign>): boolean {
  return !shard.finished && shard.parentShardIds.every((p) => byId.get(p)?.finished ?? true);
}

/** Its own last owner first (it was reading it), then the finishers of its parents in parent id order. */
function preferredClients(shard: ShardToAssign, byId: ReadonlyMap<string, ShardToAssign>): string[] {
  const finishers = [...shard.parentShardIds].sort(compareIds).map((p) => byId.get(p)?.lastOwner);
  const wanted = [shard.lastOwner, ...finishers].filter((c): c is string => c !== undefined);
  return [...new Set(wanted)];
}

interface Placement {
  readonly placed: Map<string, string>;
  readonly loads: Map<string, number>;
  readonly extraUsers: Set<string>;
}

/**
 * Places as many shards as possible on a client they prefer: a maximum flow from shards to clients,
 * where client c takes `room(c)` shards, plus one more if it takes one of the `extras` larger
 * targets still free. Augmenting paths (depth first, in id order) may move an earlier placement to
 * another of its favourites, or hand a larger target from one client to another. Nodes a failed
 * search reached can never reach the sink again, so they are skipped from then on.
 */
function placePreferred(
  shardIds: readonly string[],
  preferences: ReadonlyMap<string, readonly string[]>,
  room: ReadonlyMap<string, number>,
  canTakeExtra: (client: string) => boolean,
  extras: number,
): Placement {
  const placed = new Map<string, string>();
  const onClient = new Map<string, string[]>();
  const extraUsers = new Set<string>();
  const dead = new Set<string>();
  const EXTRA_NODE = '\u0000extra';
  let visited = new Set<string>();

  const capacity = (client: string) => (room.get(client) ?? 0) + (extraUsers.has(client) ? 1 : 0);
  const shardsOn = (client: string) => onClient.get(client) ?? [];
  const unplace = (shardId: string, client: string) => {
    onClient.set(client, shardsOn(client).filter((s) => s !== shardId));
    placed.delete(shardId);
  };
  // A client back within its room no longer needs its larger target: someone else may take it.
  const redundantExtra = () => [...extraUsers].sort(compareIds).find((c) => shardsOn(c).length <= (room.get(c) ?? 0));
  const place = (shardId: string, client: string) => {
    onClient.set(client, [...shardsOn(client), shardId]);
    placed.set(shardId, client);
  };

  // Moves shardId (placed or not) onto one of its favourites, rerouting others as needed.
  const augment = (shardId: string): boolean => {
    for (const client of preferences.get(shardId) ?? []) {
      if (dead.has(client) || visited.has(client)) continue;
      visited.add(client);
      if (freeSlot(client)) {
        const from = placed.get(shardId);
        if (from !== undefined) unplace(shardId, from);
        place(shardId, client);
        return true;
      }
    }
    return false;
  };

  // Makes room for one more shard on `client`.
  const freeSlot = (client: string): boolean => {
    if (shardsOn(client).length < capacity(client)) return true;
    if (canTakeExtra(client) && !extraUsers.has(client) && takeExtra()) {
      extraUsers.add(client);
      return true;
    }
    return shardsOn(client).some((other) => augment(other));
  };

  // Finds a free larger target, or takes one back from a client that can move a shard elsewhere.
  const takeExtra = (): boolean => {
    if (extraUsers.size < extras) return true;
    const spare = redundantExtra();
    if (spare !== undefined) {
      extraUsers.delete(spare);
      return true;
    }
    if (dead.has(EXTRA_NODE) || visited.has(EXTRA_NODE)) return false;
    visited.add(EXTRA_NODE);
    for (const user of [...extraUsers].sort(compareIds)) {
      if (dead.has(user) || visited.has(user)) continue;
      visited.add(user);
      if (shardsOn(user).some((other) => augment(other))) {
        extraUsers.delete(user);
        return true;
      }
    }
    return false;
  };

  for (const shardId of shardIds) {
    if (!preferences.has(shardId)) continue;
    visited = new Set();
    if (!augment(shardId)) for (const node of visited) dead.add(node);
  }
  for (let spare = redundantExtra(); spare !== undefined; spare = redundantExtra()) extraUsers.delete(spare);
  const loads = new Map([...onClient].map(([client, shards]) => [client, shards.length]));
  return { placed, loads, extraUsers };
}
