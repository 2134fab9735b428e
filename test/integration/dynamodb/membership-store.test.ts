import { readFileSync } from 'node:fs';
import { type AttributeValue, DynamoDBClient, GetItemCommand, PutItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { expect } from 'chai';
import { type Observable, firstValueFrom } from 'rxjs';
import { nanosFromMillis } from '../../../src/dynamodb/codec.js';
import { Dynamo } from '../../../src/dynamodb/dynamo.js';
import { DynamoMembershipStore } from '../../../src/dynamodb/membership-store.js';
import { createTables } from '../../../src/dynamodb/tables.js';
import { KinsumerError, TableNotFoundError } from '../../../src/errors/kinsumer-errors.js';
import { Kinsumer } from '../../../src/index.js';
import { tableNames } from '../../../src/dynamodb/table-names.js';
import { localDynamoDbClient } from '../../../src/testing/index.js';
import { membershipSpec } from '../../support/coordination-spec.js';
import { freshSetup, record } from '../../support/bad-input.js';
import { eventually, uniqueName, useLocalAws } from '../../support/local.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('DynamoMembershipStore (dynalite)', () => {
  const local = useLocalAws();
  const T0 = 1_764_694_956_123;
  const TTL = 15_000;

  async function freshTable(): Promise<string> {
    const app = uniqueName('members');
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    return tableNames(app).clients;
  }

  const store = (table: string, clientId: string, extra: { clientName?: string; now?: () => number; dynamodb?: DynamoDBClient; reapAfterMs?: number; instanceId?: string } = {}) =>
    new DynamoMembershipStore({
      dynamo: new Dynamo(extra.dynamodb ?? local().dynamodb), table, clientId, clientName: extra.clientName ?? `${clientId}-host`, instanceId: extra.instanceId ?? `${clientId}#1`,
      leaseTtlMs: TTL, now: extra.now ?? (() => T0), ...(extra.reapAfterMs === undefined ? {} : { reapAfterMs: extra.reapAfterMs }),
    });

  const put = (table: string, Item: Record<string, AttributeValue>) =>
    local().dynamodb.send(new PutItemCommand({ TableName: table, Item }));

  membershipSpec(async () => {
    const table = await freshTable();
    const dynamo = new Dynamo(local().dynamodb);
    return {
      membership: (options) => new DynamoMembershipStore({ ...options, dynamo, table }),
      metadata: () => { throw new Error('not used'); },
    };
  });

  it('writes the Go row format plus Shards, InstanceID, the Library marker and its life: ID, Name, LastUpdate (ns), LastUpdateRFC, Shards (L of S), Wants, InstanceID, Library, Incarnation, Uptime, Draining', async () => {
    const table = await freshTable();
    await firstValueFrom(store(table, 'c1').heartbeat(['shardId-000000000001', 'shardId-000000000000']));
    await firstValueFrom(store(table, 'c2', { clientName: '' }).heartbeat([]));
    const row = async (id: string) => (await local().dynamodb.send(new GetItemCommand({ TableName: table, Key: { ID: { S: id } }, ConsistentRead: true }))).Item;
    expect(await row('c1')).to.deep.equal({
      ID: { S: 'c1' },
      Name: { S: 'c1-host' },
      LastUpdate: { N: '1764694956123000000' },
      LastUpdateRFC: { S: 'Tue, 02 Dec 2025 17:02:36 +0000' },
      Shards: { L: [{ S: 'shardId-000000000000' }, { S: 'shardId-000000000001' }] },
      Wants: { L: [] },
      InstanceID: { S: 'c1#1' },
      Library: { S: `kinsumer-ts/${PACKAGE_VERSION}` },
      // A row created anew: its first life is its creation second (a clientId back after a reap reuses no life).
      Incarnation: { N: String(Math.floor(T0 / 1000)) },
      Uptime: { N: '0' },
      Draining: { BOOL: false },
    });
    const empty = await row('c2');
    expect(empty?.Name, 'an empty name is NULL, as Go writes it').to.deep.equal({ NULL: true });
    expect(empty?.Shards).to.deep.equal({ L: [] });
  });

  it('reads rows the Go kinsumer wrote: ns beyond 2^53 exact, NULL name, no Shards, unknown attributes ignored', async () => {
    const table = await freshTable();
    // Not representable as a double: read through a Number, the last digits would be lost.
    const ns = 1_764_694_956_123_456_789n;
    await put(table, { ID: { S: 'go-1' }, Name: { S: 'ip-10-0-0-1' }, LastUpdate: { N: ns.toString() }, LastUpdateRFC: { S: 'Tue, 02 Dec 2025 17:02:36 +0000' }, Extra: { M: { x: { N: '1' } } } });
    await put(table, { ID: { S: 'go-2' }, Name: { NULL: true }, LastUpdate: { N: ns.toString() }, Shards: { NULL: true } });
    await put(table, { ID: { S: 'no-heartbeat' }, Name: { S: 'x' } });
    const live = await firstValueFrom(store(table, 'ts').liveClients());
    expect(live).to.deep.equal([
      { id: 'go-1', name: 'ip-10-0-0-1', lastUpdateNs: ns, shardIds: undefined, unchangedForMs: 0, expiresInMs: TTL, instanceId: undefined, library: undefined },
      { id: 'go-2', name: undefined, lastUpdateNs: ns, shardIds: undefined, unchangedForMs: 0, expiresInMs: TTL, instanceId: undefined, library: undefined },
    ]);
  });

  it('a row it cannot read (LastUpdate of type S, a Name that is a number, Shards not a list) is reported through onCorruptRow once and left out, not silently dropped', async () => {
    const table = await freshTable();
    const fresh = { N: nanosFromMillis(T0).toString() };
    await put(table, { ID: { S: 'stringly' }, Name: { S: 'x' }, LastUpdate: { S: 'yesterday' } });
    await put(table, { ID: { S: 'numeric-name' }, Name: { N: '7' }, LastUpdate: fresh });
    await put(table, { ID: { S: 'bad-shards' }, LastUpdate: fresh, Shards: { S: 'shardId-1' } });
    await put(table, { ID: { S: 'fine' }, LastUpdate: fresh });
    await put(table, { ID: { S: 'null-heartbeat' }, LastUpdate: { NULL: true } });
    const reported: KinsumerError[] = [];
    const reader = new DynamoMembershipStore({
      dynamo: new Dynamo(local().dynamodb), table, clientId: 'r', clientName: 'r', leaseTtlMs: TTL, now: () => T0, onCorruptRow: (error) => reported.push(error),
    });
    const live = await firstValueFrom(reader.liveClients());
    expect(live.map((c) => c.id)).to.deep.equal(['fine']);
    // Read again at the next shard check: the same rows, the same problems, reported once.
    await firstValueFrom(reader.liveClients());
    expect(reported.map((e) => e.message).sort()).to.deep.equal([
      `clients row bad-shards of ${table} is corrupt: Shards is not a list`,
      `clients row numeric-name of ${table} is corrupt: Name is not a string`,
      `clients row stringly of ${table} is corrupt: LastUpdate is not a number`,
    ]);
    expect(reported.every((e) => e instanceof KinsumerError && !e.retriable)).to.equal(true);
  });

  it('a Kinsumer reports a clients row it cannot read as an error event (and goes on)', async function () {
    this.timeout(60_000);
    const options = await freshSetup(local(), 'corrupt-client');
    await put(tableNames(options.applicationName).clients, { ID: { S: 'mangled' }, LastUpdate: { S: 'yesterday' } });
    const run = record(new Kinsumer(options));
    try {
      const reported = await eventually(() => run.errors().find(({ error }) => error.message.includes('clients row mangled')), 'the corrupt row on events$');
      expect(reported.error.message).to.contain('LastUpdate is not a number');
      await eventually(() => run.events.some((e) => e.type === 'lease-acquired'), 'the consumer to go on and capture its shard');
    } finally {
      await run.consumer.stop();
    }
  });

  it('a Go heartbeat one nanosecond later is a heartbeat (LastUpdate beyond 2^53, compared exactly as a value, never as a time)', async () => {
    const table = await freshTable();
    let now = T0;
    const reader = store(table, 'r', { now: () => now });
    const goNs = 1_764_694_956_123_456_789n;
    await put(table, { ID: { S: 'go' }, LastUpdate: { N: goNs.toString() } });
    expect((await firstValueFrom(reader.liveClients())).map((c) => c.id)).to.deep.equal(['go']);
    now += TTL - 1;
    await put(table, { ID: { S: 'go' }, LastUpdate: { N: (goNs + 1n).toString() } });
    expect((await firstValueFrom(reader.liveClients())).map((c) => [c.id, c.unchangedForMs]), 'seen changing').to.deep.equal([['go', 0]]);
    now += TTL - 1;
    expect((await firstValueFrom(reader.liveClients())).map((c) => [c.id, c.unchangedForMs])).to.deep.equal([['go', TTL - 1]]);
    now += 1;
    expect(await firstValueFrom(reader.liveClients())).to.deep.equal([]);
  });

  it('a heartbeat takes over at once a row of its clientId without InstanceID (the Go kinsumer\'s full PutItem writes none)', async () => {
    const table = await freshTable();
    await put(table, { ID: { S: 'shared' }, Name: { S: 'go-host' }, LastUpdate: { N: nanosFromMillis(T0).toString() } });
    expect(await firstValueFrom(store(table, 'shared').heartbeat([]))).to.deep.include({ registered: true, incarnation: 1, newLife: true });
    const row = (await local().dynamodb.send(new GetItemCommand({ TableName: table, Key: { ID: { S: 'shared' } }, ConsistentRead: true }))).Item;
    expect(row?.InstanceID).to.deep.equal({ S: 'shared#1' });
  });

  it('taking a clientId\'s place is conditioned on the life as read: another newcomer taking it in between makes it read again and take it from that one', async () => {
    const table = await freshTable();
    const twin = store(table, 'same', { instanceId: 'twin' });
    await firstValueFrom(twin.heartbeat([]));
    const life = Math.floor(T0 / 1000);
    // The newcomer's first UpdateItem (its take-over, after its GetItem) is preceded, once, by another newcomer's take-over.
    const client = localDynamoDbClient(local());
    let updates = 0;
    const other = store(table, 'same', { instanceId: 'other' });
    client.middlewareStack.add((next, context) => async (args) => {
      if (context.commandName === 'UpdateItemCommand') {
        updates += 1;
        if (updates === 1) await firstValueFrom(other.heartbeat([]));
      }
      return next(args);
    }, { step: 'initialize' });
    try {
      const newcomer = store(table, 'same', { instanceId: 'newcomer', dynamodb: client });
      expect(await firstValueFrom(newcomer.heartbeat([]))).to.deep.include({ registered: true, incarnation: life + 2, newLife: true });
      expect(updates, 'refused once, then taken from the other').to.equal(2);
      const row = (await local().dynamodb.send(new GetItemCommand({ TableName: table, Key: { ID: { S: 'same' } }, ConsistentRead: true }))).Item;
      expect(row?.InstanceID).to.deep.equal({ S: 'newcomer' });
      expect(await firstValueFrom(other.heartbeat([]))).to.deep.equal({ registered: false, replacedBy: 'newcomer' });
      expect(await firstValueFrom(twin.heartbeat([]))).to.deep.equal({ registered: false, replacedBy: 'newcomer' });
    } finally {
      client.destroy();
    }
  });

  it('reaps a 7-day-old Go row and keeps a 47-hour-old one (default 48 h)', async () => {
    const table = await freshTable();
    const hour = 3_600_000;
    await put(table, { ID: { S: 'week-old' }, Name: { S: 'go' }, LastUpdate: { N: nanosFromMillis(T0 - 7 * 24 * hour).toString() } });
    await put(table, { ID: { S: 'hours-old' }, Name: { S: 'go' }, LastUpdate: { N: nanosFromMillis(T0 - 47 * hour).toString() } });
    expect(await firstValueFrom(store(table, 'leader').reapStale())).to.deep.equal(['week-old']);
    const left = await local().dynamodb.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
    expect(left.Items?.map((i) => i.ID?.S)).to.deep.equal(['hours-old']);
  });

  it('does not reap a client that heartbeats between the scan and the delete (a middleware plays the interleaving)', async () => {
    const table = await freshTable();
    let now = T0;
    await firstValueFrom(store(table, 'comeback', { now: () => now }).heartbeat([]));
    now = T0 + 2000;
    // A second client whose DeleteItem is preceded, once, by the comeback's heartbeat on the real server.
    const client = localDynamoDbClient(local());
    let interleaved = false;
    client.middlewareStack.add((next, context) => async (args) => {
      if (context.commandName === 'DeleteItemCommand' && !interleaved) {
        interleaved = true;
        await firstValueFrom(store(table, 'comeback', { now: () => now }).heartbeat([]));
      }
      return next(args);
    }, { step: 'initialize' });
    try {
      expect(await firstValueFrom(store(table, 'leader', { dynamodb: client, now: () => now, reapAfterMs: 1000 }).reapStale())).to.deep.equal([]);
      expect(interleaved).to.equal(true);
      expect((await firstValueFrom(store(table, 'r', { now: () => now }).liveClients())).map((c) => c.id)).to.deep.equal(['comeback']);
    } finally {
      client.destroy();
    }
  });

  it('a missing table is TableNotFoundError (the AWS error kept as cause), for every operation', async () => {
    const missing = store('nope_clients', 'c');
    for (const call of [missing.heartbeat([]), missing.liveClients(), missing.deregister(), missing.reapStale()]) {
      const error = await firstValueFrom(call as Observable<unknown>).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(TableNotFoundError);
      expect((error as TableNotFoundError).table).to.equal('nope_clients');
      expect(((error as TableNotFoundError).cause as Error).name).to.equal('ResourceNotFoundException');
    }
  });

  it('other AWS errors pass through untouched (aws-sdk-client-mock: the local server cannot deny access)', async () => {
    const client = new DynamoDBClient({ region: 'us-east-1' });
    const mock = mockClient(client);
    const denied = Object.assign(new Error('not authorized'), { name: 'AccessDeniedException', $metadata: { httpStatusCode: 400 } });
    mock.on(ScanCommand).rejects(denied);
    const error = await firstValueFrom(store('app_clients', 'c', { dynamodb: client }).liveClients()).catch((e: unknown) => e);
    expect(error).to.equal(denied);
    mock.restore();
  });
});
