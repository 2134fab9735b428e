import { GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-kinesis';
import { expect } from 'chai';
import {
  adjacentOpenShards, createStream, deleteStream, listShards, mergeShards, openShardIds, putRecords, splitShard,
} from '../../../src/testing/index.js';
import { uniqueName, useLocalAws } from '../../support/local.js';

describe('kinsumer/testing: local Kinesis + DynamoDB kit (kinesalite + dynalite)', () => {
  const local = useLocalAws({ kinesis: 'kinesalite', dynamodb: 'dynalite' });

  it('starts both servers on 127.0.0.1 with ephemeral ports', () => {
    const { endpoints } = local();
    expect(endpoints.kinesis).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(endpoints.dynamodb).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(endpoints.kinesis).to.not.equal(endpoints.dynamodb);
  });

  it('creates an ACTIVE stream with N shards and reads back what was put', async () => {
    const { kinesis } = local();
    const stream = uniqueName('kit');
    await createStream(kinesis, stream, 3);
    expect(await openShardIds(kinesis, stream)).to.have.length(3);

    const put = await putRecords(kinesis, stream, Array.from({ length: 20 }, (_, i) => ({ partitionKey: `k${i}`, data: `v${i}` })));
    expect(put).to.have.length(20);
    const [first] = put;
    if (first === undefined) throw new Error('no put result');
    const iterator = await kinesis.send(new GetShardIteratorCommand({
      StreamName: stream, ShardId: first.shardId, ShardIteratorType: 'AT_SEQUENCE_NUMBER', StartingSequenceNumber: first.sequenceNumber,
    }));
    const got = await kinesis.send(new GetRecordsCommand({ ShardIterator: iterator.ShardIterator }));
    expect(new TextDecoder().decode(got.Records?.[0]?.Data)).to.equal('v0');
    expect(got.Records?.[0]?.PartitionKey).to.equal('k0');
    await deleteStream(kinesis, stream);
  });

  it('splits a shard into two children that name it as parent', async () => {
    const { kinesis } = local();
    const stream = uniqueName('split');
    await createStream(kinesis, stream, 1);
    const [parent] = await openShardIds(kinesis, stream);
    const children = await splitShard(kinesis, stream, parent ?? '');
    expect(children).to.have.length(2);
    const shards = await listShards(kinesis, stream);
    for (const child of children) {
      expect(shards.find((s) => s.ShardId === child)?.ParentShardId).to.equal(parent);
    }
    expect(await openShardIds(kinesis, stream)).to.deep.equal(children);
  });

  it('merges two adjacent shards into one child with both parents', async () => {
    const { kinesis } = local();
    const stream = uniqueName('merge');
    await createStream(kinesis, stream, 2);
    const [a, b] = await adjacentOpenShards(kinesis, stream);
    const child = await mergeShards(kinesis, stream, a, b);
    const shard = (await listShards(kinesis, stream)).find((s) => s.ShardId === child);
    expect([shard?.ParentShardId, shard?.AdjacentParentShardId]).to.have.members([a, b]);
    expect(await openShardIds(kinesis, stream)).to.deep.equal([child]);
  });
});
