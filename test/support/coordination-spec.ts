// One behavioural spec for every MembershipStore and MetadataStore: the DynamoDB stores (on each
// tier of local servers) and the in-memory ones run the same tests, so the fakes the coordinator is
// tested with cannot drift from what DynamoDB does.
import { expect } from 'chai';
import { type Observable, firstValueFrom } from 'rxjs';
import type { CachedShard, LiveClient, MemberView, MembershipStore, MetadataStore } from '../../src/ports/coordination.js';
import { nanosFromMillis } from '../../src/dynamodb/codec.js';
import { readFileSync } from 'node:fs';

/** What every heartbeat of this library writes as `Library`: its name and the package's version. */
const MARKER = `kinsumer-ts/${(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version}`;

/** What a store is built from in a test. */
export interface SpecStoreOptions {
  readonly clientId: string;
  readonly clientName: string;
  /** The process's instance id (membership only). */
  readonly instanceId: string;
  readonly leaseTtlMs: number;
  /** The wall clock, written as LastUpdate. */
  readonly now: () => number;
  /** The monotonic clock expiry is timed on (default: `now`). */
  readonly elapsedNow?: () => number;
  readonly reapAfterMs?: number;
}

/** Stores of several clients over the same (fresh, empty) tables. */
export interface SpecGroup {
  membership(options: SpecStoreOptions): MembershipStore;
  metadata(options: SpecStoreOptions): MetadataStore;
}

/** Builds a group with fresh tables for each test. */
export type SpecHarness = () => Promise<SpecGroup>;

// Nanosecond timestamps of today are beyond 2^53: every comparison below exercises BigInt.
const T0 = 1_764_694_956_123;
const TTL = 15_000;

function setup(harness: SpecHarness) {
  const clock = { now: T0 };
  let group: SpecGroup;
  beforeEach(async () => {
    clock.now = T0;
    group = await harness();
  });
  const options = (clientId: string, extra: Partial<SpecStoreOptions> = {}): SpecStoreOptions => ({
    clientId, clientName: `${clientId}-host`, instanceId: `${clientId}#1`, leaseTtlMs: TTL, now: () => clock.now, ...extra,
  });
  return {
    clock,
    membership: (clientId: string, extra?: Partial<SpecStoreOptions>) => group.membership(options(clientId, extra)),
    metadata: (clientId: string, extra?: Partial<SpecStoreOptions>) => group.metadata(options(clientId, extra)),
  };
}

const run = <T>(observable: Observable<T>) => firstValueFrom(observable);

/** The MembershipStore contract. */
export function membershipSpec(harness: SpecHarness): void {
  describe('MembershipStore behaviour', () => {
    const { clock, membership } = setup(harness);

    /** What the tests compare of a live client (the heartbeat bounds depend on the reader's history). */
    const seen = (c: LiveClient) => ({
      id: c.id, name: c.name, lastUpdateNs: c.lastUpdateNs, shardIds: c.shardIds, unchangedForMs: c.unchangedForMs, instanceId: c.instanceId, library: c.library,
      incarnation: c.incarnation, wants: c.wants, draining: c.draining,
    });
    const LIFE = Math.floor(T0 / 1000);

    it('heartbeat registers the client in a first life (the creation time in seconds) with its name, time, held shards (sorted, once each), wants and instance id; liveClients lists by id', async () => {
      expect(await run(membership('b').heartbeat(['shardId-2', 'shardId-1', 'shardId-2']))).to.deep.include({ registered: true, incarnation: LIFE, newLife: true, drainRequested: false, revoked: [] });
      clock.now += 10;
      await run(membership('a').heartbeat([], { wants: ['shardId-9'] }));
      const live = await run(membership('c').liveClients());
      expect(live.map(seen)).to.deep.equal([
        { id: 'a', name: 'a-host', lastUpdateNs: nanosFromMillis(T0 + 10), shardIds: [], unchangedForMs: 0, instanceId: 'a#1', library: MARKER, incarnation: Math.floor((T0 + 10) / 1000), wants: ['shardId-9'], draining: undefined },
        { id: 'b', name: 'b-host', lastUpdateNs: nanosFromMillis(T0), shardIds: ['shardId-1', 'shardId-2'], unchangedForMs: 0, instanceId: 'b#1', library: MARKER, incarnation: LIFE, wants: [], draining: undefined },
      ]);
      expect(live.map((c) => c.expiresInMs), 'new to the reader: live for a TTL').to.deep.equal([TTL, TTL]);
    });

    it('a heartbeat replaces the previous row (held shards are not appended); the same process stays in its life; draining is written', async () => {
      const a = membership('a');
      await run(a.heartbeat(['s1', 's2']));
      clock.now += 1000;
      expect(await run(a.heartbeat(['s3'], { draining: true }))).to.deep.equal({ registered: true, incarnation: LIFE, newLife: false, drainRequested: false, revoked: [] });
      expect((await run(a.liveClients())).map(seen)).to.deep.equal([{
        id: 'a', name: 'a-host', lastUpdateNs: nanosFromMillis(T0 + 1000), shardIds: ['s3'], unchangedForMs: 0, instanceId: 'a#1', library: MARKER, incarnation: LIFE, wants: [], draining: true,
      }]);
    });

    it('a row with a life expires one TTL after the reader\'s bound on its last heartbeat\'s send; a heartbeat makes it live again; a row new to a reader is live', async () => {
      const a = membership('a');
      await run(a.heartbeat([]));
      const reader = membership('r');
      // An hour later on the reader's clock: LastUpdate is not a time to the reader, and it has seen nothing yet.
      clock.now = T0 + 3_600_000;
      expect((await run(reader.liveClients())).map((c) => [c.id, c.expiresInMs])).to.deep.equal([['a', TTL]]);
      clock.now += TTL - 1;
      expect((await run(reader.liveClients())).map((c) => [c.id, c.expiresInMs])).to.deep.equal([['a', 1]]);
      clock.now += 1;
      expect(await run(reader.liveClients()), 'a TTL past the bound').to.deep.equal([]);
      await run(a.heartbeat([]));
      expect((await run(reader.liveClients())).map((c) => c.id), 'a heartbeat makes it live again').to.deep.equal(['a']);
      // Two heartbeats seen: the second bounds the send to the moment it was read (a read right after it).
      clock.now += TTL - 1;
      expect((await run(reader.liveClients())).map((c) => [c.id, c.expiresInMs])).to.deep.equal([['a', 1]]);
      expect((await run(membership('late').liveClients())).map((c) => c.id), 'a reader that just came').to.deep.equal(['a']);
    });

    it('the bound tightens with every read: a heartbeat first seen late is still timed by the earliest reads of the others', async () => {
      const a = membership('a');
      const reader = membership('r');
      // a heartbeats every 5 s; the reader reads 100 ms after the first beat, then late (4.9 s after the next).
      await run(a.heartbeat([]));
      clock.now += 100;
      await run(reader.liveClients());
      clock.now += 4900;
      await run(a.heartbeat([]));
      clock.now += 4900;
      const [late] = await run(reader.liveClients());
      // The last beat was sent 4.9 s ago: it expires TTL after its send (+ the 100 ms the first read was late), not TTL after this read.
      expect(late?.expiresInMs).to.equal(TTL - 4900 + 100);
    });

    for (const [label, skewMs] of [['5 minutes ahead', 300_000], ['5 minutes behind', -300_000]] as const) {
      it(`a writer whose clock runs ${label} is live while it heartbeats and expires one TTL after it stops, like any other`, async () => {
        const skewed = membership('skewed', { now: () => clock.now + skewMs, elapsedNow: () => clock.now });
        const reader = membership('r');
        for (let beat = 0; beat < 4; beat += 1) {
          await run(skewed.heartbeat([]));
          expect((await run(reader.liveClients())).map((c) => c.id), `beat ${beat}`).to.deep.equal(['skewed']);
          clock.now += TTL / 3;
        }
        clock.now += TTL;
        expect(await run(reader.liveClients())).to.deep.equal([]);
      });
    }

    it('R10: a forward step of the reader\'s wall clock makes no live client dead; a backward step delays no expiry (the monotonic clock times it)', async () => {
      const a = membership('a');
      await run(a.heartbeat([]));
      let stepMs = 0;
      const reader = membership('r', { now: () => clock.now + stepMs, elapsedNow: () => clock.now });
      expect((await run(reader.liveClients())).map((c) => c.id)).to.deep.equal(['a']);
      clock.now += 1000;
      stepMs = 20_000;
      expect((await run(reader.liveClients())).map((c) => [c.id, c.unchangedForMs]), 'heartbeat 1 s ago').to.deep.equal([['a', 1000]]);
      stepMs = -60_000;
      clock.now += TTL - 1000;
      expect(await run(reader.liveClients()), 'stood still for a TTL of monotonic time').to.deep.equal([]);
    });

    it('static membership: a second process with the same clientId takes the place at once (its life raised, the old shards its claim); the first one\'s next heartbeat is refused', async () => {
      const first = membership('same', { instanceId: 'same#1' });
      const second = membership('same', { instanceId: 'same#2' });
      await run(first.heartbeat(['s1', 's2']));
      expect(await run(second.heartbeat([]))).to.deep.equal({ registered: true, incarnation: LIFE + 1, newLife: true, drainRequested: false, revoked: [], claimed: ['s1', 's2'] });
      expect((await run(membership('r').liveClients())).map((c) => [c.id, c.instanceId, c.incarnation, c.shardIds])).to.deep.equal([['same', 'same#2', LIFE + 1, ['s1', 's2']]]);
      clock.now += 1000;
      expect(await run(first.heartbeat(['s1', 's2']))).to.deep.equal({ registered: false, replacedBy: 'same#2' });
      expect(await run(second.heartbeat(['s1']))).to.deep.include({ registered: true, incarnation: LIFE + 1, newLife: false });
      // The view the lease store judges by: the earlier life is over, the new one is this process's.
      expect((second as unknown as MemberView).self()).to.deep.equal({ clientId: 'same', incarnation: LIFE + 1 });
      const reader = membership('r2');
      await run(reader.liveClients());
      // The replaced process may emit until its next heartbeat is refused: its leases are over to
      // other members only a TTL after they saw the new life (the new process takes them at once).
      expect((reader as unknown as MemberView).life('same', LIFE)).to.equal('expired');
      expect((reader as unknown as MemberView).life('same', LIFE + 1)).to.equal('live');
      clock.now += TTL;
      await run(second.heartbeat(['s1']));
      await run(reader.liveClients());
      expect((reader as unknown as MemberView).life('same', LIFE)).to.equal('ended');
    });

    // Found by the simulator (seed 112 of every kind, issue 32): a process stopping after its
    // pipeline failed was refused (replaced) and sent one more heartbeat — the refusal's answer
    // lost to a fault, or a heartbeat already due — which registered as a newcomer and took the
    // place back from the process that had replaced it; both then emitted (twin-emission).
    it('a replaced process stays replaced: any later heartbeat of it is refused, never a take-over of the place back', async () => {
      const first = membership('same', { instanceId: 'same#1' });
      const second = membership('same', { instanceId: 'same#2' });
      await run(first.heartbeat(['s1']));
      await run(second.heartbeat([]));
      clock.now += 1000;
      expect(await run(first.heartbeat(['s1']))).to.deep.equal({ registered: false, replacedBy: 'same#2' });
      clock.now += 1000;
      expect(await run(first.heartbeat(['s1'])), 'a heartbeat after the refusal').to.deep.equal({ registered: false, replacedBy: 'same#2' });
      expect((await run(membership('r').liveClients())).map((c) => [c.id, c.instanceId, c.incarnation])).to.deep.equal([['same', 'same#2', LIFE + 1]]);
      expect(await run(second.heartbeat([]))).to.deep.include({ registered: true, incarnation: LIFE + 1, newLife: false });
    });

    it('endExpired ends an expired life (Ended on the row, as read): the reader judges it ended, its heartbeat starts a new life; a heartbeat in between keeps it', async () => {
      const a = membership('a');
      const reader = membership('r');
      await run(a.heartbeat(['s1']));
      await run(reader.liveClients());
      clock.now += TTL;
      expect(await run(reader.liveClients()), 'expired for the reader').to.deep.equal([]);
      expect((reader as unknown as MemberView).life('a', LIFE)).to.equal('expired');
      // a heartbeats before the reader ends it: the end is refused, the life goes on.
      await run(a.heartbeat(['s1']));
      expect(await run(reader.endExpired())).to.deep.equal([]);
      expect((reader as unknown as MemberView).life('a', LIFE)).to.equal('live');
      clock.now += 2 * TTL;
      expect(await run(reader.liveClients())).to.deep.equal([]);
      expect(await run(reader.endExpired())).to.deep.equal(['a']);
      expect((reader as unknown as MemberView).life('a', LIFE)).to.equal('ended');
      expect(await run(membership('r2').liveClients()), 'ended for every reader').to.deep.equal([]);
      // Back: its heartbeat is refused by the end and starts a new life (its leases of the old one are lost).
      const back = await run(a.heartbeat([]));
      expect(back).to.deep.include({ registered: true, newLife: true, incarnation: LIFE + 1 });
      expect((await run(reader.liveClients())).map((c) => [c.id, c.incarnation])).to.deep.equal([['a', LIFE + 1]]);
    });

    it('a heartbeat after the row was deleted writes it again in the same life; a process that deleted its row (graceful stop) leaves it to the next one', async () => {
      const a = membership('a');
      await run(a.heartbeat([]));
      await run(a.deregister());
      expect(await run(a.heartbeat(['s1']))).to.deep.include({ registered: true, incarnation: LIFE, newLife: false });
      const fresh = membership('a', { instanceId: 'a#2' });
      expect(await run(fresh.heartbeat([]))).to.deep.include({ registered: true, newLife: true, incarnation: LIFE + 1 });
      await run(a.deregister());
      expect((await run(membership('r').liveClients())).map((c) => c.instanceId), 'the old process deletes only its own row').to.deep.equal(['a#2']);
    });

    it('deregister deletes only this client\'s row, and may be repeated', async () => {
      await run(membership('a').heartbeat([]));
      await run(membership('b').heartbeat([]));
      await run(membership('a').deregister());
      await run(membership('a').deregister());
      expect((await run(membership('r').liveClients())).map((c) => c.id)).to.deep.equal(['b']);
    });

    it('reapStale deletes rows older than the reap age (strictly), keeps the others, and names what it deleted', async () => {
      const reapAfterMs = 60_000;
      await run(membership('old-2').heartbeat([]));
      await run(membership('old-1').heartbeat([]));
      clock.now = T0 + 1;
      await run(membership('edge').heartbeat([]));
      clock.now = T0 + 2;
      await run(membership('recent').heartbeat([]));
      clock.now = T0 + 1 + reapAfterMs;
      const leader = membership('leader', { reapAfterMs });
      await run(leader.heartbeat([]));
      expect(await run(leader.reapStale())).to.deep.equal(['old-1', 'old-2']);
      expect(await run(leader.reapStale())).to.deep.equal([]);
      // Rows too young to reap are still there: a reader whose clock is back at T0 + 1 sees them live.
      clock.now = T0 + 1;
      expect((await run(membership('r').liveClients())).map((c) => c.id)).to.deep.equal(['edge', 'leader', 'recent']);
    });
  });
}

/** The MetadataStore contract. */
export function metadataSpec(harness: SpecHarness): void {
  describe('MetadataStore behaviour', () => {
    const { clock, metadata } = setup(harness);

    it('acquires a free lock, renews it, and names the holder', async () => {
      const a = metadata('a');
      expect(await run(a.leader())).to.equal(undefined);
      expect(await run(a.acquireLeadership())).to.equal(true);
      expect(await run(metadata('b').leader())).to.deep.equal({ id: 'a', name: 'a-host', lastUpdateNs: nanosFromMillis(T0) });
      clock.now += 5000;
      expect(await run(a.acquireLeadership())).to.equal(true);
      expect((await run(a.leader()))?.lastUpdateNs).to.equal(nanosFromMillis(T0 + 5000));
    });

    it('refuses a lock held and renewed by another client (an answer, not an error)', async () => {
      expect(await run(metadata('a').acquireLeadership())).to.equal(true);
      clock.now = T0 + TTL - 1;
      expect(await run(metadata('b').acquireLeadership())).to.equal(false);
      expect((await run(metadata('b').leader()))?.id).to.equal('a');
    });

    it('takes over a lock only once it has seen it unchanged for leaseTtlMs on its own clock, whatever the holder\'s clock', async () => {
      // The holder's clock runs 5 minutes behind: its LastUpdate looks ancient, which must not matter.
      const a = metadata('a', { now: () => clock.now - 300_000 });
      const b = metadata('b');
      expect(await run(a.acquireLeadership())).to.equal(true);
      expect(await run(b.acquireLeadership()), 'new to b: held').to.equal(false);
      clock.now += TTL - 1;
      expect(await run(b.acquireLeadership())).to.equal(false);
      expect(await run(a.acquireLeadership()), 'renewed').to.equal(true);
      expect(await run(b.acquireLeadership()), 'b sees the renewal').to.equal(false);
      clock.now += TTL - 1;
      expect((await run(b.leader()))?.id, 'unchanged for less than a TTL since b saw the renewal').to.equal('a');
      clock.now += 1;
      expect(await run(b.leader()), 'seen unchanged for a TTL: no leader').to.equal(undefined);
      expect(await run(b.acquireLeadership())).to.equal(true);
      expect(await run(a.acquireLeadership()), 'the old holder lost it').to.equal(false);
      expect((await run(a.leader()))?.id).to.equal('b');
    });

    it('R10: a forward step of the wall clock takes no live leader lock; a backward step delays no expiry (the monotonic clock times it)', async () => {
      const a = metadata('a');
      let stepMs = 0;
      const b = metadata('b', { now: () => clock.now + stepMs, elapsedNow: () => clock.now });
      expect(await run(a.acquireLeadership())).to.equal(true);
      expect(await run(b.acquireLeadership())).to.equal(false);
      clock.now += 1000;
      stepMs = 20_000;
      expect(await run(b.acquireLeadership()), 'renewed 1 s ago (real time)').to.equal(false);
      expect((await run(b.leader()))?.id).to.equal('a');
      stepMs = -60_000;
      clock.now += TTL - 1000;
      expect(await run(b.acquireLeadership()), 'stood still for a TTL of monotonic time').to.equal(true);
    });

    it('steps down: the lock is free at once; only the holder can step down', async () => {
      const a = metadata('a');
      expect(await run(a.stepDown()), 'no lock yet').to.equal(false);
      await run(a.acquireLeadership());
      expect(await run(metadata('b').stepDown()), 'not the holder').to.equal(false);
      expect((await run(a.leader()))?.id).to.equal('a');
      clock.now += 10;
      expect(await run(a.stepDown())).to.equal(true);
      expect(await run(a.leader())).to.equal(undefined);
      expect(await run(a.stepDown()), 'already stepped down').to.equal(false);
      expect(await run(metadata('b').acquireLeadership())).to.equal(true);
      expect(await run(a.acquireLeadership())).to.equal(false);
    });

    it('a client that stepped down can take the lock again', async () => {
      const a = metadata('a');
      await run(a.acquireLeadership());
      await run(a.stepDown());
      expect(await run(a.acquireLeadership())).to.equal(true);
    });

    const shards: CachedShard[] = [
      { shardId: 'shardId-000000000003', parentShardIds: ['shardId-000000000000', 'shardId-000000000001'], open: true, finished: false },
      { shardId: 'shardId-000000000000', parentShardIds: [], open: false, finished: true },
      { shardId: 'shardId-000000000002', parentShardIds: [], open: true, finished: false },
      { shardId: 'shardId-000000000001', parentShardIds: [], open: false, finished: false },
    ];

    it('has no shard cache until one is written', async () => {
      expect(await run(metadata('a').readShardCache())).to.equal(undefined);
    });

    it('round-trips the shard cache with parents and states; ShardIDs lists the unfinished shards, sorted', async () => {
      await run(metadata('leader').writeShardCache(shards));
      const cache = await run(metadata('a').readShardCache());
      expect(cache).to.deep.equal({
        shardIds: ['shardId-000000000001', 'shardId-000000000002', 'shardId-000000000003'],
        shards: [...shards].sort((x, y) => (x.shardId < y.shardId ? -1 : 1)),
        lastUpdateNs: nanosFromMillis(T0),
      });
    });

    it('a write replaces the cache; an empty list is a cache with no shards (not a missing one)', async () => {
      const leader = metadata('leader');
      await run(leader.writeShardCache(shards));
      clock.now += 1;
      await run(leader.writeShardCache([{ shardId: 'only', parentShardIds: [], open: true, finished: false }]));
      expect((await run(leader.readShardCache()))?.shardIds).to.deep.equal(['only']);
      clock.now += 1;
      await run(leader.writeShardCache([]));
      expect(await run(leader.readShardCache())).to.deep.equal({ shardIds: [], shards: [], lastUpdateNs: nanosFromMillis(T0 + 2) });
    });

    it('refuses a shard list with a repeated id or an open finished shard', async () => {
      const leader = metadata('leader');
      const again = await run(leader.writeShardCache([shards[0] as CachedShard, shards[0] as CachedShard])).catch((e: unknown) => e);
      expect(again).to.be.instanceOf(TypeError);
      const impossible = await run(leader.writeShardCache([{ shardId: 's', parentShardIds: [], open: true, finished: true }])).catch((e: unknown) => e);
      expect(impossible).to.be.instanceOf(TypeError);
      expect(await run(leader.readShardCache())).to.equal(undefined);
    });

    it('the group epoch is 0 until a member bumps it; every bump adds one, for every reader; concurrent bumps are all counted', async () => {
      const a = metadata('a');
      const b = metadata('b');
      expect(await run(b.groupEpoch())).to.equal(0);
      await run(a.bumpGroupEpoch());
      expect(await run(b.groupEpoch())).to.equal(1);
      await Promise.all([run(a.bumpGroupEpoch()), run(b.bumpGroupEpoch()), run(metadata('c').bumpGroupEpoch())]);
      expect(await run(a.groupEpoch())).to.equal(4);
    });

    it('bumping the group epoch leaves the leader lock and the shard cache as they were', async () => {
      const a = metadata('a');
      await run(a.acquireLeadership());
      await run(a.writeShardCache(shards));
      const cache = await run(a.readShardCache());
      clock.now += 10;
      await run(metadata('b').bumpGroupEpoch());
      expect(await run(metadata('c').leader())).to.deep.equal({ id: 'a', name: 'a-host', lastUpdateNs: nanosFromMillis(T0) });
      expect(await run(metadata('c').readShardCache())).to.deep.equal(cache);
    });
  });
}
