import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { firstValueFrom } from 'rxjs';
import { Dynamo } from '../../../src/dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../../src/dynamodb/lease-store.js';
import { CorruptCheckpointError, LeaseHeldError, LeaseLostError, createTables } from '../../../src/index.js';
import type { LeaseStore, StoredCheckpoint } from '../../../src/ports/lease-store.js';
import { planStart } from '../../../src/reading/start-position.js';
import { MemoryCheckpointTable, MemoryLeaseStore } from '../../../src/testing/memory-lease-store.js';
import { uniqueName, useLocalAws } from '../../support/local.js';

const TTL = 10_000;

/** A reset to LATEST also stores its own moment as a time floor (on the store's clock): checked apart, by `resetMoment`. */
function withoutTimeFloor(checkpoint: StoredCheckpoint | undefined): StoredCheckpoint | undefined {
  if (checkpoint?.type !== 'LATEST') return checkpoint;
  return checkpoint.after === undefined ? { type: 'LATEST' } : { type: 'LATEST', after: checkpoint.after };
}

/** The same behaviour, checked on the DynamoDB store and on the in-memory one. */
function resetSpec(make: () => { store: (clientId: string) => LeaseStore; clock: { now: number }; raw?: (shardId: string) => Promise<Record<string, unknown> | undefined> }) {
  const checkpoint = async (store: LeaseStore, shardId: string) => (await firstValueFrom(store.read(shardId)))?.checkpoint;

  it('round-trips every kind of checkpoint, and a start wins over the initialPosition option', async () => {
    const { store } = make();
    const admin = store('operator');
    const cases: StoredCheckpoint[] = [
      { type: 'TRIM_HORIZON' },
      { type: 'AT_TIMESTAMP', timestamp: new Date('2026-11-30T12:00:00.123Z') },
      { type: 'LATEST' },
      { type: 'position', position: { sequenceNumber: '49680774074096777489958285650618970692452261160099512322', subSequenceNumber: 3 } },
    ];
    for (const [i, wanted] of cases.entries()) {
      await firstValueFrom(admin.resetCheckpoint(`round-${i}`, wanted, { force: false }));
      const stored = await checkpoint(admin, `round-${i}`);
      expect(withoutTimeFloor(stored)).to.deep.equal(wanted);
      if (wanted.type === 'LATEST') expect(stored?.type === 'LATEST' && stored.notBefore instanceof Date, 'a reset to LATEST has its moment as a time floor').to.equal(true);
    }
    expect(planStart({ type: 'TRIM_HORIZON' }, 'LATEST').iteratorStart).to.deep.equal({ type: 'TRIM_HORIZON' });
    const at = new Date('2026-11-30T12:00:00Z');
    expect(planStart({ type: 'AT_TIMESTAMP', timestamp: at }, 'LATEST').iteratorStart).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: at });
  });

  it('refuses a shard with a live owner unless forced; forcing fences the owner', async () => {
    const { store } = make();
    const owner = store('owner');
    const held = await firstValueFrom(owner.capture('held'));
    if (held === undefined) throw new Error('capture failed');
    const refused = await firstValueFrom(store('operator').resetCheckpoint('held', { type: 'LATEST' }, { force: false })).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(LeaseHeldError);
    expect(await checkpoint(owner, 'held')).to.equal(undefined);
    await firstValueFrom(store('operator').resetCheckpoint('held', { type: 'LATEST' }, { force: true }));
    const row = await firstValueFrom(owner.read('held'));
    expect(row?.ownerId).to.equal(undefined);
    expect(row?.leaseCounter).to.equal(held.leaseCounter + 1);
    expect(withoutTimeFloor(row?.checkpoint)).to.deep.equal({ type: 'LATEST' });
    const stale = await firstValueFrom(owner.commit(held, { checkpoint: { type: 'position', position: { sequenceNumber: '1' } }, finished: false })).catch((e: unknown) => e);
    expect(stale).to.be.instanceOf(LeaseLostError);
    expect(withoutTimeFloor(await checkpoint(owner, 'held'))).to.deep.equal({ type: 'LATEST' });
  });

  it('takes, without force, a shard whose owner it has seen stand still for a TTL (and not sooner)', async () => {
    const { store, clock } = make();
    await firstValueFrom(store('gone').capture('expired'));
    const operator = store('operator');
    // No history yet: however old the row, it is live to a reader that has just come.
    clock.now += 10 * TTL;
    expect(await firstValueFrom(operator.resetCheckpoint('expired', { type: 'TRIM_HORIZON' }, { force: false })).catch((e: unknown) => e)).to.be.instanceOf(LeaseHeldError);
    clock.now += TTL;
    await firstValueFrom(operator.resetCheckpoint('expired', { type: 'TRIM_HORIZON' }, { force: false }));
    const next = await firstValueFrom(store('next').capture('expired'));
    expect(next?.checkpoint).to.deep.equal({ type: 'TRIM_HORIZON' });
  });

  it('a commit after a reset replaces the start with a position; Finished survives a reset', async () => {
    const { store } = make();
    const admin = store('operator');
    await firstValueFrom(admin.resetCheckpoint('s', { type: 'AT_TIMESTAMP', timestamp: new Date(1_700_000_000_000) }, { force: false }));
    const me = store('me');
    const held = await firstValueFrom(me.capture('s'));
    if (held === undefined) throw new Error('capture failed');
    expect(held.checkpoint).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(1_700_000_000_000) });
    await firstValueFrom(me.release(held, { checkpoint: { type: 'position', position: { sequenceNumber: '42' } }, finished: true }));
    expect(await checkpoint(me, 's')).to.deep.equal({ type: 'position', position: { sequenceNumber: '42' } });
    await firstValueFrom(admin.resetCheckpoint('s', { type: 'TRIM_HORIZON' }, { force: false }));
    const row = await firstValueFrom(admin.read('s'));
    expect(row?.finished).to.equal(true);
    expect(row?.checkpoint).to.deep.equal({ type: 'TRIM_HORIZON' });
  });

  it('clearing the checkpoint leaves "never consumed" (the initialPosition option decides)', async () => {
    const { store } = make();
    const admin = store('operator');
    await firstValueFrom(admin.resetCheckpoint('c', { type: 'LATEST' }, { force: false }));
    await firstValueFrom(admin.resetCheckpoint('c', undefined, { force: false }));
    expect(await checkpoint(admin, 'c')).to.equal(undefined);
  });
}

describe('LeaseStore.resetCheckpoint on DynamoDB (dynalite)', () => {
  const local = useLocalAws();
  let table = '';
  before(async () => {
    const app = uniqueName('reset');
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    table = `${app}_checkpoints`;
  });
  const clock = { now: 1_764_000_000_000 };
  resetSpec(() => ({
    clock,
    store: (clientId) => new DynamoLeaseStore({ dynamo: new Dynamo(local().dynamodb), table, clientId, clientName: clientId, leaseTtlMs: TTL, now: () => clock.now }),
  }));

  it('writes a start the Go kinsumer reads as TRIM_HORIZON (NULL SequenceNumber), never as a bad sequence number', async () => {
    const store = new DynamoLeaseStore({ dynamo: new Dynamo(local().dynamodb), table, clientId: 'op', clientName: 'op', leaseTtlMs: TTL, now: () => clock.now });
    await firstValueFrom(store.resetCheckpoint('go-view', { type: 'AT_TIMESTAMP', timestamp: new Date(1_700_000_000_000) }, { force: false }));
    const { Item } = await local().dynamodb.send(new GetItemCommand({ TableName: table, Key: { Shard: { S: 'go-view' } }, ConsistentRead: true }));
    expect(Item?.SequenceNumber).to.deep.equal({ NULL: true });
    expect(Item?.StartPosition).to.deep.equal({ S: 'AT_TIMESTAMP' });
    expect(Item?.StartTimestamp).to.deep.equal({ N: '1700000000000' });
  });

  it('a forced reset repairs a corrupt row (wrong types, garbage) so the shard can be captured again', async () => {
    const store = new DynamoLeaseStore({ dynamo: new Dynamo(local().dynamodb), table, clientId: 'op', clientName: 'op', leaseTtlMs: TTL, now: () => clock.now });
    const corrupt = {
      Shard: { S: 'corrupt' }, SequenceNumber: { N: '12' }, SubSequenceNumber: { S: 'x' }, LeaseCounter: { S: 'seven' },
      Finished: { S: 'yes' }, LastOwnerID: { N: '1' }, OwnerID: { BOOL: true }, LastUpdate: { S: 'now' },
    };
    await local().dynamodb.send(new PutItemCommand({ TableName: table, Item: corrupt }));
    const unreadable = await firstValueFrom(store.read('corrupt')).catch((e: unknown) => e);
    expect(unreadable).to.be.instanceOf(CorruptCheckpointError);
    const refused = await firstValueFrom(store.resetCheckpoint('corrupt', { type: 'TRIM_HORIZON' }, { force: false })).catch((e: unknown) => e);
    expect(refused, 'the unforced reset cannot tell whether the garbage owner is live').to.not.equal(undefined);
    await firstValueFrom(store.resetCheckpoint('corrupt', { type: 'TRIM_HORIZON' }, { force: true }));
    const row = await firstValueFrom(store.read('corrupt'));
    expect(row?.checkpoint).to.deep.equal({ type: 'TRIM_HORIZON' });
    expect(row?.finished).to.equal(false);
    expect(row?.leaseCounter).to.equal(1);
    const captured = await firstValueFrom(new DynamoLeaseStore({ dynamo: new Dynamo(local().dynamodb), table, clientId: 'next', clientName: 'next', leaseTtlMs: TTL, now: () => clock.now }).capture('corrupt'));
    expect(captured?.checkpoint).to.deep.equal({ type: 'TRIM_HORIZON' });
  });
});

describe('LeaseStore.resetCheckpoint in memory', () => {
  resetSpec(() => {
    const clock = { now: 1_764_000_000_000 };
    const table = new MemoryCheckpointTable();
    return { clock, store: (clientId) => new MemoryLeaseStore({ clientId, leaseTtlMs: TTL, now: () => clock.now, table }) };
  });
});
