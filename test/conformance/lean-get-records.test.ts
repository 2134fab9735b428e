import {
  type KinesisClient, GetRecordsCommand, GetShardIteratorCommand, StartStreamEncryptionCommand, type _Record as SdkRecord,
} from '@aws-sdk/client-kinesis';
import { expect } from 'chai';
import { firstValueFrom } from 'rxjs';
import { classifyAwsError } from '../../src/errors/aws-error-kind.js';
import { StreamNotFoundError } from '../../src/errors/kinsumer-errors.js';
import { KinesisStream } from '../../src/kinesis/kinesis.js';
import type { RawRecord, RecordsPage } from '../../src/ports/stream.js';
import {
  type LocalAwsConfig, type RunningServer, createStream, localKinesisClient, openShardIds, putRecords, startKinesalite, startKinesisLocal,
  waitForStreamStatus,
} from '../../src/testing/index.js';
import { unpackRecords } from '../../src/reading/unpack-page.js';
import { WireRecord } from '../../src/kinesis/wire-record.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { errorShape, failure, watchCommands } from '../support/sdk-calls.js';
import { aggregate } from '../support/kpl-aggregate.js';
import { uniqueName } from '../support/local.js';

// kinsumer decodes GetRecords answers itself (src/kinesis/get-records.ts), and after the client's
// first call sends them itself (src/kinesis/lean-call.ts), handing any error to the SDK as its first
// attempt. Here the same records, read once through KinesisStream and once through a plain SDK
// GetRecordsCommand, must come out the same, on both local Kinesis servers; errors must stay
// exactly the SDK's, on the client's first call (the SDK's) and on lean calls after it.

const SERVERS: ReadonlyArray<{ readonly name: string; start(): Promise<RunningServer>; readonly encryption: boolean }> = [
  { name: 'kinesalite', start: () => startKinesalite(), encryption: false },
  { name: 'kinesis-local', start: () => startKinesisLocal(), encryption: true },
];

const config = (endpoint: string): LocalAwsConfig => ({
  region: 'us-east-1',
  endpoints: { kinesis: endpoint, dynamodb: 'http://127.0.0.1:1' },
  credentials: { accessKeyId: 'AKIDLOCALTEST', secretAccessKey: 'local-test' },
});

const hex = (data: Uint8Array | undefined): string => Buffer.from(data ?? new Uint8Array(0)).toString('hex');

/** What the SDK's own deserializer made of a record, as kinsumer's StreamPort would carry it. */
function fromSdk(record: SdkRecord): RawRecord {
  const raw = {
    sequenceNumber: record.SequenceNumber ?? '',
    partitionKey: record.PartitionKey ?? '',
    data: record.Data ?? new Uint8Array(0),
    approximateArrivalTimestamp: record.ApproximateArrivalTimestamp ?? new Date(0),
  };
  return record.EncryptionType === undefined ? raw : { ...raw, encryptionType: record.EncryptionType };
}

/** Every field of a raw record, comparable (getters read, bytes as hex, the Date as milliseconds). */
function fieldsOf(record: RawRecord) {
  return {
    sequenceNumber: record.sequenceNumber,
    partitionKey: record.partitionKey,
    data: hex(record.data),
    dataType: Object.getPrototypeOf(record.data) as unknown,
    arrivalMs: record.approximateArrivalTimestamp.getTime(),
    encryptionType: record.encryptionType,
  };
}

const payloads: ReadonlyArray<{ partitionKey: string; data: Uint8Array | string; explicitHashKey?: string }> = [
  { partitionKey: 'bytes', data: Uint8Array.from({ length: 256 }, (_, i) => i) },
  { partitionKey: 'ключ 🔑 "quoted" \\ back', data: 'text with "quotes", \\ and ünïcödé' },
  { partitionKey: 'large', data: Uint8Array.from({ length: 100_000 }, (_, i) => (i * 7919) % 256) },
  { partitionKey: 'one byte', data: new Uint8Array([0]) },
  { partitionKey: 'hashed', data: 'explicit hash key on a plain record', explicitHashKey: '1234567890' },
  aggregate([
    { partitionKey: 'sub-a', data: 'first' },
    { partitionKey: 'sub-b', data: new Uint8Array([0, 255, 1, 254]), explicitHashKey: '99999999999999999999' },
    { partitionKey: 'sub-a', data: '' },
  ]),
];

for (const server of SERVERS) {
  describe(`conformance: lean GetRecords against the SDK's deserializer (${server.name})`, function () {
    this.timeout(120_000);
    let running: RunningServer;
    let client: KinesisClient;
    before(async () => {
      running = await server.start();
      client = localKinesisClient(config(running.endpoint));
    });
    after(async () => {
      client?.destroy();
      await running?.stop();
    });

    /**
     * The same shard read three times from TRIM_HORIZON: through KinesisStream (its first call, which
     * the SDK sends, then a lean call of its own), and through the SDK alone. The lean call's page.
     */
    async function readBothWays(streamName: string): Promise<{ lean: RecordsPage; sdk: RawRecord[]; sdkMillisBehind: number | undefined }> {
      const [shardId = ''] = await openShardIds(client, streamName);
      const iterator = async () => (await client.send(new GetShardIteratorCommand({ StreamName: streamName, ShardId: shardId, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator ?? '';
      const stream = new KinesisStream(client, { streamName });
      const first = await firstValueFrom(stream.getRecords(await iterator(), 100));
      const lean = await firstValueFrom(stream.getRecords(await iterator(), 100));
      expect(lean.records.map(fieldsOf), 'the first call and the lean call read the same').to.deep.equal(first.records.map(fieldsOf));
      const out = await client.send(new GetRecordsCommand({ ShardIterator: await iterator(), Limit: 100 }));
      return { lean, sdk: (out.Records ?? []).map(fromSdk), sdkMillisBehind: out.MillisBehindLatest };
    }

    it('the same records with the same fields: bytes (binary, large, text, KPL), keys, arrival times, sequence numbers', async () => {
      const streamName = uniqueName('lean');
      await createStream(client, streamName, 1);
      await putRecords(client, streamName, payloads);
      const { lean, sdk, sdkMillisBehind } = await readBothWays(streamName);
      expect(lean.records.every((r) => r instanceof WireRecord), 'decoded by kinsumer, not by the SDK').to.equal(true);
      expect(lean.records.map(fieldsOf)).to.deep.equal(sdk.map(fieldsOf));
      expect(lean.records).to.have.length(payloads.length);
      expect(lean.nextShardIterator).to.be.a('string');
      expect(typeof lean.millisBehindLatest).to.equal(typeof sdkMillisBehind);
      expect(lean.childShardIds).to.equal(undefined);
      // What the application receives: KPL split the same, every field the same.
      const delivered = (raw: readonly RawRecord[]) => unpackRecords(raw, undefined, { shardId: 'shard', leaseSignal: undefined }).records.map((r) => ({
        sequenceNumber: r.sequenceNumber, subSequenceNumber: r.subSequenceNumber, partitionKey: r.partitionKey,
        explicitHashKey: r.explicitHashKey, hasExplicitHashKey: 'explicitHashKey' in r, data: hex(r.data), arrivalMs: r.approximateArrivalTimestamp.getTime(),
      }));
      const fromLean = delivered(lean.records);
      expect(fromLean).to.deep.equal(delivered(sdk));
      expect(fromLean.map((r) => r.subSequenceNumber)).to.deep.equal([undefined, undefined, undefined, undefined, undefined, 0, 1, 2]);
      expect(fromLean[6]?.explicitHashKey).to.equal('99999999999999999999');
    });

    it(`the encryption type of every record, as the SDK reads it${server.encryption ? ' (KMS on an encrypted stream)' : ' (none: kinesalite has no encryption)'}`, async () => {
      const streamName = uniqueName('lean-kms');
      await createStream(client, streamName, 1);
      if (server.encryption) {
        await client.send(new StartStreamEncryptionCommand({ StreamName: streamName, EncryptionType: 'KMS', KeyId: 'alias/aws/kinesis' }));
        await waitForStreamStatus(client, streamName, 'ACTIVE');
      }
      await putRecords(client, streamName, [{ partitionKey: 'k', data: 'secret' }, { partitionKey: 'k', data: 'also secret' }]);
      const { lean, sdk } = await readBothWays(streamName);
      expect(lean.records.map((r) => r.encryptionType)).to.deep.equal(sdk.map((r) => r.encryptionType));
      expect(lean.records.map((r) => r.encryptionType)).to.deep.equal(server.encryption ? ['KMS', 'KMS'] : [undefined, undefined]);
      expect(lean.records.map(fieldsOf)).to.deep.equal(sdk.map(fieldsOf));
    });

    it('an empty page: no records, an iterator, the same lag type', async () => {
      const streamName = uniqueName('lean-empty');
      await createStream(client, streamName, 1);
      const { lean, sdk, sdkMillisBehind } = await readBothWays(streamName);
      expect([lean.records.length, sdk.length]).to.deep.equal([0, 0]);
      expect(lean.nextShardIterator).to.be.a('string');
      expect(typeof lean.millisBehindLatest).to.equal(typeof sdkMillisBehind);
    });
  });
}

describe('conformance: lean GetRecords errors are the SDK\'s (kinesalite behind the fault proxy)', function () {
  this.timeout(60_000);
  let running: RunningServer;
  let proxy: FaultProxy;
  let client: KinesisClient;
  let streamName: string;
  let iterator: string;
  // Its first call went through the SDK: every call of the tests is a lean one.
  let stream: KinesisStream;
  before(async () => {
    running = await startKinesalite();
    proxy = await startFaultProxy({ target: running.endpoint });
    // One attempt per call: the SDK's own retries would hide what the proxy answered.
    client = localKinesisClient(config(running.endpoint), { endpoint: proxy.endpoint, maxAttempts: 1 });
    streamName = uniqueName('lean-errors');
    await createStream(client, streamName, 1);
    const [shardId = ''] = await openShardIds(client, streamName);
    iterator = (await client.send(new GetShardIteratorCommand({ StreamName: streamName, ShardId: shardId, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator ?? '';
    stream = new KinesisStream(client, { streamName });
    await firstValueFrom(stream.getRecords(iterator, 10));
  });
  after(async () => {
    client?.destroy();
    await proxy?.stop();
    await running?.stop();
  });



  for (const error of ['ProvisionedThroughputExceededException', 'ExpiredIteratorException', 'InternalFailure', 'KMSThrottlingException', 'AccessDeniedException']) {
    it(`${error}: the same error class, name, fault, status and message as the SDK's`, async () => {
      proxy.script('GetRecords', 1, { kind: 'error', error });
      const sdk = await failure(client.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 10 })));
      proxy.script('GetRecords', 1, { kind: 'error', error });
      const first = await failure(firstValueFrom(new KinesisStream(client, { streamName }).getRecords(iterator, 10)));
      proxy.script('GetRecords', 1, { kind: 'error', error });
      const calls = proxy.counts().calls.GetRecords ?? 0;
      const lean = await failure(firstValueFrom(stream.getRecords(iterator, 10)));
      expect(errorShape(first)).to.deep.equal(errorShape(sdk));
      expect(errorShape(lean)).to.deep.equal(errorShape(sdk));
      expect((lean as Error).name).to.equal(error);
      expect(proxy.counts().calls.GetRecords, 'the lean call\'s answer is the SDK\'s attempt: not sent again').to.equal(calls + 1);
    });
  }

  it('ResourceNotFoundException: StreamNotFoundError, its cause the SDK\'s own error', async () => {
    proxy.script('GetRecords', 1, { kind: 'error', error: 'ResourceNotFoundException' });
    const sdk = await failure(client.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 10 })));
    proxy.script('GetRecords', 1, { kind: 'error', error: 'ResourceNotFoundException' });
    const lean = await failure(firstValueFrom(stream.getRecords(iterator, 10)));
    expect(lean).to.be.instanceOf(StreamNotFoundError);
    expect(errorShape((lean as Error).cause)).to.deep.equal(errorShape(sdk));
  });

  it('a dropped connection: the same network error class as the SDK\'s (transient)', async () => {
    proxy.script('GetRecords', 1, { kind: 'drop' });
    const sdk = await failure(client.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 10 })));
    proxy.script('GetRecords', 1, { kind: 'drop' });
    const lean = await failure(firstValueFrom(stream.getRecords(iterator, 10)));
    expect(errorShape(lean).constructor).to.equal(errorShape(sdk).constructor);
    expect([classifyAwsError(lean), classifyAwsError(sdk)]).to.deep.equal(['transient', 'transient']);
  });

  it('a client with middleware of the application\'s: every GetRecords through the SDK, so the middleware sees each', async () => {
    const watched = localKinesisClient(config(running.endpoint), { endpoint: proxy.endpoint, maxAttempts: 1 });
    const seen = watchCommands(watched);
    try {
      const traced = new KinesisStream(watched, { streamName });
      const from = proxy.log().length;
      for (let turn = 0; turn < 3; turn += 1) await firstValueFrom(traced.getRecords(iterator, 10));
      expect(seen).to.deep.equal(['GetRecordsCommand', 'GetRecordsCommand', 'GetRecordsCommand']);
      expect(proxy.log().slice(from).map((c) => c.bySdk)).to.deep.equal([true, true, true]);
    } finally {
      watched.destroy();
    }
  });

  it('after the faults, the next call reads normally through the lean path', async () => {
    const from = proxy.log().length;
    const page = await firstValueFrom(stream.getRecords(iterator, 10));
    expect(proxy.log().slice(from), 'kinsumer\'s own call').to.deep.equal([{ operation: 'GetRecords', bySdk: false }]);
    expect(page.records).to.deep.equal([]);
    expect(page.nextShardIterator).to.be.a('string');
  });
});
