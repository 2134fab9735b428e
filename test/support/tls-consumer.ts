// A Kinsumer built as the README's first example builds its clients — `new KinesisClient({...})`,
// `new DynamoDBClient({...})`, the SDK's default request handlers — reading a stream behind local
// TLS endpoints, in a process of its own: the endpoints' self-signed certificate is trusted through
// NODE_EXTRA_CA_CERTS, which Node reads at start only (nothing in the clients is set for it).
//
//   NODE_EXTRA_CA_CERTS=<cert.pem> node --import tsx test/support/tls-consumer.ts '<json TlsJob>'
//
// It prints one JSON line per `reportMs`: records received, status().connections and the warning
// events so far; a line `stop` on stdin stops it (a last line, then it exits).
import { createInterface } from 'node:readline';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { Kinsumer, type KinsumerOptions } from '../../src/index.js';

/** What the parent asks for. */
export interface TlsJob {
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly endpoints: { readonly kinesis: string; readonly dynamodb: string };
  readonly streamName: string;
  readonly applicationName: string;
  readonly readMode?: 'polling' | 'fan-out';
  readonly throttleDelayMs?: number;
  readonly reportMs: number;
}

/** One line of the child. */
export interface TlsReport {
  readonly received: number;
  readonly connections: ReturnType<Kinsumer['status']>['connections'];
  readonly warnings: readonly string[];
  readonly errors: readonly string[];
  readonly final?: boolean;
}

async function run(job: TlsJob): Promise<void> {
  const kinesis = new KinesisClient({ region: job.region, endpoint: job.endpoints.kinesis, credentials: job.credentials });
  const dynamodb = new DynamoDBClient({ region: job.region, endpoint: job.endpoints.dynamodb, credentials: job.credentials });
  const options: KinsumerOptions = {
    streamName: job.streamName, applicationName: job.applicationName, kinesis, dynamodb, initialPosition: 'TRIM_HORIZON',
    ...(job.readMode === undefined ? {} : { readMode: job.readMode }),
    ...(job.throttleDelayMs === undefined ? {} : { throttleDelayMs: job.throttleDelayMs }),
  };
  const consumer = new Kinsumer(options);
  const warnings: string[] = [];
  const errors: string[] = [];
  consumer.events$.subscribe((event) => {
    if (event.type === 'warning') warnings.push(event.message);
    if (event.type === 'error') errors.push(String(event.error));
  });
  let received = 0;
  const subscription = consumer.records$.subscribe({
    next: (record) => {
      received += 1;
      record.ack();
    },
    error: (error: unknown) => errors.push(String(error)),
  });
  const report = (final = false): void => {
    const line: TlsReport = { received, connections: consumer.status().connections, warnings, errors, ...(final ? { final } : {}) };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  };
  const timer = setInterval(() => report(), job.reportMs);
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() !== 'stop') continue;
    clearInterval(timer);
    await consumer.stop().catch((error: unknown) => errors.push(String(error)));
    subscription.unsubscribe();
    // The connections it closed at the end of the stop are gone once their sockets say so.
    const open = (): number => {
      const { kinesis, dynamodb } = consumer.status().connections;
      return (kinesis?.open ?? 0) + (dynamodb?.open ?? 0);
    };
    for (let turn = 0; turn < 1000 && open() > 0; turn += 1) await new Promise((resolve) => setImmediate(resolve));
    report(true);
    break;
  }
}

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
run(JSON.parse(process.argv[2] ?? '{}') as TlsJob).then(() => process.exit(0), (error: unknown) => {
  console.error(error);
  process.exit(1);
});
