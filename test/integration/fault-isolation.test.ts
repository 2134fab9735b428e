// Faults on the local servers, through the fault proxy: one shard's fault ends that shard only
// (design §7.1), and a call that never answers is aborted and retried (requestTimeoutMs).
import { expect } from 'chai';
import { Kinsumer, ShardReadError, createTables, type KinsumerEvent, type KinsumerRecord } from '../../src/index.js';
import { createStream, localDynamoDbClient, localKinesisClient, putRecords } from '../../src/testing/index.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';
import { FAST } from '../support/memory-group.js';

describe('fault isolation on the local servers (fault proxy)', function () {
  this.timeout(60_000);
  const local = useLocalAws();
  let proxy: FaultProxy | undefined;
  afterEach(async () => {
    await proxy?.stop();
    proxy = undefined;
  });

  async function group(shards: number, records: number): Promise<{ streamName: string; applicationName: string }> {
    const streamName = uniqueName('isolate');
    const applicationName = uniqueName('app');
    await createStream(local().kinesis, streamName, shards);
    await createTables({ dynamodb: local().dynamodb, applicationName });
    await putRecords(local().kinesis, streamName, Array.from({ length: records }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    return { streamName, applicationName };
  }

  it('an unknown error answered to one shard\'s GetRecords ends that shard only; the other reads on and every record arrives', async () => {
    const names = await group(2, 30);
    proxy = await startFaultProxy({ target: local().endpoints.kinesis });
    proxy.script('GetRecords', 1, { kind: 'error', error: 'SomethingNewException', status: 400 });
    // One attempt per call: the SDK's own retries would answer the next call normally.
    const kinesis = localKinesisClient(local(), { endpoint: proxy.endpoint, maxAttempts: 1 });
    const consumer = new Kinsumer({ ...FAST, ...names, kinesis, dynamodb: local().dynamodb });
    const events: KinsumerEvent[] = [];
    consumer.events$.subscribe((event) => events.push(event));
    const received: KinsumerRecord[] = [];
    let failure: unknown;
    consumer.records$.subscribe({ next: (record) => { received.push(record); record.ack(); }, error: (error: unknown) => { failure = error; } });
    await eventually(() => failure !== undefined || new Set(received.map((r) => r.sequenceNumber)).size === 30, 'every record, or records$ failing');
    expect(failure).to.equal(undefined);
    const errors = events.filter((e): e is Extract<KinsumerEvent, { type: 'error' }> => e.type === 'error');
    expect(errors).to.have.length(1);
    expect(errors[0]?.shardId).to.match(/^shardId-/);
    expect(errors[0]?.error).to.be.instanceOf(ShardReadError);
    expect((errors[0]?.error.cause as Error).name).to.equal('SomethingNewException');
    expect(proxy.counts().faults).to.deep.equal({ GetRecords: 1 });
    await consumer.stop();
    kinesis.destroy();
  });

  it('a DynamoDB call the proxy holds open is aborted after requestTimeoutMs, reported as retrying and sent again; every record arrives', async () => {
    const names = await group(1, 10);
    proxy = await startFaultProxy({ target: local().endpoints.dynamodb });
    // The first UpdateItem (the registering heartbeat: captures come after it) gets no answer for ten minutes.
    proxy.script('UpdateItem', 1, { kind: 'latency', ms: 600_000 });
    const dynamodb = localDynamoDbClient(local(), { endpoint: proxy.endpoint });
    const consumer = new Kinsumer({ ...FAST, ...names, kinesis: local().kinesis, dynamodb, requestTimeoutMs: 1000 });
    const events: KinsumerEvent[] = [];
    consumer.events$.subscribe((event) => events.push(event));
    const received: KinsumerRecord[] = [];
    consumer.records$.subscribe((record) => { received.push(record); record.ack(); });
    await eventually(() => received.length === 10, 'every record');
    const retried = events.filter((e): e is Extract<KinsumerEvent, { type: 'retrying' }> => e.type === 'retrying');
    expect(retried.map((e) => [e.error.name, e.error.message])).to.deep.equal([['RequestTimeoutError', 'heartbeat did not answer within 1000 ms']]);
    expect(proxy.counts().aborted).to.equal(1);
    await consumer.stop();
    dynamodb.destroy();
  });
});
