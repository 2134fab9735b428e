import { type Http2Server, type Http2ServerRequest, type Http2ServerResponse, createServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { NodeHttp2Handler } from '@smithy/node-http-handler';
import { expect } from 'chai';
import { firstValueFrom } from 'rxjs';
import { KinesisStream } from '../../../src/kinesis/kinesis.js';
import { WireRecord } from '../../../src/kinesis/wire-record.js';
import type { RecordsPage } from '../../../src/ports/stream.js';
import { signatureHolds } from '../../support/tls-front.js';

// The lean GetRecords path over HTTP/2, through a KinesisClient's own NodeHttp2Handler: one the
// application configured (connect options), which kinsumer sends through as it is (the default
// handler, which has none, is replaced by kinsumer's own connections: test/integration/connections).
// No local Kinesis speaks HTTP/2 (kinesalite and kinesis-local need NodeHttpHandler), so this is a
// server of the test's own: node:http2 in clear text (h2c) on loopback, answering GetRecords with
// Kinesis's JSON, its errors as Kinesis sends them.

const SEQ = '49590338271490256608559692538361571095921575989136588898';
const SECRET = 'y';
const CONTENT_TYPE = 'application/x-amz-json-1.1';

/** What the next GetRecords answers: a page's JSON, sent in `chunks` DATA writes, or an error. */
type Answer = { readonly status: 200; readonly body: unknown; readonly chunks: number } | { readonly status: 400; readonly type: string; readonly message: string };

interface H2cKinesis {
  readonly endpoint: string;
  /** The answers of the next calls, in order (the last one repeats). */
  answers: Answer[];
  /** Every GetRecords request body, as JSON. */
  readonly requests: unknown[];
  /** The HTTP version of every request (`2.0`: HTTP/2). */
  readonly versions: string[];
  /** Per request: made by the SDK's stack (it carries `amz-sdk-invocation-id`), else by kinsumer's lean call. */
  readonly bySdk: boolean[];
  /** Per request: its SigV4 signature holds for what it carries. */
  readonly signed: boolean[];
  stop(): Promise<void>;
}

async function startH2cKinesis(): Promise<H2cKinesis> {
  const state: { answers: Answer[]; requests: unknown[]; versions: string[]; bySdk: boolean[]; signed: boolean[] } = { answers: [], requests: [], versions: [], bySdk: [], signed: [] };
  const server: Http2Server = createServer((request: Http2ServerRequest, response: Http2ServerResponse) => {
    const parts: Buffer[] = [];
    request.on('data', (chunk: Buffer) => parts.push(chunk));
    request.on('end', () => {
      state.versions.push(request.httpVersion);
      state.bySdk.push(request.headers['amz-sdk-invocation-id'] !== undefined);
      state.signed.push(signatureHolds(request.method, request.url, request.headers, Buffer.concat(parts), SECRET));
      if (request.headers['x-amz-target'] !== 'Kinesis_20131202.GetRecords') {
        response.writeHead(400, { 'content-type': CONTENT_TYPE });
        response.end(JSON.stringify({ __type: 'UnknownOperationException', message: String(request.headers['x-amz-target']) }));
        return;
      }
      state.requests.push(JSON.parse(Buffer.concat(parts).toString('utf8')));
      const answer = state.answers.length > 1 ? state.answers.shift() : state.answers[0];
      if (answer === undefined || answer.status === 400) {
        response.writeHead(400, { 'content-type': CONTENT_TYPE, 'x-amzn-errortype': answer?.type ?? 'InternalFailure' });
        response.end(JSON.stringify({ __type: answer?.type ?? 'InternalFailure', message: answer?.message ?? 'no answer scripted' }));
        return;
      }
      const body = Buffer.from(JSON.stringify(answer.body));
      response.writeHead(200, { 'content-type': CONTENT_TYPE, 'content-length': String(body.length) });
      // Several writes, each larger than a 16 KiB frame for a big body: several DATA frames reach the client.
      const size = Math.ceil(body.length / answer.chunks);
      for (let offset = 0; offset < body.length; offset += size) response.write(body.subarray(offset, offset + size));
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    get answers() { return state.answers; },
    set answers(answers: Answer[]) { state.answers = answers; },
    requests: state.requests,
    versions: state.versions,
    bySdk: state.bySdk,
    signed: state.signed,
    stop: () => new Promise<void>((resolve) => { server.close(() => resolve()); }),
  };
}

const record = (n: number, data: Buffer, partitionKey = `clé-${n}`) => ({
  SequenceNumber: (BigInt(SEQ) + BigInt(n)).toString(), ApproximateArrivalTimestamp: 1_700_000_000 + n, Data: data.toString('base64'), PartitionKey: partitionKey,
});

describe('lean GetRecords over HTTP/2 (h2c on loopback, a NodeHttp2Handler the application configured)', function () {
  this.timeout(30_000);
  let server: H2cKinesis;
  let client: KinesisClient;
  let stream: KinesisStream;
  before(async () => {
    server = await startH2cKinesis();
    client = new KinesisClient({
      region: 'us-east-1', endpoint: server.endpoint, credentials: { accessKeyId: 'x', secretAccessKey: SECRET }, maxAttempts: 3,
      requestHandler: new NodeHttp2Handler({ nodeHttp2ConnectOptions: {} }),
    });
    stream = new KinesisStream(client, { streamName: 'h2' });
  });
  after(async () => {
    client.destroy();
    await server.stop();
  });
  beforeEach(() => {
    for (const list of [server.requests, server.versions, server.bySdk, server.signed]) list.length = 0;
  });
  afterEach(() => {
    expect(server.signed.every(Boolean), 'every request signed for what it carries (:authority over HTTP/2)').to.equal(true);
  });

  it('decodes a page whose body came in many DATA frames, each record to its own bytes', async () => {
    const big = Buffer.alloc(300_000, 7);
    big.write('first', 0);
    const records = [record(0, big), record(1, Buffer.from('hello')), record(2, Buffer.from([0, 255, 1, 254]))];
    server.answers = [{ status: 200, body: { Records: records, NextShardIterator: 'next', MillisBehindLatest: 0 }, chunks: 40 }];
    const page: RecordsPage = await firstValueFrom(stream.getRecords('iterator-1', 100));
    expect(server.versions).to.deep.equal(['2.0']);
    expect(server.bySdk, 'the client\'s first call: the SDK\'s').to.deep.equal([true]);
    expect(server.requests).to.deep.equal([{ ShardIterator: 'iterator-1', Limit: 100 }]);
    const lean: RecordsPage = await firstValueFrom(stream.getRecords('iterator-1', 100));
    expect([server.versions, server.bySdk], 'the next: kinsumer\'s own, through the client\'s HTTP/2 handler').to.deep.equal([['2.0', '2.0'], [true, false]]);
    expect(server.requests[1], 'the same request body').to.deep.equal({ ShardIterator: 'iterator-1', Limit: 100 });
    expect(lean.records.map((r) => Buffer.from(r.data).toString('hex'))).to.deep.equal(page.records.map((r) => Buffer.from(r.data).toString('hex')));
    expect(page.records.every((r) => r instanceof WireRecord), 'decoded by the lean path, not the SDK').to.equal(true);
    expect(page.records.map((r) => [r.sequenceNumber, r.partitionKey, r.data.byteLength])).to.deep.equal([
      [records[0]?.SequenceNumber, 'clé-0', 300_000], [records[1]?.SequenceNumber, 'clé-1', 5], [records[2]?.SequenceNumber, 'clé-2', 4],
    ]);
    expect(Buffer.from(page.records[0]?.data ?? []).equals(big)).to.equal(true);
    expect(Buffer.from(page.records[1]?.data ?? []).toString()).to.equal('hello');
    expect([...(page.records[2]?.data ?? [])]).to.deep.equal([0, 255, 1, 254]);
    expect([page.nextShardIterator, page.millisBehindLatest]).to.deep.equal(['next', 0]);
  });

  it('a throttling 400 (ProvisionedThroughputExceededException) goes to the SDK, which retries: the page is the retry\'s', async () => {
    server.answers = [
      { status: 400, type: 'ProvisionedThroughputExceededException', message: 'Rate exceeded for shard shardId-000000000000' },
      { status: 200, body: { Records: [record(20, Buffer.from('after the throttle'))], NextShardIterator: 'next', MillisBehindLatest: 5 }, chunks: 3 },
    ];
    const page = await firstValueFrom(stream.getRecords('iterator-2', 10));
    expect(server.requests).to.have.length(2);
    expect(page.records.map((r) => [r.sequenceNumber, Buffer.from(r.data).toString()])).to.deep.equal([[record(20, Buffer.alloc(0)).SequenceNumber, 'after the throttle']]);
    expect(page.records[0]).to.be.instanceOf(WireRecord);
    expect(page.millisBehindLatest).to.equal(5);
    expect(server.bySdk, 'a lean call, its 400 given to the SDK as its first attempt, the SDK\'s retry').to.deep.equal([false, true]);
  });

  it('an expired iterator is the SDK\'s ExpiredIteratorException, untouched (the reader rebuilds its iterator on it)', async () => {
    server.answers = [{ status: 400, type: 'ExpiredIteratorException', message: 'Iterator expired' }];
    const error = await firstValueFrom(stream.getRecords('iterator-3', 10)).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(Error);
    expect([(error as Error).name, (error as Error).message]).to.deep.equal(['ExpiredIteratorException', 'Iterator expired']);
    expect(server.requests, 'not retried').to.have.length(1);
    expect(server.bySdk, 'the lean call\'s answer, not sent again by the SDK').to.deep.equal([false]);
  });
});
