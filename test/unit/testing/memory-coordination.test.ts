import { expect } from 'chai';
import { firstValueFrom, forkJoin } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { nanosFromMillis } from '../../../src/dynamodb/codec.js';
import { TableNotFoundError } from '../../../src/errors/kinsumer-errors.js';
import {
  MemoryCoordinationTables, MemoryMembershipStore, MemoryMetadataStore,
} from '../../../src/testing/memory-coordination.js';
import { membershipSpec, metadataSpec, type SpecHarness } from '../../support/coordination-spec.js';

describe('in-memory coordination stores', () => {
  // The same spec the DynamoDB stores pass (test/conformance/coordination-stores.test.ts).
  const harness: SpecHarness = () => {
    const tables = new MemoryCoordinationTables();
    return Promise.resolve({
      membership: (options) => new MemoryMembershipStore({ ...options, tables }),
      metadata: (options) => new MemoryMetadataStore({ ...options, tables }),
    });
  };
  membershipSpec(harness);
  metadataSpec(harness);

  const T0 = 1_764_694_956_123;
  const newScheduler = () => new TestScheduler((a, b) => { expect(a).to.deep.equal(b); });

  it('reads a row written by another writer as is (a Go client: no Shards attribute)', async () => {
    const tables = new MemoryCoordinationTables();
    tables.putClient({ id: 'go', name: undefined, lastUpdateNs: nanosFromMillis(T0), shardIds: undefined });
    const store = new MemoryMembershipStore({ clientId: 'ts', leaseTtlMs: 15_000, now: () => T0, tables });
    expect(await firstValueFrom(store.liveClients())).to.deep.equal([{
      id: 'go', name: undefined, lastUpdateNs: nanosFromMillis(T0), shardIds: undefined, unchangedForMs: 0, expiresInMs: 15_000, instanceId: undefined, library: undefined,
    }]);
  });

  it('a Go-written shard cache (ShardIDs only) reads with unknown lineage', async () => {
    const tables = new MemoryCoordinationTables();
    tables.putShardCache({ shardIds: ['s1'], shards: undefined, lastUpdateNs: undefined });
    const store = new MemoryMetadataStore({ clientId: 'ts', leaseTtlMs: 15_000, now: () => T0, tables });
    expect(await firstValueFrom(store.readShardCache())).to.deep.equal({ shardIds: ['s1'], shards: undefined, lastUpdateNs: undefined });
  });

  it('failNext fails the next matching call without touching the tables, and counts calls', async () => {
    const store = new MemoryMembershipStore({ clientId: 'a', leaseTtlMs: 15_000, now: () => T0 });
    const missing = new TableNotFoundError('app_clients');
    store.failNext(missing, ['heartbeat']);
    expect(await firstValueFrom(store.liveClients())).to.deep.equal([]);
    expect(await firstValueFrom(store.heartbeat(['s'])).catch((e: unknown) => e)).to.equal(missing);
    expect(store.tables.clients()).to.deep.equal([]);
    await firstValueFrom(store.heartbeat(['s']));
    expect(store.tables.client('a')?.shardIds).to.deep.equal(['s']);
    expect(store.calls).to.deep.equal({ liveClients: 1, heartbeat: 2 });
  });

  it('with latency, a call answers later on the scheduler and is cold: nothing happens until subscribed (virtual time)', () => {
    newScheduler().run(({ expectObservable, flush }) => {
      const tables = new MemoryCoordinationTables();
      const store = new MemoryMembershipStore({ clientId: 'a', leaseTtlMs: 15_000, now: () => T0, tables, latencyMs: 5 });
      const heartbeat$ = store.heartbeat([]);
      expect(tables.clients()).to.deep.equal([]);
      expectObservable(heartbeat$).toBe('5ms (x|)', { x: { registered: true, incarnation: Math.floor(T0 / 1000), newLife: true, drainRequested: false, revoked: [] } });
      flush();
      expect(tables.client('a')?.lastUpdateNs).to.equal(nanosFromMillis(T0));
    });
  });

  it('two clients racing for a free lock: the first write to land wins, the other is told no', () => {
    newScheduler().run(({ expectObservable }) => {
      const tables = new MemoryCoordinationTables();
      const a = new MemoryMetadataStore({ clientId: 'a', leaseTtlMs: 15_000, now: () => T0, tables, latencyMs: 2 });
      const b = new MemoryMetadataStore({ clientId: 'b', leaseTtlMs: 15_000, now: () => T0, tables, latencyMs: 3 });
      // Both sent at once, both saw a free lock when sent: the condition is checked when each lands.
      expectObservable(forkJoin([a.acquireLeadership(), b.acquireLeadership()])).toBe('3ms (x|)', { x: [true, false] });
    });
  });

  it('reaping spares a client that heartbeats between the scan and the delete (the delete is conditional)', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      let now = T0;
      const tables = new MemoryCoordinationTables();
      const stale = new MemoryMembershipStore({ clientId: 'stale', leaseTtlMs: 15_000, now: () => now, tables });
      const back = new MemoryMembershipStore({ clientId: 'back', leaseTtlMs: 15_000, now: () => now, tables });
      void firstValueFrom(stale.heartbeat([]));
      void firstValueFrom(back.heartbeat([]));
      now = T0 + 1000;
      const leader = new MemoryMembershipStore({ clientId: 'leader', leaseTtlMs: 15_000, now: () => now, tables, latencyMs: 10, reapAfterMs: 500 });
      const reap$ = leader.reapStale();
      cold('5ms x').subscribe(() => { void firstValueFrom(back.heartbeat([])); });
      expectObservable(reap$).toBe('10ms (x|)', { x: ['stale'] });
    });
  });
});
