// Bad input: checkpoint rows no kinsumer could have written (wrong attribute types, garbage
// sequence numbers). Each is reported as an `error` event for its shard (CorruptCheckpointError
// naming the attribute), the shard is not read from anywhere else (no silent reset), its row is
// left as it is, and every other shard keeps being consumed.
import { type AttributeValue, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { CorruptCheckpointError, Kinsumer } from '../../src/index.js';
import { putRecords } from '../../src/testing/index.js';
import { freshSetup, hashKeysByShard, record, text } from '../support/bad-input.js';
import { eventually, useLocalAws } from '../support/local.js';

const shard = (n: number) => `shardId-00000000000${n}`;

/** Rows as someone else's tool might have left them, and the attribute each one gets wrong. */
const CORRUPT: ReadonlyArray<{ readonly what: string; readonly attribute: string; readonly item: Record<string, AttributeValue> }> = [
  { what: 'SequenceNumber of type N', attribute: 'SequenceNumber', item: { SequenceNumber: { N: '4968079284563754462711766192' } } },
  { what: 'SequenceNumber that is not a number', attribute: 'SequenceNumber', item: { SequenceNumber: { S: 'garbage' } } },
  { what: 'LeaseCounter of type S', attribute: 'LeaseCounter', item: { SequenceNumber: { NULL: true }, LeaseCounter: { S: '3' } } },
  { what: 'LastUpdate of type S', attribute: 'LastUpdate', item: { OwnerID: { S: 'someone' }, LastUpdate: { S: 'yesterday' } } },
  // Digits, so it decodes; but no position of this shard: Kinesis refuses it (InvalidArgumentException).
  { what: 'SequenceNumber that is no position of the shard', attribute: 'SequenceNumber', item: { SequenceNumber: { S: '12345' } } },
];

describe('bad input: corrupt checkpoint rows (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  it('reports each corrupt row as an error event for its shard; the healthy shard keeps flowing', async () => {
    const healthy = shard(CORRUPT.length);
    const options = await freshSetup(local(), 'corrupt', { shards: CORRUPT.length + 1 });
    const table = `${options.applicationName}_checkpoints`;
    for (const [index, { item }] of CORRUPT.entries()) {
      await local().dynamodb.send(new PutItemCommand({ TableName: table, Item: { Shard: { S: shard(index) }, ...item } }));
    }
    const hashKeys = await hashKeysByShard(local(), options.streamName);
    await putRecords(local().kinesis, options.streamName, [...hashKeys].map(([shardId, explicitHashKey]) => ({ partitionKey: 'k', explicitHashKey, data: `first of ${shardId}` })));

    const run = record(new Kinsumer(options));
    const corruptShards = CORRUPT.map((_, index) => shard(index));
    const reported = () => new Map(run.errors().flatMap(({ shardId, error }) => (
      error instanceof CorruptCheckpointError && shardId !== undefined ? [[shardId, error] as const] : [])));
    await eventually(() => corruptShards.every((id) => reported().has(id)), 'a CorruptCheckpointError event for every corrupt shard');
    for (const [index, { what, attribute }] of CORRUPT.entries()) {
      const error = reported().get(shard(index));
      expect(error?.shardId, what).to.equal(shard(index));
      expect(error?.attribute, what).to.equal(attribute);
      expect(error?.retriable, what).to.equal(false);
    }
    expect(reported().has(healthy)).to.equal(false);

    // The consumer as a whole carries on: a record put now on the healthy shard arrives.
    await putRecords(local().kinesis, options.streamName, [{ partitionKey: 'k', explicitHashKey: hashKeys.get(healthy) ?? '', data: 'second' }]);
    await eventually(() => run.records.some((r) => text(r) === 'second'), 'the healthy shard\'s second record');
    expect(run.outcome().kind).to.equal('running');
    await run.consumer.stop();

    // Only the healthy shard was read: no corrupt shard was silently restarted from anywhere.
    expect(run.records.map((r) => r.shardId)).to.deep.equal([healthy, healthy]);
    expect(run.records.map(text)).to.deep.equal([`first of ${healthy}`, 'second']);
    // The rows were left for an operator to see: the attribute at fault is unchanged.
    for (const [index, { what, attribute, item }] of CORRUPT.entries()) {
      const row = await local().dynamodb.send(new GetItemCommand({ TableName: table, Key: { Shard: { S: shard(index) } }, ConsistentRead: true }));
      expect(row.Item?.[attribute], what).to.deep.equal(item[attribute]);
    }
  });
});
