// Bounded memory under a slow consumer: a producer far faster than the consumer, on kinesalite,
// for a while. Samples RSS and heap each second and reports the largest growth after warm-up,
// and whether any shard's reader died (errored or ended) on the way.
//
//   npx tsx bench/reader-memory.ts [--duration-ms 60000] [--warmup-ms 30000] [--shards 2]
//     [--produce-per-second 1000] [--consume-per-second 10] [--record-bytes 1024]
//     [--max-in-flight 10000] [--iterator-max-age-ms 20000] [--stall-at-ms 32000] [--stall-ms 23000]
//     [--max-in-flight-bytes 0] [--synthetic 0]
//
// --max-in-flight-bytes N: the readers share one byte budget of N (maxInFlightBytes; 0: none, the
// count bound alone). --synthetic 1: instead of kinesalite and a producer, an endless backlog of
// records of --record-bytes served over HTTP by bench/support/synthetic-kinesis.ts (for 1 MiB and
// 10 MiB records, which kinesalite refuses and kinesis-local puts too slowly); the consumer reads
// each record's data (decodes it) before acking it.
//
// The consumer also stalls completely for a while (longer than --iterator-max-age-ms): its
// readers must come back by rebuilding their iterators, not die of expired ones.
// kinesalite runs in a child process on a LevelDB folder, so the figures are the consumer's own.
// The last line of output is a JSON summary.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type Observable, type Subscription, asyncScheduler, concatMap, defer, map, timer } from 'rxjs';
import { KinesisStream } from '../src/kinesis/kinesis.js';
import type { IssuedIterator, IteratorStart, StreamPort } from '../src/ports/stream.js';
import { ByteBudget } from '../src/reading/byte-budget.js';
import { readShard } from '../src/reading/shard-reader.js';
import { createStream, localKinesisClient, openShardIds, putRecords, startKinesalite } from '../src/testing/index.js';
import type { KinsumerEvent } from '../src/types.js';
import { TestTracker } from '../test/support/test-tracker.js';
import { serveSyntheticKinesis } from './support/synthetic-kinesis.js';

interface Settings {
  durationMs: number;
  warmupMs: number;
  shards: number;
  producePerSecond: number;
  consumePerSecond: number;
  recordBytes: number;
  maxInFlight: number;
  iteratorMaxAgeMs: number;
  stallAtMs: number;
  stallMs: number;
  maxInFlightBytes: number;
  synthetic: number;
}

const DEFAULTS: Settings = {
  durationMs: 60_000, warmupMs: 30_000, shards: 2, producePerSecond: 1000, consumePerSecond: 10,
  recordBytes: 1024, maxInFlight: 10_000, iteratorMaxAgeMs: 20_000, stallAtMs: 32_000, stallMs: 23_000,
  maxInFlightBytes: 0, synthetic: 0,
};

function settings(argv: readonly string[]): Settings {
  const out = { ...DEFAULTS };
  for (const key of Object.keys(DEFAULTS) as (keyof Settings)[]) {
    const flag = `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    const index = argv.indexOf(flag);
    if (index >= 0) out[key] = Number(argv[index + 1]);
  }
  return out;
}

/** The child process: kinesalite on a LevelDB folder (or the synthetic server); prints its endpoint. */
async function serve(path: string, synthetic: { shards: number; recordBytes: number } | undefined): Promise<void> {
  const server = synthetic === undefined ? await startKinesalite({ path }) : await serveSyntheticKinesis(synthetic);
  process.stdout.write(`${JSON.stringify({ endpoint: server.endpoint })}\n`);
  process.once('SIGTERM', () => { void server.stop().finally(() => process.exit(0)); });
}

async function startServer(s: Settings): Promise<{ endpoint: string; stop: () => void }> {
  const folder = mkdtempSync(join(tmpdir(), 'kinsumer-bench-'));
  const synthetic = s.synthetic === 1 ? ['--shards', String(s.shards), '--record-bytes', String(s.recordBytes), '--synthetic', '1'] : [];
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve', folder, ...synthetic], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  const { endpoint } = JSON.parse(String(first.value)) as { endpoint: string };
  return {
    endpoint,
    stop: () => {
      child.kill('SIGTERM');
      child.once('exit', () => rmSync(folder, { recursive: true, force: true }));
    },
  };
}

/** Counts GetShardIterator calls: more than one per shard means iterators were rebuilt. */
function counting(port: StreamPort, counts: { iterators: number }): StreamPort {
  return {
    streamLabel: port.streamLabel,
    getShardIterator: (shardId: string, start: IteratorStart): Observable<IssuedIterator> => {
      counts.iterators += 1;
      return port.getShardIterator(shardId, start);
    },
    getRecords: (iterator, limit) => port.getRecords(iterator, limit),
    listShards: () => port.listShards(),
  };
}

const MB = 1024 * 1024;
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

async function main(): Promise<void> {
  const s = settings(process.argv.slice(2));
  const server = await startServer(s);
  const config = { region: 'us-east-1', endpoints: { kinesis: server.endpoint, dynamodb: server.endpoint }, credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local' } };
  const kinesis = localKinesisClient(config);
  const synthetic = s.synthetic === 1;
  const streamName = synthetic ? 'synthetic' : `bench-memory-${process.pid}`;
  if (!synthetic) await createStream(kinesis, streamName, s.shards);
  const shardIds = await openShardIds(kinesis, streamName);
  const counts = { iterators: 0 };
  const port = counting(new KinesisStream(kinesis, { streamName }), counts);

  let produced = 0;
  let consumed = 0;
  let retries = 0;
  const died: string[] = [];
  const payload = new Uint8Array(s.recordBytes).fill(120);
  const emit = (event: KinsumerEvent): void => { if (event.type === 'retrying') retries += 1; };
  const consumeEveryMs = (1000 * s.shards) / s.consumePerSecond;
  const stallEnd = (): number => {
    const elapsed = Date.now() - start;
    return elapsed >= s.stallAtMs && elapsed < s.stallAtMs + s.stallMs ? start + s.stallAtMs + s.stallMs : 0;
  };
  const start = Date.now();
  const bytes = s.maxInFlightBytes > 0 ? new ByteBudget(s.maxInFlightBytes) : undefined;
  const readers: Subscription[] = shardIds.map((shardId) => readShard({
    shardId, stream: port, tracker: new TestTracker(), start: { type: 'TRIM_HORIZON' }, throttleDelayMs: 250,
    maxInFlightRecords: s.maxInFlight, scheduler: asyncScheduler, emit, iteratorMaxAgeMs: s.iteratorMaxAgeMs,
    ...(bytes === undefined ? {} : { bytes }),
  }).pipe(
    // The slow consumer: concatMap queues what was emitted, and the reader emits at most maxInFlight.
    concatMap((record) => defer(() => timer(Math.max(consumeEveryMs, stallEnd() - Date.now()))).pipe(map(() => record))),
  ).subscribe({
    next: (record) => {
      // The application reads what it gets (a payload kept in base64 until then is decoded now).
      if (record.data.byteLength !== s.recordBytes) died.push(`${shardId}: a record of ${record.data.byteLength} bytes`);
      record.ack();
      consumed += 1;
    },
    error: (error: unknown) => died.push(`${shardId}: ${String(error)}`),
    complete: () => died.push(`${shardId}: completed`),
  }));

  const batch = Math.max(1, Math.round(s.producePerSecond / 10));
  let producing = !synthetic;
  const producer = (async () => {
    while (producing) {
      const started = Date.now();
      await putRecords(kinesis, streamName, Array.from({ length: batch }, (_, i) => ({ partitionKey: `k${produced + i}`, data: payload })));
      produced += batch;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 100 - (Date.now() - started))));
    }
  })();

  const samples: { atMs: number; rss: number; heap: number }[] = [];
  await new Promise<void>((resolve) => {
    const sampler = setInterval(() => {
      const { rss, heapUsed } = process.memoryUsage();
      const atMs = Date.now() - start;
      samples.push({ atMs, rss, heap: heapUsed });
      if (samples.length % 10 === 0) {
        console.log(`${(atMs / 1000).toFixed(0)} s: rss ${(rss / MB).toFixed(1)} MB, heap ${(heapUsed / MB).toFixed(1)} MB, produced ${produced}, consumed ${consumed}`);
      }
      if (atMs >= s.durationMs) {
        clearInterval(sampler);
        resolve();
      }
    }, 1000);
  });

  producing = false;
  await producer;
  for (const reader of readers) reader.unsubscribe();
  kinesis.destroy();
  server.stop();

  const after = samples.filter((x) => x.atMs >= s.warmupMs);
  const base = after[0] ?? samples[samples.length - 1];
  const growth = (pick: (x: { rss: number; heap: number }) => number) => (base === undefined ? 0 : Math.max(...after.map(pick)) - pick(base));
  const summary = {
    benchmark: 'reader-memory',
    settings: s,
    producedRecords: produced,
    consumedRecords: consumed,
    rssAtWarmupMB: Number(((base?.rss ?? 0) / MB).toFixed(1)),
    rssMaxGrowthAfterWarmupMB: Number((growth((x) => x.rss) / MB).toFixed(1)),
    heapAtWarmupMB: Number(((base?.heap ?? 0) / MB).toFixed(1)),
    heapMaxGrowthAfterWarmupMB: Number((growth((x) => x.heap) / MB).toFixed(1)),
    rssMaxMB: Number((Math.max(...samples.map((x) => x.rss)) / MB).toFixed(1)),
    iteratorRebuilds: counts.iterators - shardIds.length,
    retries,
    shardsDied: died,
  };
  console.log(JSON.stringify(summary));
}

const argv = process.argv.slice(2);
const serveAt = argv.indexOf('--serve');
const asked = settings(argv);
const run = serveAt >= 0 ? serve(argv[serveAt + 1] ?? '', asked.synthetic === 1 ? { shards: asked.shards, recordBytes: asked.recordBytes } : undefined) : main();
run.catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
