import { type AttributeValue, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { type Observable, firstValueFrom } from 'rxjs';
import type { CachedShard } from '../../../src/ports/coordination.js';
import { nanosFromMillis } from '../../../src/dynamodb/codec.js';
import { Dynamo } from '../../../src/dynamodb/dynamo.js';
import { DynamoMetadataStore } from '../../../src/dynamodb/metadata-store.js';
import { createTables } from '../../../src/dynamodb/tables.js';
import { TableNotFoundError } from '../../../src/errors/kinsumer-errors.js';
import { tableNames } from '../../../src/dynamodb/table-names.js';
import { localDynamoDbClient } from '../../../src/testing/local-aws.js';
import { metadataSpec } from '../../support/coordination-spec.js';
import { startFaultProxy } from '../../support/fault-proxy.js';
import { uniqueName, useLocalAws } from '../../support/local.js';

describe('DynamoMetadataStore (dynalite)', () => {
  const local = useLocalAws();
  const T0 = 1_764_694_956_123;
  const TTL = 15_000;

  async function freshTable(): Promise<string> {
    const app = uniqueName('meta');
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    return tableNames(app).metadata;
  }

  const store = (table: string, clientId: string, now: () => number = () => T0) => new DynamoMetadataStore({
    dynamo: new Dynamo(local().dynamodb), table, clientId, clientName: `${clientId}-host`, leaseTtlMs: TTL, now,
  });
  const put = (table: string, Item: Record<string, AttributeValue>) => local().dynamodb.send(new PutItemCommand({ TableName: table, Item }));
  const item = async (table: string, key: string) =>
    (await local().dynamodb.send(new GetItemCommand({ TableName: table, Key: { Key: { S: key } }, ConsistentRead: true }))).Item;

  metadataSpec(async () => {
    const table = await freshTable();
    const dynamo = new Dynamo(local().dynamodb);
    return {
      membership: () => { throw new Error('not used'); },
      metadata: (options) => new DynamoMetadataStore({ ...options, dynamo, table }),
    };
  });

  // Item 6 of issue 23: the SDK's standard retry strategy keeps one retry quota per client (500,
  // 5 per retried throttle, 14 per other retry), shared by every call of the application's
  // DynamoDBClient. A throttled epoch poll retried by the SDK would spend it (a poll every 250 ms:
  // empty within seconds), and then a lease write that meets a throttle gets no retry. The poll is
  // sent without the SDK's retries; the coordinator's own pace retries it. The throttling is the fault
  // proxy's (a mock: no local server throttles).
  it('the group-epoch read is sent once, never retried by the SDK, and spends none of the client\'s retry quota', async () => {
    const table = await freshTable();
    const proxy = await startFaultProxy({ target: local().endpoints.dynamodb });
    const client = localDynamoDbClient(local(), { endpoint: proxy.endpoint });
    try {
      const poller = new DynamoMetadataStore({ dynamo: new Dynamo(client), table, clientId: 'poller', clientName: 'poller', leaseTtlMs: TTL, now: () => T0 });
      expect(await firstValueFrom(poller.groupEpoch())).to.equal(0);
      proxy.setRules([{ operation: 'GetItem', rate: 1, fault: { kind: 'error', error: 'ProvisionedThroughputExceededException' } }]);
      const errors: unknown[] = [];
      for (let i = 0; i < 5; i += 1) errors.push(await firstValueFrom(poller.groupEpoch()).catch((e: unknown) => e));
      expect(errors.map((e) => (e as Error).name), 'the SDK\'s own error, unwrapped').to.deep.equal(Array(5).fill('ProvisionedThroughputExceededException'));
      expect(proxy.counts().calls.GetItem, 'one attempt per read (and the first, answered)').to.equal(6);
      const strategy = await client.config.retryStrategy() as unknown as { getCapacity(): number };
      expect(strategy.getCapacity(), 'the retry quota').to.equal(500);
      // A write still has its SDK retry: one throttled PutItem (the leader lock), then the write lands.
      proxy.setRules([]);
      proxy.script('PutItem', 1, { kind: 'error', error: 'ProvisionedThroughputExceededException' });
      expect(await firstValueFrom(poller.acquireLeadership())).to.equal(true);
      expect(proxy.counts().calls.PutItem).to.equal(2);
    } finally {
      client.destroy();
      await proxy.stop();
    }
  });

  it('writes the Go Leader item; a step-down removes ID (not NULL), moves LastUpdate and keeps Name', async () => {
    const table = await freshTable();
    await firstValueFrom(store(table, 'me').acquireLeadership());
    expect(await item(table, 'Leader')).to.deep.equal({
      Key: { S: 'Leader' }, ID: { S: 'me' }, Name: { S: 'me-host' },
      LastUpdate: { N: '1764694956123000000' }, LastUpdateRFC: { S: 'Tue, 02 Dec 2025 17:02:36 +0000' },
    });
    expect(await firstValueFrom(store(table, 'me', () => T0 + 1000).stepDown())).to.equal(true);
    expect(await item(table, 'Leader')).to.deep.equal({
      Key: { S: 'Leader' }, Name: { S: 'me-host' },
      LastUpdate: { N: '1764694957123000000' }, LastUpdateRFC: { S: 'Tue, 02 Dec 2025 17:02:37 +0000' },
    });
  });

  it("takes a Go leader's lock only once it has seen it unchanged for a TTL; a renewal one nanosecond later counts", async () => {
    const table = await freshTable();
    const goNs = 1_764_694_956_123_456_789n;
    const goLock = (ns: bigint) => put(table, { Key: { S: 'Leader' }, ID: { S: 'go-leader' }, Name: { S: 'go-host' }, LastUpdate: { N: ns.toString() }, LastUpdateRFC: { S: 'x' } });
    await goLock(goNs);
    // The Go leader's clock is an hour behind: its LastUpdate is not a time to this client.
    let now = T0 + 3_600_000;
    const ts = store(table, 'ts', () => now);
    expect(await firstValueFrom(ts.leader())).to.deep.equal({ id: 'go-leader', name: 'go-host', lastUpdateNs: goNs });
    expect(await firstValueFrom(ts.acquireLeadership())).to.equal(false);
    now += TTL - 1;
    await goLock(goNs + 1n);
    expect(await firstValueFrom(ts.acquireLeadership()), 'renewed, by a nanosecond').to.equal(false);
    now += TTL - 1;
    expect((await firstValueFrom(ts.leader()))?.id).to.equal('go-leader');
    now += 1;
    expect(await firstValueFrom(ts.leader())).to.equal(undefined);
    expect(await firstValueFrom(ts.acquireLeadership())).to.equal(true);
    expect((await item(table, 'Leader'))?.ID).to.deep.equal({ S: 'ts' });
  });

  it('a Leader item with a NULL ID, or an ID but no LastUpdate, is free', async () => {
    const table = await freshTable();
    await put(table, { Key: { S: 'Leader' }, ID: { NULL: true }, LastUpdate: { N: nanosFromMillis(T0).toString() } });
    expect(await firstValueFrom(store(table, 'a').leader())).to.equal(undefined);
    expect(await firstValueFrom(store(table, 'a').acquireLeadership())).to.equal(true);
    await put(table, { Key: { S: 'Leader' }, ID: { S: 'ghost' } });
    expect(await firstValueFrom(store(table, 'b').acquireLeadership())).to.equal(true);
  });

  const lineage: CachedShard[] = [
    { shardId: 'shardId-000000000000', parentShardIds: [], open: false, finished: true },
    { shardId: 'shardId-000000000001', parentShardIds: [], open: false, finished: false },
    { shardId: 'shardId-000000000002', parentShardIds: ['shardId-000000000000'], open: true, finished: false },
    { shardId: 'shardId-000000000003', parentShardIds: ['shardId-000000000000'], open: true, finished: false },
  ];

  it('writes ShardIDs as Go does (L of S, sorted, unfinished only) and the lineage as gzip in ShardInfo', async () => {
    const table = await freshTable();
    await firstValueFrom(store(table, 'leader').writeShardCache([...lineage].reverse()));
    const written = await item(table, 'ShardCache');
    expect(Object.keys(written ?? {}).sort()).to.deep.equal(['Key', 'LastUpdate', 'LastUpdateRFC', 'ShardIDs', 'ShardInfo']);
    expect(written?.ShardIDs).to.deep.equal({ L: [{ S: 'shardId-000000000001' }, { S: 'shardId-000000000002' }, { S: 'shardId-000000000003' }] });
    expect(written?.LastUpdate).to.deep.equal({ N: '1764694956123000000' });
    expect([...(written?.ShardInfo?.B ?? []).slice(0, 2)], 'gzip magic').to.deep.equal([0x1f, 0x8b]);
  });

  it('reads a Go-written cache: ShardIDs (sorted), exact ns LastUpdate, unknown lineage, other attributes ignored', async () => {
    const table = await freshTable();
    await put(table, {
      Key: { S: 'ShardCache' },
      ShardIDs: { L: [{ S: 'shardId-000000000002' }, { S: 'shardId-000000000001' }] },
      LastUpdate: { N: '1764694956123456789' }, LastUpdateRFC: { S: 'Tue, 02 Dec 2025 17:02:36 +0000' },
      SomethingNew: { BOOL: true },
    });
    expect(await firstValueFrom(store(table, 'ts').readShardCache())).to.deep.equal({
      shardIds: ['shardId-000000000001', 'shardId-000000000002'], shards: undefined, lastUpdateNs: 1_764_694_956_123_456_789n,
    });
  });

  it('reads the lineage as unknown when ShardIDs was rewritten without it, or ShardInfo is not ours', async () => {
    const table = await freshTable();
    await firstValueFrom(store(table, 'leader').writeShardCache(lineage));
    await local().dynamodb.send(new UpdateItemCommand({
      TableName: table, Key: { Key: { S: 'ShardCache' } },
      UpdateExpression: 'SET ShardIDs = :ids', ExpressionAttributeValues: { ':ids': { L: [{ S: 'shardId-000000000009' }] } },
    }));
    expect(await firstValueFrom(store(table, 'a').readShardCache())).to.deep.include({ shardIds: ['shardId-000000000009'], shards: undefined });
    await local().dynamodb.send(new UpdateItemCommand({
      TableName: table, Key: { Key: { S: 'ShardCache' } },
      UpdateExpression: 'SET ShardInfo = :junk', ExpressionAttributeValues: { ':junk': { B: new Uint8Array([1, 2, 3]) } },
    }));
    expect((await firstValueFrom(store(table, 'a').readShardCache()))?.shards).to.equal(undefined);
  });

  it('10,000 shards with lineage round-trip in one item, ShardInfo under 50 KB', async function () {
    this.timeout(60_000);
    const table = await freshTable();
    const id = (n: number) => `shardId-${String(n).padStart(12, '0')}`;
    const shards: CachedShard[] = Array.from({ length: 10_000 }, (_, n) => ({
      shardId: id(n),
      parentShardIds: n < 5000 ? [] : n % 3 === 0 ? [id(n - 5000), id(n - 4999)] : [id(n - 5000)],
      open: n >= 5000,
      finished: false,
    }));
    await firstValueFrom(store(table, 'leader').writeShardCache(shards));
    const cache = await firstValueFrom(store(table, 'a').readShardCache());
    expect(cache?.shards).to.deep.equal(shards);
    expect(cache?.shardIds).to.have.length(10_000);
    const info = (await item(table, 'ShardCache'))?.ShardInfo?.B;
    expect(info?.length).to.be.below(50_000);
  });

  it('a missing table is TableNotFoundError (the AWS error kept as cause), for every operation', async () => {
    const missing = store('nope_metadata', 'c');
    const calls: Array<Observable<unknown>> = [
      missing.acquireLeadership(), missing.stepDown(), missing.leader(), missing.readShardCache(), missing.writeShardCache(lineage),
    ];
    for (const call of calls) {
      const error = await firstValueFrom(call).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(TableNotFoundError);
      expect((error as TableNotFoundError).table).to.equal('nope_metadata');
      expect(((error as TableNotFoundError).cause as Error).name).to.equal('ResourceNotFoundException');
    }
  });
});
