// One consumer of several shards at a steady pace, alone in its process, for the fixed-cost figure
// (bench/fixed-cost.ts): kinsumer (defaults, its own pacing: throttleDelayMs, a second on a quiet
// shard), the bare SDK GetRecords loop, or the raw node:http loop, the last two polling every shard
// every `pollMs` from LATEST. After a settling time (kinsumer: once it holds every shard) it measures
// its CPU (`process.cpuUsage`: every thread, GC included) and its calls over `windowMs`, and prints
// one JSON line.
//
//   node --import tsx bench/support/paced-consumer.ts '<json PacedJob>'
import type { LocalAwsConfig } from '../../src/testing/index.js';

/** The consumers of the fixed-cost figure. */
export type PacedConsumer = 'kinsumer' | 'bareSdk' | 'rawHttp';

/** What the figure asks one child for. */
export interface PacedJob {
  readonly consumer: PacedConsumer;
  readonly servers: LocalAwsConfig;
  readonly streamName: string;
  readonly shardIds: readonly string[];
  /** kinsumer's application name (a fresh one per run). */
  readonly app: string;
  /** The bare and raw loops: each shard polled this often. */
  readonly pollMs: number;
  /** After the start (kinsumer: after it holds every shard), this long before measuring. */
  readonly settleMs: number;
  readonly windowMs: number;
}

/** What a child prints. */
export interface PacedResult {
  readonly cpuMicros: number;
  readonly wallMs: number;
  readonly records: number;
  /** GetRecords answered in the window (kinsumer: counted by its `stats`). */
  readonly kinesisCalls: number;
  /** `Date.now()` at the window's start and end: the figure counts DynamoDB calls in it at its proxy. */
  readonly window: { readonly fromMs: number; readonly toMs: number };
  /** What the payloads added up to (read, so not optimised away). */
  readonly checksum: number;
}

// Nothing is added to kinsumer's clients (it leaves a client with middleware of the application's on
// the SDK's path, which is not what is measured): GetRecords through its stats, DynamoDB at a proxy.
const counts = { records: 0, kinesis: 0 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Every consumer reads every payload (kinsumer decodes one when it is read).
let checksum = 0;
function touch(data: Uint8Array | undefined): void {
  checksum = (checksum + (data?.length ?? 0)) | 0;
}

async function kinsumer(job: PacedJob): Promise<() => Promise<void>> {
  const { Kinsumer, createTables } = await import('../../src/index.js');
  const { localDynamoDbClient, localKinesisClient } = await import('../../src/testing/index.js');
  const kinesis = localKinesisClient(job.servers);
  const dynamodb = localDynamoDbClient(job.servers);
  await createTables({ dynamodb, applicationName: job.app });
  const consumer = new Kinsumer({
    streamName: job.streamName, applicationName: job.app, kinesis, dynamodb, clientId: `${job.app}-client`, initialPosition: 'LATEST',
    stats: { eventsFromKinesis: () => { counts.kinesis += 1; } },
  });
  const subscription = consumer.records$.subscribe((record) => {
    touch(record.data);
    counts.records += 1;
    record.ack();
  });
  const deadline = Date.now() + 120_000;
  while (consumer.status().shards.length < job.shardIds.length) {
    if (Date.now() > deadline) throw new Error(`kinsumer holds ${consumer.status().shards.length} of ${job.shardIds.length} shards after 120 s`);
    await sleep(100);
  }
  return async () => {
    await consumer.stop().catch(() => undefined);
    subscription.unsubscribe();
  };
}

/** Polls every shard every `pollMs` (a call's start to the next's), from LATEST, until stopped. */
function pollEvery(job: PacedJob, iterator: (shardId: string) => Promise<string | undefined>, page: (iterator: string) => Promise<{ count: number; next: string | undefined }>): () => Promise<void> {
  let running = true;
  const loops = job.shardIds.map(async (shardId) => {
    let current = await iterator(shardId);
    while (running && current !== undefined) {
      const started = Date.now();
      const answer = await page(current);
      counts.kinesis += 1;
      counts.records += answer.count;
      current = answer.next;
      await sleep(Math.max(0, job.pollMs - (Date.now() - started)));
    }
  });
  return async () => {
    running = false;
    await Promise.all(loops);
  };
}

async function bareSdk(job: PacedJob): Promise<() => Promise<void>> {
  const { GetRecordsCommand, GetShardIteratorCommand } = await import('@aws-sdk/client-kinesis');
  const { localKinesisClient } = await import('../../src/testing/index.js');
  const kinesis = localKinesisClient(job.servers);
  const stop = pollEvery(job,
    async (shardId) => (await kinesis.send(new GetShardIteratorCommand({ StreamName: job.streamName, ShardId: shardId, ShardIteratorType: 'LATEST' }))).ShardIterator,
    async (iterator) => {
      const out = await kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 10_000 }));
      for (const record of out.Records ?? []) touch(record.Data);
      return { count: (out.Records ?? []).length, next: out.NextShardIterator };
    });
  return async () => {
    await stop();
    kinesis.destroy();
  };
}

async function rawHttp(job: PacedJob): Promise<() => Promise<void>> {
  const { RawKinesis } = await import('./raw-get-records.js');
  const kinesis = new RawKinesis(job.servers);
  const stop = pollEvery(job, (shardId) => kinesis.iterator(job.streamName, shardId, 'LATEST'), (iterator) => kinesis.getRecords(iterator, 10_000, touch));
  return async () => {
    await stop();
    kinesis.destroy();
  };
}

async function run(job: PacedJob): Promise<PacedResult> {
  const stop = await { kinsumer, bareSdk, rawHttp }[job.consumer](job);
  await sleep(job.settleMs);
  const start = { ...counts };
  const cpu = process.cpuUsage();
  const wall = performance.now();
  const fromMs = Date.now();
  await sleep(job.windowMs);
  const used = process.cpuUsage(cpu);
  const wallMs = performance.now() - wall;
  const result: PacedResult = {
    cpuMicros: used.user + used.system, wallMs, records: counts.records - start.records, kinesisCalls: counts.kinesis - start.kinesis, checksum,
    window: { fromMs, toMs: Date.now() },
  };
  await stop();
  return result;
}

if (process.argv[2] !== undefined && import.meta.url.endsWith(process.argv[1]?.split('/').pop() ?? '\0')) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  run(JSON.parse(process.argv[2]) as PacedJob).then((result) => {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    process.exit(0);
  }, (error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
