import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import {
  DescribeTableCommand, GetItemCommand, InternalServerError, PutItemCommand, ProvisionedThroughputExceededException as DynamoThroughputExceeded,
} from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamSummaryCommand, ExpiredIteratorException, GetRecordsCommand, GetShardIteratorCommand, LimitExceededException,
  ListShardsCommand, ProvisionedThroughputExceededException,
} from '@aws-sdk/client-kinesis';
import { expect } from 'chai';
import { classifyAwsError } from '../../src/errors/aws-error-kind.js';
import { createTables } from '../../src/index.js';
import { createStream, localDynamoDbClient, localKinesisClient, openShardIds } from '../../src/testing/index.js';
import { type FaultProxy, type FaultProxyCounts, startFaultProxy } from '../support/fault-proxy.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';

const failure = async (call: Promise<unknown>): Promise<Error & { $metadata?: { httpStatusCode?: number } }> => {
  try {
    await call;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the call to fail');
};

describe('fault proxy (kinesalite, dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();
  let proxies: FaultProxy[] = [];
  afterEach(async () => {
    await Promise.all(proxies.map((p) => p.stop()));
    proxies = [];
  });
  const proxy = async (target: string, seed?: number) => {
    const started = await startFaultProxy({ target, ...(seed === undefined ? {} : { seed }) });
    proxies.push(started);
    return started;
  };
  // One attempt per call: the SDK's own retries would hide what the proxy answered.
  const kinesisVia = (p: FaultProxy) => localKinesisClient(local(), { endpoint: p.endpoint, maxAttempts: 1 });
  const dynamoVia = (p: FaultProxy) => localDynamoDbClient(local(), { endpoint: p.endpoint, maxAttempts: 1 });

  describe('Kinesis', () => {
    let stream: string;
    let shardId: string;
    before(async () => {
      stream = uniqueName('proxy');
      await createStream(local().kinesis, stream, 1);
      [shardId = ''] = await openShardIds(local().kinesis, stream);
    });

    it('the SDK sees exactly the injected error class, for the scripted number of calls, then real answers', async () => {
      const p = await proxy(local().endpoints.kinesis);
      const kinesis = kinesisVia(p);
      const { ShardIterator } = await kinesis.send(new GetShardIteratorCommand({ StreamName: stream, ShardId: shardId, ShardIteratorType: 'TRIM_HORIZON' }));
      const get = () => kinesis.send(new GetRecordsCommand({ ShardIterator }));
      p.script('GetRecords', 2, { kind: 'error', error: 'ProvisionedThroughputExceededException' });
      p.script('GetRecords', 1, { kind: 'error', error: 'LimitExceededException' });
      p.script('GetRecords', 1, { kind: 'error', error: 'ExpiredIteratorException' });
      p.script('GetRecords', 1, { kind: 'error', error: 'InternalFailure' });
      const errors = [await failure(get()), await failure(get()), await failure(get()), await failure(get()), await failure(get())];
      expect(errors[0]).to.be.instanceOf(ProvisionedThroughputExceededException);
      expect(errors[1]).to.be.instanceOf(ProvisionedThroughputExceededException);
      expect(errors[2]).to.be.instanceOf(LimitExceededException);
      expect(errors[3]).to.be.instanceOf(ExpiredIteratorException);
      expect(errors[4]?.name).to.equal('InternalFailure');
      expect(errors.map((e) => e.$metadata?.httpStatusCode)).to.deep.equal([400, 400, 400, 400, 500]);
      expect(errors.map(classifyAwsError)).to.deep.equal(['transient', 'transient', 'transient', 'transient', 'transient']);
      const ok = await get();
      expect(ok.Records).to.deep.equal([]);
      expect(p.counts().calls).to.deep.equal({ GetShardIterator: 1, GetRecords: 6 });
      expect(p.counts().faults).to.deep.equal({ GetRecords: 5 });
      expect(p.counts().byFault).to.deep.equal({ ProvisionedThroughputExceededException: 2, LimitExceededException: 1, ExpiredIteratorException: 1, InternalFailure: 1 });
      kinesis.destroy();
    });

    it('a scripted fault hits only its operation', async () => {
      const p = await proxy(local().endpoints.kinesis);
      const kinesis = kinesisVia(p);
      p.script('GetShardIterator', 1, { kind: 'error', error: 'ProvisionedThroughputExceededException' });
      const shards = await kinesis.send(new ListShardsCommand({ StreamName: stream }));
      expect(shards.Shards).to.have.length(1);
      expect(await failure(kinesis.send(new GetShardIteratorCommand({ StreamName: stream, ShardId: shardId, ShardIteratorType: 'LATEST' }))))
        .to.be.instanceOf(ProvisionedThroughputExceededException);
      kinesis.destroy();
    });

    it('a dropped connection reaches the SDK as a network error that classifies as transient', async () => {
      const p = await proxy(local().endpoints.kinesis);
      const kinesis = kinesisVia(p);
      p.script('ListShards', 1, { kind: 'drop' });
      const error = await failure(kinesis.send(new ListShardsCommand({ StreamName: stream })));
      expect(error.$metadata?.httpStatusCode).to.equal(undefined);
      expect(classifyAwsError(error)).to.equal('transient');
      expect((await kinesis.send(new ListShardsCommand({ StreamName: stream }))).Shards).to.have.length(1);
      expect(p.counts().byFault).to.deep.equal({ drop: 1 });
      kinesis.destroy();
    });

    it('latency holds a call back: a delayed call sent first answers after an undelayed one sent later', async () => {
      const p = await proxy(local().endpoints.kinesis);
      const kinesis = kinesisVia(p);
      p.script('DescribeStreamSummary', 1, { kind: 'latency', ms: 500 });
      const order: string[] = [];
      const slow = kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream })).then(() => order.push('delayed'));
      await eventually(() => p.counts().calls.DescribeStreamSummary === 1, 'the delayed call to reach the proxy');
      await kinesis.send(new ListShardsCommand({ StreamName: stream })).then(() => order.push('undelayed'));
      await slow;
      expect(order).to.deep.equal(['undelayed', 'delayed']);
      kinesis.destroy();
    });

    it('an aborted request is counted, and the proxy keeps serving', async () => {
      const p = await proxy(local().endpoints.kinesis);
      const kinesis = kinesisVia(p);
      p.script('ListShards', 1, { kind: 'latency', ms: 5000 });
      const controller = new AbortController();
      const call = kinesis.send(new ListShardsCommand({ StreamName: stream }), { abortSignal: controller.signal });
      await eventually(() => p.counts().calls.ListShards === 1, 'the call to reach the proxy');
      controller.abort();
      expect((await failure(call)).name).to.equal('AbortError');
      await eventually(() => p.counts().aborted === 1, 'the proxy to see the abort');
      expect((await kinesis.send(new ListShardsCommand({ StreamName: stream }))).Shards).to.have.length(1);
      kinesis.destroy();
    });

    it('rates are seeded: the same seed faults the same calls', async () => {
      const pattern = async (seed: number) => {
        const p = await proxy(local().endpoints.kinesis, seed);
        p.setRules([{ operation: 'ListShards', rate: 0.5, fault: { kind: 'error', error: 'LimitExceededException' } }]);
        const kinesis = kinesisVia(p);
        const outcome: boolean[] = [];
        for (let i = 0; i < 30; i += 1) {
          outcome.push(await kinesis.send(new ListShardsCommand({ StreamName: stream })).then(() => true, () => false));
        }
        kinesis.destroy();
        return { outcome, counts: p.counts() };
      };
      const first = await pattern(7);
      const again = await pattern(7);
      const other = await pattern(8);
      expect(again.outcome).to.deep.equal(first.outcome);
      expect(other.outcome).to.not.deep.equal(first.outcome);
      const failed = first.outcome.filter((ok) => !ok).length;
      expect(failed).to.equal(first.counts.faults.ListShards);
      expect(failed).to.be.within(5, 25);
    });
  });

  describe('DynamoDB', () => {
    let table: string;
    before(async () => {
      const app = uniqueName('proxy');
      await createTables({ dynamodb: local().dynamodb, applicationName: app });
      table = `${app}_clients`;
    });

    it('a lost answer: the call is forwarded and applied, the client only sees the connection drop', async () => {
      const p = await proxy(local().endpoints.dynamodb);
      const dynamodb = dynamoVia(p);
      const item = { ID: { S: 'lost-answer' } };
      p.script('PutItem', 1, { kind: 'lose' });
      const error = await failure(dynamodb.send(new PutItemCommand({ TableName: table, Item: item })));
      expect(classifyAwsError(error)).to.equal('transient');
      const stored = await local().dynamodb.send(new GetItemCommand({ TableName: table, Key: item, ConsistentRead: true }));
      expect(stored.Item).to.deep.equal(item);
      expect(p.counts().byFault).to.deep.equal({ lose: 1 });
    });

    it('throttling and 500s arrive with DynamoDB\'s namespaced __type as the SDK\'s error classes', async () => {
      const p = await proxy(local().endpoints.dynamodb);
      const dynamodb = dynamoVia(p);
      const describe = () => dynamodb.send(new DescribeTableCommand({ TableName: table }));
      p.script('DescribeTable', 1, { kind: 'error', error: 'ProvisionedThroughputExceededException' });
      p.script('DescribeTable', 1, { kind: 'error', error: 'ThrottlingException' });
      p.script('DescribeTable', 1, { kind: 'error', error: 'InternalServerError' });
      const throughput = await failure(describe());
      const throttling = await failure(describe());
      const internal = await failure(describe());
      expect(throughput).to.be.instanceOf(DynamoThroughputExceeded);
      expect(throttling.name).to.equal('ThrottlingException');
      expect(internal).to.be.instanceOf(InternalServerError);
      expect([throughput, throttling, internal].map((e) => e.$metadata?.httpStatusCode)).to.deep.equal([400, 400, 500]);
      expect([throughput, throttling, internal].map(classifyAwsError)).to.deep.equal(['transient', 'transient', 'transient']);
      expect((await describe()).Table?.TableName).to.equal(table);
      expect(p.counts().calls).to.deep.equal({ DescribeTable: 4 });
      dynamodb.destroy();
    });
  });

  it('runs as its own process: prints its endpoint, applies --rules, prints its counts on SIGTERM', async () => {
    const stream = uniqueName('proxy-cli');
    await createStream(local().kinesis, stream, 1);
    const rules = [{ operation: 'ListShards', rate: 1, fault: { kind: 'error', error: 'LimitExceededException' } }];
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/fault-proxy.ts', '--target', local().endpoints.kinesis, '--rules', JSON.stringify(rules)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    try {
      const { endpoint } = JSON.parse(String((await lines.next()).value)) as { endpoint: string };
      const kinesis = localKinesisClient(local(), { endpoint, maxAttempts: 1 });
      expect(await failure(kinesis.send(new ListShardsCommand({ StreamName: stream })))).to.be.instanceOf(LimitExceededException);
      expect((await kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream }))).StreamDescriptionSummary?.StreamName).to.equal(stream);
      kinesis.destroy();
      child.kill('SIGTERM');
      const counts = JSON.parse(String((await lines.next()).value)) as FaultProxyCounts;
      expect(counts.calls).to.deep.equal({ ListShards: 1, DescribeStreamSummary: 1 });
      expect(counts.faults).to.deep.equal({ ListShards: 1 });
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
