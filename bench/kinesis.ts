// Figure 2 — on the local Kinesis server. The same records, preloaded into kinesalite (1 shard,
// then 8 shards), consumed three ways in alternating rounds:
//   - bare loop: GetShardIterator(TRIM_HORIZON) then GetRecords(Limit 10,000) back to back on
//     every shard at once, touching each record — no leases, no checkpoints, no waiting;
//   - kinsumer: one Kinsumer (dynalite for its tables), records$ + ack() per record, defaults;
//   - lifion-kinesis (the peer): polling mode, useEnhancedFanOut false, auto-checkpoints, its own
//     DynamoDB table on dynalite, 'data' events.
// Rate = records / (last record − first GetRecords request): start-up (table checks, registration,
// the first capture) comes before the first GetRecords and is reported apart as "time to first
// record", since it is paid once per process. The first GetRecords is seen by SDK middleware
// (kinsumer), by the loop itself (bare) and by the aws-sdk v2 request event (lifion-kinesis).
//
//   npx tsx bench/kinesis.ts [--quick]
//
// kinesalite and dynalite run in a child process (bench/support/local-servers.ts), so the local
// servers' CPU is not charged to the consumer; both still share the machine's cores.
import { createRequire } from 'node:module';
import { GetRecordsCommand, GetShardIteratorCommand, type KinesisClient } from '@aws-sdk/client-kinesis';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Kinsumer, createTables } from '../src/index.js';
import { createStream, localDynamoDbClient, localKinesisClient, openShardIds, putRecords } from '../src/testing/index.js';
import { type Figure, type Metric, type RunOptions, log, main, median, nowMs, round, waitFor } from './support/harness.js';
import { type ServerProcess, startServerProcess } from './support/local-servers.js';
import { lifionConsumer } from './support/lifion.js';

interface Settings {
  /** Streams to run on: shard count and records preloaded into each shard. */
  readonly streams: ReadonlyArray<{ readonly shards: number; readonly recordsPerShard: number }>;
  readonly recordBytes: number;
  readonly rounds: number;
  readonly peer: boolean;
}

function settingsFor(options: RunOptions): Settings {
  if (options.tiny === true) return { streams: [{ shards: 1, recordsPerShard: 200 }], recordBytes: 100, rounds: 1, peer: false };
  if (options.quick) return { streams: [{ shards: 1, recordsPerShard: 15_000 }, { shards: 8, recordsPerShard: 3000 }], recordBytes: 1024, rounds: 1, peer: true };
  // Several pages per shard (10,000 records a page), so that rates are not one round trip's.
  return { streams: [{ shards: 1, recordsPerShard: 50_000 }, { shards: 8, recordsPerShard: 20_000 }], recordBytes: 1024, rounds: 3, peer: true };
}

type Variant = 'bare loop' | 'kinsumer' | 'lifion-kinesis';

interface Run {
  readonly records: number;
  /** From the start (subscribe, first call) to the first record. */
  readonly firstRecordMs: number;
  /** From the first GetRecords request to the last record. */
  readonly spanMs: number;
}

function rate(run: Run): number {
  return run.records / (run.spanMs / 1000);
}

let checksum = 0;
function touch(data: Uint8Array | undefined, sequenceNumber: string | undefined): void {
  checksum = (checksum + (data?.length ?? 0) + (sequenceNumber?.length ?? 0)) | 0;
}

/** Times a consumer: `reading()` at each GetRecords, `count(n)` as records arrive; resolves when all `expected` arrived. */
class Stopwatch {
  private started = nowMs();
  private firstCall = 0;
  private first = 0;
  private last = 0;
  private seen = 0;

  constructor(private readonly expected: number) {}

  reading(): void {
    if (this.firstCall === 0) this.firstCall = nowMs();
  }

  count(n: number): void {
    if (n === 0) return;
    const at = nowMs();
    if (this.seen === 0) this.first = at;
    this.seen += n;
    if (this.seen >= this.expected && this.last === 0) this.last = at;
  }

  get done(): boolean {
    return this.last !== 0;
  }

  async result(timeoutMs: number): Promise<Run> {
    await waitFor(() => this.done, `${this.expected} records (got ${this.seen})`, timeoutMs, 5);
    return { records: this.seen, firstRecordMs: this.first - this.started, spanMs: Math.max(1, this.last - this.firstCall) };
  }
}

async function bareLoop(kinesis: KinesisClient, streamName: string, shardIds: readonly string[], perShard: ReadonlyMap<string, number>): Promise<Run> {
  const watch = new Stopwatch([...perShard.values()].reduce((a, b) => a + b, 0));
  await Promise.all(shardIds.map(async (shardId) => {
    const expected = perShard.get(shardId) ?? 0;
    let iterator = (await kinesis.send(new GetShardIteratorCommand({ StreamName: streamName, ShardId: shardId, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
    let read = 0;
    while (read < expected && iterator !== undefined) {
      watch.reading();
      const page = await kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 10_000 }));
      for (const record of page.Records ?? []) touch(record.Data, record.SequenceNumber);
      read += page.Records?.length ?? 0;
      watch.count(page.Records?.length ?? 0);
      iterator = page.NextShardIterator;
    }
  }));
  return watch.result(1000);
}

async function kinsumerRun(server: ServerProcess, dynamodb: DynamoDBClient, streamName: string, total: number, app: string): Promise<Run> {
  await createTables({ dynamodb, applicationName: app });
  const watch = new Stopwatch(total);
  const kinesis = localKinesisClient(server);
  const consumer = new Kinsumer({ streamName, applicationName: app, kinesis, dynamodb, clientId: `${app}-client` });
  // Reading starts at the capture (its GetShardIterator, then GetRecords): nothing is added to the
  // client, which kinsumer would then leave on the SDK's path for the application's middleware.
  consumer.events$.subscribe((event) => { if (event.type === 'lease-acquired') watch.reading(); });
  const subscription = consumer.records$.subscribe((record) => {
    touch(record.data, record.sequenceNumber);
    record.ack();
    watch.count(1);
  });
  try {
    return await watch.result(180_000);
  } finally {
    await consumer.stop().catch(() => undefined);
    subscription.unsubscribe();
    kinesis.destroy();
  }
}

// The 'send' event hands over the response, whose request names the operation.
interface AwsV2Request {
  readonly request?: { readonly operation?: string };
}
interface AwsV2 {
  readonly events: { on(event: 'send', listener: (request: AwsV2Request) => void): void; removeListener(event: 'send', listener: (request: AwsV2Request) => void): void };
}

async function lifionRun(server: ServerProcess, streamName: string, total: number, app: string): Promise<Run> {
  // lifion-kinesis resolves the same aws-sdk (v2) module; its global events see every request.
  const awsV2 = createRequire(import.meta.url)('aws-sdk') as AwsV2;
  const consumer = lifionConsumer({
    streamName,
    consumerGroup: app,
    createStreamIfNeeded: false,
    initialPositionInStream: 'TRIM_HORIZON',
    useEnhancedFanOut: false,
    useAutoCheckpoints: true,
    // Records are handed over as bytes, as kinsumer does (its default 'auto' would try JSON.parse).
    shouldParseJson: false,
    endpoint: server.endpoints.kinesis,
    region: server.region,
    accessKeyId: server.credentials.accessKeyId,
    secretAccessKey: server.credentials.secretAccessKey,
    dynamoDb: {
      endpoint: server.endpoints.dynamodb,
      region: server.region,
      accessKeyId: server.credentials.accessKeyId,
      secretAccessKey: server.credentials.secretAccessKey,
      tableName: `${app}-state`,
    },
  });
  const watch = new Stopwatch(total);
  const onSend = (request: AwsV2Request) => { if (request.request?.operation === 'getRecords') watch.reading(); };
  awsV2.events.on('send', onSend);
  const errors: unknown[] = [];
  consumer.on('error', (error) => errors.push(error));
  consumer.on('data', (chunk) => {
    for (const record of chunk.records) touch(record.data, record.sequenceNumber);
    watch.count(chunk.records.length);
  });
  await consumer.startConsumer();
  try {
    return await watch.result(180_000);
  } catch (error) {
    throw new Error(`lifion-kinesis: ${String(error)}; its errors: ${errors.map(String).join('; ')}`);
  } finally {
    consumer.stopConsumer();
    awsV2.events.removeListener('send', onSend);
  }
}

export const kinesisFigure: Figure = {
  name: 'kinesis',
  title: 'On the local Kinesis server (kinesalite): records/s against a bare GetRecords loop and lifion-kinesis',
  async run(options) {
    const settings = settingsFor(options);
    const server = await startServerProcess();
    const kinesis = localKinesisClient(server);
    const dynamodb = localDynamoDbClient(server);
    const metrics: Metric[] = [];
    const details: Record<string, unknown> = {};
    const variants: Variant[] = settings.peer ? ['bare loop', 'kinsumer', 'lifion-kinesis'] : ['bare loop', 'kinsumer'];
    let app = 0;
    try {
      for (const { shards, recordsPerShard } of settings.streams) {
        const streamName = `bench-kinesis-${shards}-${process.pid}`;
        await createStream(kinesis, streamName, shards);
        const shardIds = await openShardIds(kinesis, streamName);
        const payload = new Uint8Array(settings.recordBytes).fill(120);
        const total = shards * recordsPerShard;
        const loadStarted = Date.now();
        log(`${shards} shard(s): loading ${total} records of ${settings.recordBytes} B`);
        const perShard = new Map<string, number>();
        // Spread evenly: partition keys are hashed, so put until every shard holds its share.
        const puts = Array.from({ length: total }, (_, i) => ({ partitionKey: `k${i}`, data: payload }));
        for (let at = 0; at < puts.length; at += 5000) {
          for (const result of await putRecords(kinesis, streamName, puts.slice(at, at + 5000))) perShard.set(result.shardId, (perShard.get(result.shardId) ?? 0) + 1);
        }
        log(`  loaded in ${Date.now() - loadStarted} ms`);
        const runs = new Map<Variant, Run[]>(variants.map((v) => [v, []]));
        for (let r = 0; r < settings.rounds; r += 1) {
          for (const variant of variants) {
            app += 1;
            const name = `bench-k${shards}-${process.pid}-${app}`;
            const run = variant === 'bare loop'
              ? await bareLoop(kinesis, streamName, shardIds, perShard)
              : variant === 'kinsumer'
                ? await kinsumerRun(server, dynamodb, streamName, total, name)
                : await lifionRun(server, streamName, total, name);
            runs.get(variant)?.push(run);
            log(`${shards} shard(s), round ${r + 1}: ${variant}: ${Math.round(rate(run))} records/s, first record after ${Math.round(run.firstRecordMs)} ms`);
          }
        }
        const rateOf = (variant: Variant) => median((runs.get(variant) ?? []).map(rate));
        const bare = rateOf('bare loop');
        const baseline = { name: 'bare GetRecords loop', value: round(bare), unit: 'records/s' };
        metrics.push({ name: `${shards} shard(s): bare GetRecords loop`, value: round(bare), unit: 'records/s' });
        metrics.push({
          name: `${shards} shard(s): kinsumer`, value: round(rateOf('kinsumer')), unit: 'records/s', baseline,
          ratio: round(rateOf('kinsumer') / bare), target: '>= 0.95', met: rateOf('kinsumer') / bare >= 0.95,
        });
        if (settings.peer) {
          metrics.push({
            name: `${shards} shard(s): kinsumer vs lifion-kinesis`, value: round(rateOf('kinsumer')), unit: 'records/s',
            baseline: { name: 'lifion-kinesis', value: round(rateOf('lifion-kinesis')), unit: 'records/s' },
            ratio: round(rateOf('kinsumer') / rateOf('lifion-kinesis')), target: '> 1 (ahead of the peer)', met: rateOf('kinsumer') > rateOf('lifion-kinesis'),
          });
        }
        for (const variant of variants.slice(1)) {
          metrics.push({ name: `${shards} shard(s): time to first record, ${variant}`, value: round(median((runs.get(variant) ?? []).map((x) => x.firstRecordMs))), unit: 'ms' });
        }
        details[`${shards} shard(s)`] = Object.fromEntries([...runs].map(([variant, list]) => [variant, list.map((x) => ({
          recordsPerSecond: Math.round(rate(x)), firstRecordMs: Math.round(x.firstRecordMs), spanMs: Math.round(x.spanMs), records: x.records,
        }))]));
      }
    } finally {
      kinesis.destroy();
      dynamodb.destroy();
      await server.stop();
    }
    return {
      settings: { ...settings, kinsumerOptions: 'defaults (throttleDelayMs 250, maxInFlightRecords 10000)', lifionOptions: 'polling, limit 10000, pollDelay 250, auto-checkpoints, shouldParseJson false' },
      metrics,
      notes: [
        'kinesalite always answers MillisBehindLatest 0, so kinsumer and lifion-kinesis never take their "read again at once while behind" path: both wait their poll delay (250 ms) between pages; the bare loop never waits.',
        'Rates run from the first GetRecords request to the last record; time to first record (start-up, registration, capture) is reported apart.',
        'Medians of alternating rounds; the consumer, the servers (one child process) and other work share 2 cores.',
      ],
      details,
    };
  },
};

main(kinesisFigure, import.meta.url);
