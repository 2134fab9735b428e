import { expect } from 'chai';
import fc from 'fast-check';
import {
  assignShards, assignmentChanges, eligibleShardIds, type AssignmentInput, type ShardToAssign,
} from '../../../src/group/assignment.js';
import { compareIds } from '../../../src/group/compare-ids.js';

// ---------------------------------------------------------------- oracles, written from the spec

const id = (n: number) => `shardId-${String(n).padStart(12, '0')}`;

/** Not finished, and every parent finished or absent (aged out). */
function oracleEligible(shards: readonly ShardToAssign[]): string[] {
  const byId = new Map(shards.map((s) => [s.shardId, s]));
  return shards
    .filter((s) => !s.finished && s.parentShardIds.every((p) => byId.get(p)?.finished ?? true))
    .map((s) => s.shardId).sort(compareIds);
}

function liveOwner(input: AssignmentInput, shard: ShardToAssign): string | undefined {
  return shard.owner !== undefined && input.clients.includes(shard.owner) ? shard.owner : undefined;
}

/** The clients a shard without a live owner prefers: its own last owner, its parents' finishers (live ones). */
function oraclePreferences(input: AssignmentInput, shard: ShardToAssign): string[] {
  const byId = new Map(input.shards.map((s) => [s.shardId, s]));
  const finishers = shard.parentShardIds.map((p) => byId.get(p)?.lastOwner);
  return [shard.lastOwner, ...finishers].filter((c): c is string => c !== undefined && input.clients.includes(c));
}

function counts(input: AssignmentInput, assignment: ReadonlyMap<string, string>): Map<string, number> {
  const result = new Map([...new Set(input.clients)].map((c) => [c, 0]));
  for (const client of assignment.values()) result.set(client, (result.get(client) ?? 0) + 1);
  return result;
}

/** Shards taken away from their live owner. */
function moves(input: AssignmentInput, assignment: ReadonlyMap<string, string>): number {
  return input.shards.filter((s) => {
    const owner = liveOwner(input, s);
    return owner !== undefined && assignment.has(s.shardId) && assignment.get(s.shardId) !== owner;
  }).length;
}

/** Shards without a live owner that land on a client they prefer. */
function preferredPlacements(input: AssignmentInput, assignment: ReadonlyMap<string, string>): number {
  return input.shards.filter((s) => liveOwner(input, s) === undefined && assignment.has(s.shardId)
    && oraclePreferences(input, s).includes(assignment.get(s.shardId) ?? '')).length;
}

/**
 * The fewest moves any balanced assignment needs: a client above ⌈E/N⌉ must shed the excess, and
 * at most E mod N clients may keep ⌈E/N⌉ when they hold more than ⌊E/N⌋.
 */
function leastMoves(input: AssignmentInput): number {
  const clients = [...new Set(input.clients)];
  const eligible = new Set(oracleEligible(input.shards));
  const quota = Math.floor(eligible.size / clients.length);
  const extras = eligible.size % clients.length;
  const held = clients.map((c) => input.shards.filter((s) => eligible.has(s.shardId) && s.owner === c).length);
  const heavy = held.filter((h) => h > quota).length;
  return held.reduce((sum, h) => sum + Math.max(0, h - quota - 1), 0) + Math.max(0, heavy - extras);
}

/** Every balanced assignment of the eligible shards (small inputs only). */
function* balancedAssignments(input: AssignmentInput): Generator<Map<string, string>> {
  const clients = [...new Set(input.clients)].sort(compareIds);
  const eligible = oracleEligible(input.shards);
  const choice = eligible.map(() => 0);
  for (;;) {
    const assignment = new Map(eligible.map((s, i) => [s, clients[choice[i] ?? 0] ?? '']));
    const c = [...counts(input, assignment).values()];
    if (Math.max(...c) - Math.min(...c) <= 1) yield assignment;
    let i = 0;
    while (i < choice.length && choice[i] === clients.length - 1) choice[i++] = 0;
    if (i === choice.length) return;
    choice[i] = (choice[i] ?? 0) + 1;
  }
}

// ---------------------------------------------------------------- generators

const CLIENTS = ['a', 'b', 'c', 'd', 'e', 'f'];
const DEAD = ['x', 'y'];

/** A stream's shards after random splits and merges: ids in creation order, parents before children. */
const lineage = (maxRoots: number, maxReshards: number) => fc.record({
  roots: fc.integer({ min: 1, max: maxRoots }),
  reshards: fc.array(fc.record({ merge: fc.boolean(), pick: fc.nat(), other: fc.nat() }), { maxLength: maxReshards }),
}).map(({ roots, reshards }) => {
  const shards: Array<{ shardId: string; parentShardIds: string[]; open: boolean }> = [];
  const add = (parents: string[]) => { shards.push({ shardId: id(shards.length), parentShardIds: parents, open: true }); };
  for (let i = 0; i < roots; i += 1) add([]);
  for (const { merge, pick, other } of reshards) {
    const open = shards.filter((s) => s.open);
    const first = open[pick % open.length];
    if (first === undefined) break;
    const second = open.filter((s) => s !== first)[other % Math.max(1, open.length - 1)];
    if (merge && second !== undefined) {
      first.open = false;
      second.open = false;
      add([first.shardId, second.shardId].sort(compareIds));
    } else {
      first.open = false;
      add([first.shardId]);
      add([first.shardId]);
    }
  }
  return shards;
});

const someone = fc.option(fc.constantFrom(...CLIENTS, ...DEAD), { nil: undefined });

/** A group: live clients, and shards with finished flags (closed only), aged-out shards dropped, owners and last owners. */
const group = (options: { maxClients: number; maxRoots: number; maxReshards: number }) => fc.record({
  clients: fc.subarray(CLIENTS.slice(0, options.maxClients), { minLength: 1 }),
  shards: lineage(options.maxRoots, options.maxReshards).chain((shards) => fc.tuple(...shards.map((s) => fc.record({
    finished: s.open ? fc.constant(false) : fc.boolean(),
    dropped: s.open ? fc.constant(false) : fc.boolean(),
    owner: someone,
    lastOwner: someone,
  }).map((extra) => ({ ...s, ...extra }))))),
}).map(({ clients, shards }): AssignmentInput => ({
  clients,
  shards: shards.filter((s) => !s.dropped).map(({ shardId, parentShardIds, finished, owner, lastOwner }) => ({
    shardId, parentShardIds, finished, owner, lastOwner,
  })),
}));

const small = group({ maxClients: 3, maxRoots: 3, maxReshards: 3 });

/**
 * Children competing for their favourites: finished parents with live finishers, children with one
 * or two parents, their own last owners, and a few owned shards that use up room.
 */
const contested = fc.record({
  clients: fc.subarray(['a', 'b', 'c', 'd'], { minLength: 1 }),
  finishers: fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'x'), { minLength: 1, maxLength: 4 }),
  children: fc.array(fc.record({
    parents: fc.subarray([0, 1, 2, 3], { minLength: 1, maxLength: 2 }),
    lastOwner: fc.option(fc.constantFrom('a', 'b', 'c', 'd'), { nil: undefined }),
    owner: fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, { arbitrary: fc.constantFrom('a', 'b', 'c', 'd'), weight: 1 }),
  }), { minLength: 1, maxLength: 6 }),
}).map(({ clients, finishers, children }): AssignmentInput => ({
  clients,
  shards: [
    ...finishers.map((lastOwner, i) => ({ shardId: id(i), parentShardIds: [], finished: true, lastOwner })),
    ...children.map((child, i) => ({
      shardId: id(10 + i),
      parentShardIds: child.parents.filter((p) => p < finishers.length).map(id),
      finished: false,
      owner: child.owner,
      lastOwner: child.lastOwner,
    })),
  ],
}));
const large = group({ maxClients: 6, maxRoots: 12, maxReshards: 10 });

function sorted(assignment: ReadonlyMap<string, string>): Array<[string, string]> {
  return [...assignment].sort(([a], [b]) => compareIds(a, b));
}

/** `input` with every eligible shard owned as `assignment` says. */
function ownedAs(input: AssignmentInput, assignment: ReadonlyMap<string, string>): AssignmentInput {
  return { ...input, shards: input.shards.map((s) => (assignment.has(s.shardId) ? { ...s, owner: assignment.get(s.shardId) } : s)) };
}

// ---------------------------------------------------------------- properties

describe('assignment', () => {
  describe('properties', () => {
    it('assigns every eligible shard exactly once, to a live client, and nothing else', () => {
      fc.assert(fc.property(large, (input) => {
        const assignment = assignShards(input);
        expect([...assignment.keys()]).to.deep.equal(oracleEligible(input.shards));
        for (const client of assignment.values()) expect(input.clients).to.include(client);
        expect(eligibleShardIds(input.shards)).to.deep.equal(oracleEligible(input.shards));
      }), { numRuns: 500 });
    });

    it('balances: per-client counts differ by at most one', () => {
      fc.assert(fc.property(large, (input) => {
        const c = [...counts(input, assignShards(input)).values()];
        expect(Math.max(...c) - Math.min(...c)).to.be.at.most(1);
      }), { numRuns: 500 });
    });

    it('does not depend on input order (shuffled clients and shards, repeated client ids)', () => {
      fc.assert(fc.property(large, fc.array(fc.nat()), fc.array(fc.nat()), (input, clientKeys, shardKeys) => {
        const shuffle = <T>(items: readonly T[], keys: number[]) => items
          .map((item, i) => ({ item, key: keys[i % Math.max(1, keys.length)] ?? 0, i }))
          .sort((a, b) => a.key - b.key || b.i - a.i).map((x) => x.item);
        const shuffled = { clients: [...shuffle(input.clients, clientKeys), ...input.clients], shards: shuffle(input.shards, shardKeys) };
        expect(sorted(assignShards(shuffled))).to.deep.equal(sorted(assignShards(input)));
      }), { numRuns: 300 });
    });

    it('is sticky: once the owners follow the assignment, the assignment stays as it is', () => {
      fc.assert(fc.property(large, (input) => {
        const first = assignShards(input);
        const again = assignShards(ownedAs(input, first));
        expect(sorted(again)).to.deep.equal(sorted(first));
        expect(moves(ownedAs(input, first), again)).to.equal(0);
      }), { numRuns: 300 });
    });

    it('moves no more shards than balance requires (exhaustive check on small groups)', () => {
      fc.assert(fc.property(fc.oneof(small, contested), (input) => {
        const ours = moves(input, assignShards(input));
        let least = Infinity;
        for (const candidate of balancedAssignments(input)) least = Math.min(least, moves(input, candidate));
        expect(ours).to.equal(least);
        expect(ours).to.equal(leastMoves(input));
      }), { numRuns: 300 });
    });

    it('moves the least balance requires on random groups (the lower bound, reached)', () => {
      fc.assert(fc.property(large, (input) => {
        expect(moves(input, assignShards(input))).to.equal(leastMoves(input));
      }), { numRuns: 500 });
    });

    it('after a client joins a settled group, moves exactly what the newcomer needs; after one leaves, moves nothing', () => {
      fc.assert(fc.property(large, fc.constantFrom(...CLIENTS), (input, changed) => {
        const settled = ownedAs(input, assignShards(input));
        if (!settled.clients.includes(changed)) {
          const joined = { ...settled, clients: [...settled.clients, changed] };
          const after = assignShards(joined);
          const newcomer = [...after.values()].filter((c) => c === changed).length;
          const unownedBefore = settled.shards.filter((s) => after.has(s.shardId) && liveOwner(settled, s) === undefined).length;
          expect(unownedBefore).to.equal(0);
          expect(moves(joined, after)).to.equal(leastMoves(joined));
          expect(moves(joined, after)).to.equal(newcomer);
          expect(newcomer).to.equal(Math.floor(after.size / joined.clients.length));
        } else if (settled.clients.length > 1) {
          const left = { ...settled, clients: settled.clients.filter((c) => c !== changed) };
          const after = assignShards(left);
          expect(moves(left, after)).to.equal(0);
          for (const [shardId, client] of assignShards(settled)) {
            if (client !== changed) expect(after.get(shardId)).to.equal(client);
          }
        }
      }), { numRuns: 500 });
    });

    it('places as many unowned shards on a client they prefer as any least-moves balanced assignment can (exhaustive)', () => {
      fc.assert(fc.property(fc.oneof({ arbitrary: small, weight: 1 }, { arbitrary: contested, weight: 3 }), (input) => {
        const ours = assignShards(input);
        const least = leastMoves(input);
        let best = 0;
        for (const candidate of balancedAssignments(input)) {
          if (moves(input, candidate) === least) best = Math.max(best, preferredPlacements(input, candidate));
        }
        expect(preferredPlacements(input, ours)).to.equal(best);
      }), { numRuns: 1000 });
    });

    it("puts a child on its parent's finisher unless the finisher is at least as loaded as the child's client", () => {
      fc.assert(fc.property(fc.oneof(large, contested), (input) => {
        const assignment = assignShards(input);
        const load = counts(input, assignment);
        for (const shard of input.shards) {
          const client = assignment.get(shard.shardId);
          if (client === undefined || liveOwner(input, shard) !== undefined) continue;
          const preferred = oraclePreferences(input, shard);
          // Moving it to a favourite with fewer shards would keep the balance and cost no move.
          if (!preferred.includes(client)) {
            for (const favourite of preferred) expect(load.get(favourite)).to.be.at.least(load.get(client) ?? 0);
          }
        }
      }), { numRuns: 500 });
    });
  });

  describe('worked examples', () => {
    const shards = (n: number, owners: Record<number, string> = {}): ShardToAssign[] =>
      Array.from({ length: n }, (_, i) => ({ shardId: id(i), parentShardIds: [], finished: false, owner: owners[i] }));
    const byClient = (assignment: ReadonlyMap<string, string>) => {
      const out: Record<string, number[]> = {};
      for (const [shardId, client] of sorted(assignment)) (out[client] ??= []).push(Number(shardId.slice(-12)));
      return out;
    };

    it('2 clients, 6 new shards: 3 each, in id order', () => {
      expect(byClient(assignShards({ clients: ['b', 'a'], shards: shards(6) }))).to.deep.equal({ a: [0, 1, 2], b: [3, 4, 5] });
    });

    it('c joins a and b (3 shards each): each gives up its highest shard; 2 moves, the least possible', () => {
      const input = { clients: ['a', 'b', 'c'], shards: shards(6, { 0: 'a', 1: 'a', 2: 'a', 3: 'b', 4: 'b', 5: 'b' }) };
      const assignment = assignShards(input);
      expect(byClient(assignment)).to.deep.equal({ a: [0, 1], b: [3, 4], c: [2, 5] });
      expect(assignmentChanges(assignment, 'a', ['shardId-000000000000', 'shardId-000000000001', 'shardId-000000000002']))
        .to.deep.equal({ acquire: [], release: ['shardId-000000000002'] });
      expect(assignmentChanges(assignment, 'c', [])).to.deep.equal({ acquire: ['shardId-000000000002', 'shardId-000000000005'], release: [] });
    });

    it('c crashes (its row expires): its 2 shards go one to a, one to b; nothing else moves', () => {
      const input = { clients: ['a', 'b'], shards: shards(6, { 0: 'a', 1: 'a', 2: 'c', 3: 'b', 4: 'b', 5: 'c' }) };
      expect(byClient(assignShards(input))).to.deep.equal({ a: [0, 1, 2], b: [3, 4, 5] });
    });

    it('7 shards on 3 clients, b holding 4: b keeps 3 (the one larger share), its 4th and the new ones fill a and c', () => {
      const input = { clients: ['a', 'b', 'c'], shards: shards(7, { 0: 'b', 1: 'b', 2: 'b', 3: 'b', 4: 'a' }) };
      const assignment = assignShards(input);
      expect(byClient(assignment)).to.deep.equal({ a: [3, 4], b: [0, 1, 2], c: [5, 6] });
      expect(moves(input, assignment)).to.equal(1);
    });

    it('a split waits for its parent, then both children go to the client that finished it', () => {
      const before: ShardToAssign[] = [
        ...shards(4, { 0: 'a', 1: 'a', 2: 'b', 3: 'b' }),
        { shardId: id(4), parentShardIds: [id(0)], finished: false },
        { shardId: id(5), parentShardIds: [id(0)], finished: false },
      ];
      expect(byClient(assignShards({ clients: ['a', 'b'], shards: before }))).to.deep.equal({ a: [0, 1], b: [2, 3] });
      const after = before.map((s) => (s.shardId === id(0) ? { ...s, finished: true, owner: undefined, lastOwner: 'a' } : s));
      expect(byClient(assignShards({ clients: ['a', 'b'], shards: after }))).to.deep.equal({ a: [1, 4, 5], b: [2, 3] });
    });

    it('a merge waits for both parents; then the child goes to the finisher (a parent missing from the list counts as finished)', () => {
      const child: ShardToAssign = { shardId: id(9), parentShardIds: [id(0), id(1)], finished: false };
      const oneDone: ShardToAssign[] = [
        { shardId: id(0), parentShardIds: [], finished: true, lastOwner: 'a' },
        { shardId: id(1), parentShardIds: [], finished: false, owner: 'b' },
        child,
      ];
      expect(eligibleShardIds(oneDone)).to.deep.equal([id(1)]);
      // Shard 0 aged out of the list; b finished shard 1.
      const bothDone: ShardToAssign[] = [{ shardId: id(1), parentShardIds: [], finished: true, lastOwner: 'b' }, child];
      expect(eligibleShardIds(bothDone)).to.deep.equal([id(9)]);
      expect(byClient(assignShards({ clients: ['a', 'b'], shards: bothDone }))).to.deep.equal({ b: [9] });
    });

    it('a finisher with no room left: the child goes where balance needs it', () => {
      const input = {
        clients: ['a', 'b'],
        shards: [
          ...shards(3, { 1: 'a', 2: 'a' }).slice(1),
          { shardId: id(0), parentShardIds: [], finished: true, lastOwner: 'a' },
          { shardId: id(3), parentShardIds: [id(0)], finished: false },
          { shardId: id(4), parentShardIds: [id(0)], finished: false },
        ],
      };
      expect(byClient(assignShards(input))).to.deep.equal({ a: [1, 2], b: [3, 4] });
    });

    it('children of four finishers: one moves to its second favourite so that every child lands on a favourite', () => {
      // 6 shards on 4 clients: two clients get 2. Taken in id order, 10 goes to d and 11 gives d a
      // second, 12-13 give g two, and f would find both larger shares taken: 10 must move to e.
      const finished = (n: number, by: string): ShardToAssign => ({ shardId: id(n), parentShardIds: [], finished: true, lastOwner: by });
      const child = (n: number, parent: number, lastOwner?: string): ShardToAssign => ({ shardId: id(n), parentShardIds: [id(parent)], finished: false, lastOwner });
      const input = {
        clients: ['d', 'e', 'f', 'g'],
        shards: [finished(0, 'd'), finished(1, 'e'), finished(2, 'g'), finished(3, 'f'),
          child(10, 1, 'd'), child(11, 0), child(12, 2), child(13, 2), child(14, 3), child(15, 3)],
      };
      expect(byClient(assignShards(input))).to.deep.equal({ d: [11], e: [10], f: [14, 15], g: [12, 13] });
    });

    it('restarted clients (same ids) get back the shards they released', () => {
      const lastOwners: Record<number, string> = { 2: 'c', 3: 'c', 4: 'b', 5: 'b' };
      const released = shards(6, { 0: 'a', 1: 'a' }).map((s, i) => ({ ...s, lastOwner: lastOwners[i] }));
      expect(byClient(assignShards({ clients: ['a', 'b', 'c'], shards: released }))).to.deep.equal({ a: [0, 1], b: [4, 5], c: [2, 3] });
      // Without last owners, the same shards fill b then c in id order.
      expect(byClient(assignShards({ clients: ['a', 'b', 'c'], shards: shards(6, { 0: 'a', 1: 'a' }) })))
        .to.deep.equal({ a: [0, 1], b: [2, 3], c: [4, 5] });
    });

    it('no clients: nothing assigned; duplicate shard ids are refused', () => {
      expect(assignShards({ clients: [], shards: shards(3) }).size).to.equal(0);
      expect(() => assignShards({ clients: ['a'], shards: [...shards(1), ...shards(1)] })).to.throw(TypeError, /listed twice/);
    });

    it('assignmentChanges releases held shards that are no longer eligible', () => {
      const assignment = assignShards({ clients: ['a'], shards: [{ shardId: 's1', parentShardIds: [], finished: true, owner: 'a' }] });
      expect(assignmentChanges(assignment, 'a', ['s1'])).to.deep.equal({ acquire: [], release: ['s1'] });
    });
  });
});
