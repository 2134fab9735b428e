import {
  ConditionalCheckFailedException, DescribeTableCommand, GetItemCommand, PutItemCommand, UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { GetRecordsCommand, GetShardIteratorCommand, ListShardsCommand, type Shard } from '@aws-sdk/client-kinesis';
import { expect } from 'chai';
import { createTables } from '../../src/index.js';
import {
  adjacentOpenShards, createStream, listShards, mergeShards, openShardIds, putRecords, splitShard, startLocalAws,
  type LocalAws,
} from '../../src/testing/index.js';
import { TIERS, skipUnless } from '../support/tiers.js';
import { uniqueName } from '../support/local.js';

// What kinsumer relies on from Kinesis and DynamoDB, checked against each tier of local servers.
// Where a server departs from AWS, the test pins the departure so the library never depends on it.
for (const tier of TIERS) {
  describe(`conformance: ${tier.name}`, function () {
    this.timeout(180_000);
    skipUnless(tier);
    let local: LocalAws;
    before(async () => { local = await startLocalAws(tier.options); });
    after(async () => { await local?.stop(); });

    describe('tables', () => {
      it('createTables twice gives the three tables with their string hash keys', async () => {
        const app = uniqueName('conf');
        await createTables({ dynamodb: local.dynamodb, applicationName: app });
        await createTables({ dynamodb: local.dynamodb, applicationName: app });
        for (const [suffix, key] of [['clients', 'ID'], ['checkpoints', 'Shard'], ['metadata', 'Key']] as const) {
          const { Table } = await local.dynamodb.send(new DescribeTableCommand({ TableName: `${app}_${suffix}` }));
          expect(Table?.TableStatus).to.equal('ACTIVE');
          expect(Table?.KeySchema).to.deep.equal([{ AttributeName: key, KeyType: 'HASH' }]);
        }
      });
    });

    describe('lease conditions', () => {
      let table: string;
      before(async () => {
        const app = uniqueName('lease');
        await createTables({ dynamodb: local.dynamodb, applicationName: app });
        table = `${app}_checkpoints`;
      });

      const capture = (shard: string, owner: string, cutoffNs: string) => local.dynamodb.send(new UpdateItemCommand({
        TableName: table,
        Key: { Shard: { S: shard } },
        UpdateExpression: 'SET OwnerID = :me, LeaseCounter = if_not_exists(LeaseCounter, :zero) + :one',
        ConditionExpression: 'attribute_not_exists(OwnerID) OR attribute_type(OwnerID, :null) OR LastUpdate <= :cutoff',
        ExpressionAttributeValues: { ':me': { S: owner }, ':zero': { N: '0' }, ':one': { N: '1' }, ':null': { S: 'NULL' }, ':cutoff': { N: cutoffNs } },
        ReturnValues: 'ALL_NEW',
      }));

      it('a NULL-typed owner (as the Go kinsumer writes it) counts as no owner', async () => {
        await local.dynamodb.send(new PutItemCommand({
          TableName: table,
          Item: { Shard: { S: 'null-owner' }, OwnerID: { NULL: true }, SequenceNumber: { NULL: true }, LastUpdate: { N: '1764694956000000000' } },
        }));
        const out = await capture('null-owner', 'me', '1');
        expect(out.Attributes?.OwnerID).to.deep.equal({ S: 'me' });
        expect(out.Attributes?.LeaseCounter).to.deep.equal({ N: '1' });
      });

      it('a live foreign owner fails the condition; an expired one (nanosecond numbers beyond 2^53) passes', async () => {
        const lastUpdate = '1764694956123456789';
        await local.dynamodb.send(new PutItemCommand({
          TableName: table, Item: { Shard: { S: 'owned' }, OwnerID: { S: 'other' }, LastUpdate: { N: lastUpdate } },
        }));
        const refused = await capture('owned', 'me', '1764694956123456788').catch((e: unknown) => e);
        expect(refused).to.be.instanceOf(ConditionalCheckFailedException);
        const taken = await capture('owned', 'me', lastUpdate);
        expect(taken.Attributes?.OwnerID).to.deep.equal({ S: 'me' });
      });

      it('a counter condition fences a stale writer', async () => {
        await capture('fenced', 'a', '1');
        const write = (counter: string) => local.dynamodb.send(new UpdateItemCommand({
          TableName: table, Key: { Shard: { S: 'fenced' } },
          UpdateExpression: 'SET SequenceNumber = :seq',
          ConditionExpression: 'OwnerID = :me AND LeaseCounter = :counter',
          ExpressionAttributeValues: { ':seq': { S: '42' }, ':me': { S: 'a' }, ':counter': { N: counter } },
        }));
        expect(await write('0').catch((e: unknown) => e)).to.be.instanceOf(ConditionalCheckFailedException);
        await write('1');
        const row = await local.dynamodb.send(new GetItemCommand({ TableName: table, Key: { Shard: { S: 'fenced' } }, ConsistentRead: true }));
        expect(row.Item?.SequenceNumber).to.deep.equal({ S: '42' });
      });
    });

    describe('resharding metadata', () => {
      it('a split names the parent; a merge names both parents', async () => {
        const stream = uniqueName('reshard');
        await createStream(local.kinesis, stream, 2);
        const [first] = await openShardIds(local.kinesis, stream);
        const children = await splitShard(local.kinesis, stream, first ?? '');
        const shards = await listShards(local.kinesis, stream);
        for (const child of children) expect(shards.find((s) => s.ShardId === child)?.ParentShardId).to.equal(first);
        const [a, b] = await adjacentOpenShards(local.kinesis, stream);
        const merged = await mergeShards(local.kinesis, stream, a, b);
        const shard = (await listShards(local.kinesis, stream)).find((s) => s.ShardId === merged);
        expect([shard?.ParentShardId, shard?.AdjacentParentShardId]).to.have.members([a, b]);
      });

      it('GetRecords at the end of a closed parent: no next iterator; ChildShards only on kinesis-local', async () => {
        const stream = uniqueName('child');
        await createStream(local.kinesis, stream, 1);
        const [parent] = await openShardIds(local.kinesis, stream);
        await putRecords(local.kinesis, stream, [{ partitionKey: 'p', data: 'before split' }]);
        const children = await splitShard(local.kinesis, stream, parent ?? '');
        let iterator = (await local.kinesis.send(new GetShardIteratorCommand({
          StreamName: stream, ShardId: parent, ShardIteratorType: 'TRIM_HORIZON',
        }))).ShardIterator;
        const seen: string[] = [];
        let childShards: string[] | undefined;
        for (let call = 0; iterator !== undefined && call < 50; call += 1) {
          const out = await local.kinesis.send(new GetRecordsCommand({ ShardIterator: iterator }));
          seen.push(...(out.Records ?? []).map((r) => new TextDecoder().decode(r.Data)));
          if (out.ChildShards !== undefined && out.ChildShards.length > 0) childShards = out.ChildShards.map((c) => c.ShardId ?? '').sort();
          iterator = out.NextShardIterator;
        }
        expect(seen).to.deep.equal(['before split']);
        expect(iterator, 'a closed, fully read shard has no next iterator').to.equal(undefined);
        if (tier.options.kinesis === 'kinesis-local') expect(childShards).to.deep.equal(children);
        else expect(childShards, 'kinesalite reports no ChildShards').to.equal(undefined);
      });

      it('MillisBehindLatest: real on kinesis-local, always 0 on kinesalite', async () => {
        const stream = uniqueName('behind');
        await createStream(local.kinesis, stream, 1);
        const [shard] = await openShardIds(local.kinesis, stream);
        await putRecords(local.kinesis, stream, [{ partitionKey: 'k', data: 'old' }]);
        // Not a wait for a condition: the two records must arrive at different times for "behind" to mean anything.
        await new Promise((resolve) => setTimeout(resolve, 100));
        await putRecords(local.kinesis, stream, [{ partitionKey: 'k', data: 'new' }]);
        let iterator = (await local.kinesis.send(new GetShardIteratorCommand({ StreamName: stream, ShardId: shard, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
        const behind: number[] = [];
        for (let call = 0; call < 2; call += 1) {
          const out = await local.kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1 }));
          expect(out.Records).to.have.length(1);
          behind.push(out.MillisBehindLatest ?? -1);
          iterator = out.NextShardIterator;
        }
        if (tier.options.kinesis === 'kinesalite') expect(behind).to.deep.equal([0, 0]);
        else {
          expect(behind[0]).to.be.at.least(100);
          expect(behind[1]).to.equal(0);
        }
      });

      it('ListShards pages with NextToken where the server pages (kinesis-local); kinesalite returns one page', async () => {
        const stream = uniqueName('paging');
        await createStream(local.kinesis, stream, 5);
        const first = await local.kinesis.send(new ListShardsCommand({ StreamName: stream, MaxResults: 2 }));
        const all: Shard[] = [...(first.Shards ?? [])];
        let token = first.NextToken;
        while (token !== undefined) {
          const page = await local.kinesis.send(new ListShardsCommand({ NextToken: token, MaxResults: 2 }));
          all.push(...(page.Shards ?? []));
          token = page.NextToken;
        }
        expect(all.map((s) => s.ShardId)).to.deep.equal(await openShardIds(local.kinesis, stream));
        if (tier.options.kinesis === 'kinesis-local') expect(first.NextToken).to.be.a('string');
        else expect(first.Shards).to.have.length(5);
      });
    });
  });
}
