import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { createTables } from '../../../src/index.js';
import { type LocalAws, type RunningServer, createStream, localKinesisClient, putRecords, startKinesisLocal } from '../../../src/testing/index.js';
import { eventually, uniqueName, useLocalAws } from '../../support/local.js';
import { selfSigned } from '../../support/self-signed.js';
import { type TlsFront, startTlsFront } from '../../support/tls-front.js';
import type { TlsJob, TlsReport } from '../../support/tls-consumer.js';

// The production path (design §9.1): clients built as the README's first example builds them —
// `new KinesisClient({ ... })`, `new DynamoDBClient({ ... })`, the SDK's default request handlers —
// talking to TLS endpoints. Here those endpoints are local: node:http2 secure servers (HTTP/1.1
// allowed, as AWS's) with a self-signed certificate made by the test, in front of kinesalite (or
// kinesis-local) and dynalite, counting TLS connections and checking every request's signature.
// The consumer runs in a child process (test/support/tls-consumer.ts) that trusts the certificate
// through NODE_EXTRA_CA_CERTS: nothing in its clients is configured for it.

const CONSUMER = fileURLToPath(new URL('../../support/tls-consumer.ts', import.meta.url));

/** The child and its reports. */
interface Child {
  readonly process: ChildProcessByStdio<Writable, Readable, null>;
  readonly reports: TlsReport[];
  /** Waits for `check` (see `eventually`), failing at once if the child exits meanwhile. */
  until(check: () => boolean, what: string, timeoutMs: number): Promise<void>;
  stop(): Promise<TlsReport>;
}

function startConsumer(job: TlsJob, caFile: string): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', CONSUMER, JSON.stringify(job)], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, NODE_EXTRA_CA_CERTS: caFile, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  });
  const reports: TlsReport[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void (async () => {
    for await (const line of createInterface({ input: child.stdout })) reports.push(JSON.parse(line) as TlsReport);
  })();
  return {
    process: child,
    reports,
    async until(check, what, timeoutMs) {
      await Promise.race([
        eventually(check, what, timeoutMs, 100),
        exited.then(() => { throw new Error(`the consumer exited (code ${child.exitCode}) while waiting for ${what}`); }),
      ]);
    },
    async stop() {
      if (child.exitCode !== null) throw new Error(`the consumer exited early (code ${child.exitCode})`);
      child.stdin.write('stop\n');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 30_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      const last = reports.at(-1);
      if (last?.final !== true) throw new Error(`the consumer did not stop cleanly (last report: ${JSON.stringify(last)})`);
      return last;
    },
  };
}

const count = (front: TlsFront, operation: string) => front.requests.filter((r) => r.operation === operation).length;

describe('connections on the production path: default clients, TLS endpoints', function () {
  this.timeout(180_000);
  const local = useLocalAws({ kinesis: 'kinesalite', dynamodb: 'dynalite' });
  const tls = selfSigned();
  let dir: string;
  let caFile: string;
  let kinesisFront: TlsFront;
  let dynamoFront: TlsFront;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kinsumer-tls-'));
    caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, tls.cert);
    const { credentials } = local();
    kinesisFront = await startTlsFront(local().endpoints.kinesis, tls, credentials.secretAccessKey);
    dynamoFront = await startTlsFront(local().endpoints.dynamodb, tls, credentials.secretAccessKey);
  });
  after(async () => {
    await kinesisFront?.stop();
    await dynamoFront?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const job = (aws: LocalAws, streamName: string, applicationName: string): TlsJob => ({
    region: aws.region, credentials: aws.credentials, endpoints: { kinesis: kinesisFront.endpoint, dynamodb: dynamoFront.endpoint },
    streamName, applicationName, throttleDelayMs: 200, reportMs: 250,
  });

  it('opens a bounded number of TLS connections for Kinesis and DynamoDB, however many calls it makes (not one per call), and status().connections counts them', async () => {
    const aws = local();
    const streamName = uniqueName('tls');
    const applicationName = uniqueName('tls-app');
    const shards = 4;
    await createStream(aws.kinesis, streamName, shards);
    await createTables({ dynamodb: aws.dynamodb, applicationName });
    const startConnections = { kinesis: kinesisFront.connections(), dynamodb: dynamoFront.connections() };
    const startCalls = { kinesis: count(kinesisFront, 'GetRecords'), dynamodb: dynamoFront.requests.length, requests: kinesisFront.requests.length };
    const child = startConsumer(job(aws, streamName, applicationName), caFile);
    let put = 0;
    try {
      // Records keep coming on every shard: polls go out at throttleDelayMs, not at the idle pace.
      const producer = setInterval(() => {
        const batch = Array.from({ length: 8 }, (_, i) => ({ partitionKey: `key-${put + i}`, data: `record ${put + i}` }));
        put += batch.length;
        void putRecords(aws.kinesis, streamName, batch).catch(() => undefined);
      }, 100);
      try {
        await child.until(() => count(kinesisFront, 'GetRecords') - startCalls.kinesis >= 150 && dynamoFront.requests.length - startCalls.dynamodb >= 40, 'a few hundred calls', 120_000);
      } finally {
        clearInterval(producer);
      }
      await child.until(() => (child.reports.at(-1)?.received ?? 0) >= put, `all ${put} records received`, 30_000);
    } finally {
      const last = await child.stop();
      const opened = { kinesis: kinesisFront.connections() - startConnections.kinesis, dynamodb: dynamoFront.connections() - startConnections.dynamodb };
      const calls = { kinesis: count(kinesisFront, 'GetRecords') - startCalls.kinesis, dynamodb: dynamoFront.requests.length - startCalls.dynamodb };
      // One connection per shard polled at once, a few for the control calls: never one per call.
      expect(opened.kinesis, `Kinesis TLS connections for ${calls.kinesis} GetRecords`).to.be.at.most(shards + 3);
      expect(opened.dynamodb, `DynamoDB TLS connections for ${calls.dynamodb} calls`).to.be.at.most(shards + 3);
      expect(last.connections, 'what status() counted is what the endpoints saw').to.deep.equal({
        kinesis: { opened: opened.kinesis, open: 0 }, dynamodb: { opened: opened.dynamodb, open: 0 },
      });
      expect(last.warnings, 'nothing to warn about with default clients').to.deep.equal([]);
      expect(last.errors).to.deep.equal([]);
    }
    expect([...kinesisFront.requests, ...dynamoFront.requests].filter((r) => r.signed !== true), 'every request correctly signed').to.deep.equal([]);
    const bySdk = kinesisFront.requests.slice(startCalls.requests).filter((r) => r.operation === 'GetRecords' && r.bySdk);
    // The client's first (more if the first polls of several shards go out together), then kinsumer's own.
    expect(bySdk.length, 'GetRecords sent by the SDK: the first ones only').to.be.within(1, shards);
  });

  describe('fan-out (kinesis-local behind the TLS front)', () => {
    let kinesisLocal: RunningServer;
    let fanOutFront: TlsFront;
    before(async function () {
      this.timeout(120_000);
      kinesisLocal = await startKinesisLocal();
      fanOutFront = await startTlsFront(kinesisLocal.endpoint, tls, local().credentials.secretAccessKey);
    });
    after(async () => {
      await fanOutFront?.stop();
      await kinesisLocal?.stop();
    });

    it('a SubscribeToShard keeps the client\'s HTTP/2 session; the other calls reuse kinsumer\'s connections', async () => {
      const aws = local();
      const plain = localKinesisClient(aws, { endpoint: kinesisLocal.endpoint });
      const streamName = uniqueName('tls-fan-out');
      const applicationName = uniqueName('tls-fan-out-app');
      try {
        await createStream(plain, streamName, 1);
        await createTables({ dynamodb: aws.dynamodb, applicationName });
        await putRecords(plain, streamName, Array.from({ length: 5 }, (_, i) => ({ partitionKey: `k${i}`, data: `fan-out ${i}` })));
        const child = startConsumer({ ...job(aws, streamName, applicationName), endpoints: { kinesis: fanOutFront.endpoint, dynamodb: dynamoFront.endpoint }, readMode: 'fan-out' }, caFile);
        let last: TlsReport | undefined;
        try {
          await child.until(() => (child.reports.at(-1)?.received ?? 0) >= 5, 'the 5 records through the subscription', 60_000);
        } finally {
          last = await child.stop();
        }
        const subscriptions = fanOutFront.requests.filter((r) => r.operation === 'SubscribeToShard');
        expect(subscriptions.length).to.be.at.least(1);
        expect(subscriptions.map((r) => r.httpVersion), 'SubscribeToShard over HTTP/2').to.satisfy((versions: string[]) => versions.every((v) => v === '2.0'));
        const others = fanOutFront.requests.filter((r) => r.operation !== 'SubscribeToShard');
        expect(others.map((r) => r.httpVersion), 'the other calls on kinsumer\'s HTTP/1.1 keep-alive connections').to.satisfy((versions: string[]) => versions.every((v) => v === '1.1'));
        expect(fanOutFront.sessions(), 'an HTTP/2 session per subscription, none for the other calls').to.equal(subscriptions.length);
        expect(last.connections.kinesis?.opened, 'kinsumer\'s own: the connections that are not a subscription\'s').to.equal(fanOutFront.connections() - subscriptions.length);
        expect(fanOutFront.requests.filter((r) => r.signed !== true)).to.deep.equal([]);
        expect(last.errors).to.deep.equal([]);
      } finally {
        plain.destroy();
      }
    });
  });
});
