// status(), pause() and resume() on the local servers (issue 16 item 1). Kinesis goes through the
// fault proxy, which only counts the calls here: it shows that a paused client sends no GetRecords.
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { Kinsumer, createTables, type KinsumerRecord } from '../../src/index.js';
import { createStream, localKinesisClient, openShardIds, putRecords } from '../../src/testing/index.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';
import { FAST } from '../support/memory-group.js';

describe('status(), pause() and resume() (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();
  let proxy: FaultProxy | undefined;
  afterEach(async () => {
    await proxy?.stop();
    proxy = undefined;
  });

  it('status() shows the held shard with its checkpoint and lag; paused, no GetRecords goes out over heartbeats that keep the lease, and resumed, reading goes on', async () => {
    const streamName = uniqueName('operate');
    const applicationName = uniqueName('app');
    await createStream(local().kinesis, streamName, 1);
    await createTables({ dynamodb: local().dynamodb, applicationName });
    const [shardId = ''] = await openShardIds(local().kinesis, streamName);
    const put = (from: number) => putRecords(local().kinesis, streamName, Array.from({ length: 5 }, (_, i) => ({ partitionKey: 'k', data: `r${from + i}` })));
    await put(0);
    proxy = await startFaultProxy({ target: local().endpoints.kinesis });
    const kinesis = localKinesisClient(local(), { endpoint: proxy.endpoint });
    const consumer = new Kinsumer({ ...FAST, streamName, applicationName, clientName: 'operator', kinesis, dynamodb: local().dynamodb });
    const received: KinsumerRecord[] = [];
    consumer.records$.subscribe((record) => { received.push(record); record.ack(); });
    await eventually(() => received.length === 5 && consumer.status().shards[0]?.checkpoint?.sequenceNumber === received[4]?.sequenceNumber, 'five records, checkpointed');
    const status = consumer.status();
    expect(status).to.include({ clientName: 'operator', state: 'running', leader: true, members: 1 });
    expect(status.shards).to.have.length(1);
    expect(status.shards[0]).to.include({ shardId, inFlight: 0, pending: 0 });
    expect(status.shards[0]?.millisBehindLatest).to.be.a('number');
    expect(status.shards[0]?.lastRecordAt).to.be.instanceOf(Date);
    expect(status.shards[0]?.lastCheckpointAt).to.be.instanceOf(Date);

    consumer.pause();
    expect(consumer.status().state).to.equal('paused');
    // A GetRecords already on its way when pause() came may still answer: count from after it.
    // A lease lives by its owner's clients row: its heartbeats are what keep the shard while paused.
    const lastUpdate = async () => (await local().dynamodb.send(new GetItemCommand({
      TableName: `${applicationName}_clients`, Key: { ID: { S: status.clientId } }, ConsistentRead: true,
    }))).Item?.LastUpdate?.N;
    await eventually(async () => (proxy?.counts().calls.GetRecords ?? 0) > 0 && (await lastUpdate()) !== undefined, 'the row');
    const callsAtPause = proxy.counts().calls.GetRecords ?? 0;
    await put(5);
    // Two heartbeats (the row's LastUpdate moves twice) with reading paused.
    const seen = new Set([await lastUpdate()]);
    await eventually(async () => { seen.add(await lastUpdate()); return seen.size >= 3; }, 'two heartbeats while paused');
    expect(proxy.counts().calls.GetRecords ?? 0).to.be.at.most(callsAtPause + 1);
    expect(received).to.have.length(5);
    expect(consumer.status().shards[0]?.fencingToken).to.equal(status.shards[0]?.fencingToken);

    consumer.resume();
    await eventually(() => received.length === 10, 'the next five');
    expect(received.map((r) => new TextDecoder().decode(r.data))).to.deep.equal(Array.from({ length: 10 }, (_, i) => `r${i}`));
    await consumer.stop();
    expect(consumer.status()).to.deep.include({ state: 'stopped', shards: [] });
    kinesis.destroy();
  });
});
