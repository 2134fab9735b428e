// CPU per record on the local Kinesis server, every consumer in a process of its own: kinsumer
// (records$ + ack(), defaults), the bare SDK GetRecords loop, the raw loop without the SDK
// (node:http, JSON.parse, base64: the practical limit of Node on this protocol, issue 26), and
// lifion-kinesis (polling, its defaults, and with its poll delay at 0). From it: kinsumer's CPU per
// record as a ratio to the raw loop's, and how many shards at Kinesis's read limit (2 MiB/s per
// shard) one core can drain. With a CPU profile of kinsumer, the bare loop and the raw loop (where
// the time goes: decoding, GC, kinsumer, RxJS, HTTP).
//
//   npx tsx bench/cpu.ts [--quick]
//
// One shard per record size, preloaded into kinesalite (in a child process of its own, with
// dynalite); each run is a fresh child process reading that shard from TRIM_HORIZON under a fresh
// application name. A run's figure is `process.cpuUsage()` of the consumer's process (user +
// system, every thread: GC and libuv included) from the end of its warm-up (its first pages of
// 10,000 records: compiled code, a grown heap) to its last record, divided by the records in between. Rounds rotate the order of
// the consumers, so no consumer always runs first (or right after another's garbage).
import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { localDynamoDbClient, localKinesisClient } from '../src/testing/index.js';
import type { CpuConsumer, Job, JobResult } from './support/cpu-consumer.js';
import { microsPerRecord, preloadShard, rotate, runChild } from './support/cpu-runs.js';
import { type LimitBuckets, type Profile, type ProfileCategories, categorize, limitBuckets } from './support/cpu-profile.js';
import { type Figure, type Metric, type RunOptions, log, main, median, round, waitFor } from './support/harness.js';
import { startCountingProxy } from './support/dynamo-calls.js';
import { startServerProcess } from './support/local-servers.js';

/** Kinesis's read limit per shard: 2 MiB/s of record payload. */
export const READ_LIMIT_BYTES_PER_SECOND = 2 * 1024 * 1024;

interface Settings {
  /** Per record size: records in the shard, and how many of them (whole pages of 10,000) are the warm-up. */
  readonly sizes: ReadonlyArray<{ readonly bytes: number; readonly key: '100B' | '1KiB'; readonly records: number; readonly warmup: number }>;
  readonly rounds: number;
  readonly consumers: readonly CpuConsumer[];
  readonly profile: boolean;
  /** After its last record, kinsumer's CPU is measured this long with its shard drained (its work by the clock). */
  readonly idleMs: number;
}

const CONSUMERS: readonly CpuConsumer[] = ['kinsumer', 'bareSdk', 'rawHttp', 'lifion', 'lifionPollDelay0'];

/** Issue 26's goal: kinsumer's CPU per record at most this many times the raw loop's. */
export const RATIO_TO_RAW_GOAL = 1.15;

/** Quick runs can be narrowed for a look at one case: CONSUMERS=kinsumer,bareSdk SIZES=1KiB. */
function narrowed(settings: Settings): Settings {
  const consumers = process.env.CONSUMERS?.split(',') ?? settings.consumers;
  const sizes = process.env.SIZES?.split(',') ?? settings.sizes.map((s) => s.key);
  return { ...settings, consumers: settings.consumers.filter((c) => consumers.includes(c)), sizes: settings.sizes.filter((s) => sizes.includes(s.key)) };
}

// Steady state: the first pages warm the process up (compiled code, a grown heap); the rest is measured.
const FULL_SIZES: Settings['sizes'] = [{ bytes: 100, key: '100B', records: 110_000, warmup: 30_000 }, { bytes: 1024, key: '1KiB', records: 60_000, warmup: 20_000 }];

function settingsFor(options: RunOptions): Settings {
  if (options.tiny === true) {
    return { sizes: [{ bytes: 100, key: '100B', records: 300, warmup: 100 }, { bytes: 1024, key: '1KiB', records: 300, warmup: 100 }], rounds: 1, consumers: CONSUMERS, profile: false, idleMs: 200 };
  }
  if (options.quick) {
    // PROFILE=1 adds the profiles to a quick run (a look at where the time goes, not a measurement);
    // LONG=1 reads as many records as a full run (a narrowed measurement that leaves results.json alone).
    return narrowed({
      sizes: process.env.LONG === '1' ? FULL_SIZES : [{ bytes: 100, key: '100B', records: 50_000, warmup: 20_000 }, { bytes: 1024, key: '1KiB', records: 40_000, warmup: 20_000 }],
      rounds: Number(process.env.ROUNDS ?? 1), consumers: CONSUMERS, profile: process.env.PROFILE === '1', idleMs: 3000,
    });
  }
  return {
    sizes: FULL_SIZES,
    rounds: 5, consumers: CONSUMERS, profile: true, idleMs: 4000,
  };
}

/** Milliseconds of busy time by job as microseconds per record. */
function perRecord(buckets: LimitBuckets, records: number): LimitBuckets {
  return Object.fromEntries(Object.entries(buckets).map(([job, ms]) => [job, round((1000 * (ms as number)) / Math.max(1, records))])) as unknown as LimitBuckets;
}

/** Calls a second. */
export function callsPerSecond(calls: { readonly dynamodb: number; readonly kinesis: number }, wallMs: number): { dynamodbCallsPerSecond: number; kinesisCallsPerSecond: number } {
  return { dynamodbCallsPerSecond: round((1000 * calls.dynamodb) / wallMs), kinesisCallsPerSecond: round((1000 * calls.kinesis) / wallMs) };
}

/**
 * A run's CPU per record spent by the clock rather than by the record: the consumer's CPU per
 * millisecond while idle on its drained shard, over the measured run's wall time. An upper
 * estimate: idle, its polls are empty ones every throttleDelayMs; in the run they are the pages.
 */
function byTheClock(run: JobResult): number | undefined {
  return run.idle === undefined ? undefined : ((run.idle.cpuMicros / run.idle.wallMs) * run.wallMs) / Math.max(1, run.records);
}

/** Shards at the read limit one core drains: records/s per core over records/s per shard at the limit. */
export function shardsPerCore(cpuMicrosPerRecord: number, recordBytes: number): number {
  return 1e6 / cpuMicrosPerRecord / (READ_LIMIT_BYTES_PER_SECOND / recordBytes);
}

export const LABEL: Record<CpuConsumer, string> = {
  kinsumer: 'kinsumer (records$ + ack)',
  bareSdk: 'bare SDK GetRecords loop',
  bareSdkKeepAlive: 'bare SDK GetRecords loop, keep-alive NodeHttpHandler',
  rawHttp: 'raw node:http + JSON.parse + base64 loop (no SDK)',
  lifion: 'lifion-kinesis (defaults, pollDelay 250)',
  lifionPollDelay0: 'lifion-kinesis (pollDelay 0)',
};

export const cpuFigure: Figure = {
  name: 'cpu',
  title: 'CPU per record on kinesalite, each consumer in its own process; shards per core at the read limit',
  async run(options) {
    const settings = settingsFor(options);
    const server = await startServerProcess();
    // kinsumer's DynamoDB calls, counted on the way (nothing is added to its clients).
    const dynamoProxy = await startCountingProxy(server.endpoints.dynamodb);
    const kinesis = localKinesisClient(server);
    const dynamodb = localDynamoDbClient(server);
    const scratch = mkdtempSync(join(tmpdir(), 'kinsumer-cpu-'));
    const metrics: Metric[] = [];
    const keyed: Record<string, number> = {};
    const details: Record<string, unknown> = {};
    const loads: number[] = [loadavg()[0] ?? 0];
    const lifionTable = `bench-cpu-lifion-${process.pid}`;
    try {
      // lifion-kinesis's state table (its schema), made here: lifion would create it and then wait
      // for it with the aws-sdk v2 waiter, 20 s per poll.
      await dynamodb.send(new CreateTableCommand({
        TableName: lifionTable,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'consumerGroup', AttributeType: 'S' }, { AttributeName: 'streamName', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'consumerGroup', KeyType: 'HASH' }, { AttributeName: 'streamName', KeyType: 'RANGE' }],
      }));
      await waitFor(async () => (await dynamodb.send(new DescribeTableCommand({ TableName: lifionTable }))).Table?.TableStatus === 'ACTIVE', 'the lifion state table', 10_000);
      const streams = new Map<number, { streamName: string; shardId: string }>();
      for (const size of settings.sizes) {
        streams.set(size.bytes, await preloadShard(kinesis, `bench-cpu-${size.bytes}-${process.pid}`, size.records, size.bytes));
      }
      let app = 0;
      const job = (consumer: CpuConsumer, size: Settings['sizes'][number], profile?: string): Job => {
        app += 1;
        const stream = streams.get(size.bytes) as { streamName: string; shardId: string };
        return {
          consumer, servers: { region: server.region, endpoints: { ...server.endpoints, dynamodb: dynamoProxy.endpoint }, credentials: server.credentials },
          ...stream, records: size.records, warmup: size.warmup, app: `bench-cpu-${process.pid}-${app}`, lifionTable,
          ...(profile === undefined ? {} : { profile }),
          ...(consumer === 'kinsumer' && profile === undefined ? { idleMs: settings.idleMs } : {}),
        };
      };
      const runs = new Map<string, JobResult[]>();
      for (let r = 0; r < settings.rounds; r += 1) {
        for (const size of settings.sizes) {
          for (const consumer of rotate(settings.consumers, r + (size.bytes === 100 ? 0 : 2))) {
            const result = await runChild(job(consumer, size), {}, dynamoProxy.log);
            const key = `${consumer}.${size.key}`;
            runs.set(key, [...(runs.get(key) ?? []), result]);
            loads.push(loadavg()[0] ?? 0);
            log(`round ${r + 1}, ${size.key}, ${consumer}: ${microsPerRecord(result).toFixed(2)} µs/record (${result.records} records, ${Math.round(result.wallMs)} ms)`);
          }
        }
      }
      const cpuOf = (consumer: CpuConsumer, key: string): number => median((runs.get(`${consumer}.${key}`) ?? []).map(microsPerRecord));
      const ratiosToRaw: Record<string, number[]> = {};
      for (const size of settings.sizes) {
        const bare = cpuOf('bareSdk', size.key);
        for (const consumer of settings.consumers) {
          const value = cpuOf(consumer, size.key);
          metrics.push({
            name: `${size.key}: CPU per record, ${LABEL[consumer]}`,
            value: round(value),
            unit: 'µs',
            ...(consumer === 'bareSdk' || consumer === 'rawHttp' ? {} : { baseline: { name: 'bare SDK loop', value: round(bare), unit: 'µs' }, ratio: round(value / bare) }),
            ...(consumer === 'kinsumer' ? { target: '< 1 × the bare SDK loop', met: value < bare } : {}),
          });
          keyed[`cpu.microsPerRecord.${consumer}.${size.key}`] = round(value);
        }
        if (settings.consumers.includes('kinsumer') && settings.consumers.includes('rawHttp')) {
          const raw = cpuOf('rawHttp', size.key);
          const value = cpuOf('kinsumer', size.key);
          metrics.push({
            name: `${size.key}: CPU per record, kinsumer against the raw loop (the limit)`,
            value: round(value),
            unit: 'µs',
            baseline: { name: 'raw node:http loop', value: round(raw), unit: 'µs' },
            ratio: round(value / raw),
            target: `<= ${RATIO_TO_RAW_GOAL} × the raw loop`,
            met: value / raw <= RATIO_TO_RAW_GOAL,
          });
          keyed[`cpu.ratioToRaw.${size.key}`] = round(value / raw);
          // Round by round (the two runs of a round minutes apart at most): the spread of the ratio.
          const kinsumerRuns = runs.get(`kinsumer.${size.key}`) ?? [];
          const rawRuns = runs.get(`rawHttp.${size.key}`) ?? [];
          ratiosToRaw[size.key] = kinsumerRuns.map((run, i) => round(microsPerRecord(run) / microsPerRecord(rawRuns[i] ?? run)));
        }
        const goal = size.bytes === 100 ? 10 : 40;
        for (const consumer of settings.consumers) {
          const shards = shardsPerCore(cpuOf(consumer, size.key), size.bytes);
          metrics.push({
            name: `${size.key}: shards per core at 2 MiB/s (${Math.round(READ_LIMIT_BYTES_PER_SECOND / size.bytes)} records/s each), ${LABEL[consumer]}`,
            value: round(shards),
            unit: 'shards',
            ...(consumer === 'kinsumer' ? { target: `>= ${goal}`, met: shards >= goal } : {}),
          });
          if (consumer === 'kinsumer') keyed[`capacity.shardsPerCoreAtLimit.${size.key}`] = round(shards);
        }
      }
      details.ratioToRawByRound = ratiosToRaw;
      details.runs = Object.fromEntries([...runs].map(([key, list]) => [key, list.map((x) => ({
        microsPerRecord: round(microsPerRecord(x)), records: x.records, wallMs: Math.round(x.wallMs),
        ...(x.calls === undefined ? {} : { calls: x.calls }),
        ...(x.idle === undefined ? {} : {
          idle: { cpuMsPerSecond: round(x.idle.cpuMicros / x.idle.wallMs), ...callsPerSecond(x.idle.calls, x.idle.wallMs) },
          byTheClockMicrosPerRecord: round(byTheClock(x) ?? 0),
        }),
      }))]));
      for (const size of settings.sizes) {
        const measured = (runs.get(`kinsumer.${size.key}`) ?? []).filter((x) => x.idle !== undefined);
        if (measured.length === 0) continue;
        const idle = measured.map((x) => x.idle as NonNullable<JobResult['idle']>);
        const rate = median(idle.map((x) => x.cpuMicros / x.wallMs));
        const calls = callsPerSecond({ dynamodb: median(idle.map((x) => x.calls.dynamodb)), kinesis: median(idle.map((x) => x.calls.kinesis)) }, median(idle.map((x) => x.wallMs)));
        metrics.push({
          name: `${size.key}: kinsumer idle on its drained shard, CPU per second (leases, group-epoch reads, checkpoints, empty polls)`,
          value: round(rate),
          unit: 'ms/s',
          note: `${calls.dynamodbCallsPerSecond} DynamoDB calls and ${calls.kinesisCallsPerSecond} GetRecords a second`,
        });
        metrics.push({
          name: `${size.key}: kinsumer's CPU per record by the clock (that idle rate over the measured run's wall time; an estimate)`,
          value: round(median(measured.map((x) => byTheClock(x) ?? 0))),
          unit: 'µs',
          note: `in the measured runs, ${median(measured.map((x) => x.calls?.dynamodb ?? 0))} DynamoDB calls and ${median(measured.map((x) => x.calls?.kinesis ?? 0))} GetRecords (medians)`,
        });
      }
      if (settings.profile) {
        const profiles: Record<string, ProfileCategories> = {};
        const byJob: Record<string, LimitBuckets> = {};
        for (const size of settings.sizes) {
          for (const consumer of (['kinsumer', 'bareSdk', 'rawHttp'] as const).filter((c) => settings.consumers.includes(c))) {
            // PROFILE_DIR keeps the profiles (for bench/support/cpu-profile.ts); by default they go with the scratch folder.
            const file = join(process.env.PROFILE_DIR ?? scratch, `${consumer}-${size.key}.cpuprofile`);
            const run = await runChild(job(consumer, size, file));
            const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
            profiles[`${consumer}.${size.key}`] = categorize(profile);
            // µs per record by job: the profiled run's busy time (inflated by the sampler) over its records.
            byJob[`${consumer}.${size.key}`] = perRecord(limitBuckets(profile), run.records);
            log(`profile ${consumer} ${size.key}: ${JSON.stringify(profiles[`${consumer}.${size.key}`])}; µs/record by job ${JSON.stringify(byJob[`${consumer}.${size.key}`])}`);
          }
        }
        details.profile = profiles;
        details.profileMicrosPerRecordByJob = byJob;
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
      kinesis.destroy();
      dynamodb.destroy();
      await dynamoProxy.stop();
      await server.stop();
    }
    details.loadAverage1m = { min: round(Math.min(...loads)), max: round(Math.max(...loads)) };
    return {
      settings: {
        ...settings,
        readLimitBytesPerSecond: READ_LIMIT_BYTES_PER_SECOND,
        kinsumerOptions: 'defaults (throttleDelayMs 250, maxInFlightRecords 10000)',
        lifionOptions: 'polling, limit 10000, auto-checkpoints, shouldParseJson false; pollDelay 250 (default) and 0',
      },
      metrics,
      keyed,
      notes: [
        `CPU is process.cpuUsage() of the consumer's own process (user + system, all threads, GC included), from the end of its warm-up (${settings.sizes.map((s) => `${s.key}: ${s.warmup} records`).join(', ')}) to its last record (${settings.sizes.map((s) => `${s.records - s.warmup} measured`).join(', ')}); medians of rotated rounds. kinesalite and dynalite run in another process.`,
        'Shards per core = (1e6 / CPU µs per record) / (2 MiB/s / record size): the read limit counted on the payload alone (100 B: 20,972 records/s per shard; 1 KiB: 2,048), the strictest count (a partition key or the wire\'s base64 would lower the records per second at the limit).',
        'kinesalite answers MillisBehindLatest 0: kinsumer and lifion-kinesis wait their poll delay between pages, the bare and raw loops do not; the CPU of that waiting (timers, lease renewals, checkpoints) is the consumer\'s and is counted.',
        `The raw loop (bench/support/raw-get-records.ts) is the practical limit of Node on this protocol: node:http with a keep-alive agent, the same GetRecords requests (Limit 10,000, SigV4-signed by hand) and pages, the body made text as kinsumer makes it (Latin-1 when ASCII, into a reused buffer), one JSON.parse, every record's Data decoded to bytes; nothing kept. cpu.ratioToRaw is kinsumer's median over the raw loop's (goal <= ${RATIO_TO_RAW_GOAL}); details.ratioToRawByRound gives it round by round.`,
        `Load average (1 min) over the run: ${round(Math.min(...loads))}–${round(Math.max(...loads))} on ${cpus().length} cores (other work shares the machine).`,
      ],
      details,
    };
  },
};

main(cpuFigure, import.meta.url);
