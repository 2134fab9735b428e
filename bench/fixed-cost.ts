// The fixed cost (issue 31 item 5, perf-4): what a consumer spends by the clock rather than by the
// record, each consumer in a process of its own (bench/support/paced-consumer.ts) on kinesalite +
// dynalite (another process), plain HTTP with keep-alive clients.
//
// - Idle: N shards with no records, at two shard counts. kinsumer (defaults: a quiet shard polled
//   once a second, leases renewed, the group's reads), the bare SDK loop polling every shard once a
//   second (the KCL's idle pace), the raw node:http loop at the same pace. CPU ms/s and calls/min;
//   per idle shard = the difference between the two counts over the shards between them, per client
//   = what is left at one shard. DynamoDB dollars a month from the capacity units of the calls.
// - A moderate rate: 8 shards, 100 records/s each (100 B). kinsumer (defaults: polls 250 ms apart)
//   against the bare SDK loop and the raw loop polling every shard every 250 ms.
//
//   npx tsx bench/fixed-cost.ts [--quick | --tiny]
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createStream, listShards, localKinesisClient } from '../src/testing/index.js';
import { rotate } from './support/cpu-runs.js';
import { type CallLog, DOLLARS_PER_MILLION, MINUTES_PER_MONTH, capacityUnits, countBy, startCountingProxy } from './support/dynamo-calls.js';
import { type Figure, type Metric, type RunOptions, log, main, median, round } from './support/harness.js';
import { startServerProcess } from './support/local-servers.js';
import type { PacedConsumer, PacedJob, PacedResult } from './support/paced-consumer.js';
import { produce } from './support/produce.js';

const CHILD = fileURLToPath(new URL('./support/paced-consumer.ts', import.meta.url));
const CONSUMERS: readonly PacedConsumer[] = ['kinsumer', 'bareSdk', 'rawHttp'];


/** Goals (issue 31 item 5). */
const GOALS = { idleShardDollarsPerMonth: 0.10, moderateRatioToRaw: 1.5 } as const;

interface Settings {
  /** The two shard counts of the idle runs. */
  readonly idleShards: readonly [number, number];
  readonly moderate: { readonly shards: number; readonly recordsPerSecondPerShard: number; readonly bytes: number };
  readonly rounds: number;
  readonly settleMs: number;
  readonly windowMs: number;
}

function settingsFor(options: RunOptions): Settings {
  const moderate = { shards: 8, recordsPerSecondPerShard: 100, bytes: 100 };
  if (options.tiny === true) return { idleShards: [1, 2], moderate: { ...moderate, shards: 2 }, rounds: 1, settleMs: 500, windowMs: 1500 };
  // The settling covers the tail of start-up (V8 still compiling for some seconds after it).
  if (options.quick) return { idleShards: [1, 8], moderate, rounds: Number(process.env.ROUNDS ?? 1), settleMs: 10_000, windowMs: 15_000 };
  return { idleShards: [1, 32], moderate, rounds: 3, settleMs: 15_000, windowMs: 30_000 };
}

/** A run, with the DynamoDB calls of its window (counted at the proxy) by operation and in capacity units. */
interface Measured extends PacedResult {
  readonly dynamodb: Readonly<Record<string, number>>;
  readonly readUnits: number;
  readonly writeUnits: number;
}

function withDynamo(result: PacedResult, log: CallLog): Measured {
  const calls = log.between(result.window.fromMs, result.window.toMs);
  const units = calls.map(capacityUnits);
  return {
    ...result, dynamodb: countBy(calls, (call) => call.command),
    readUnits: units.reduce((n, u) => n + u.read, 0), writeUnits: units.reduce((n, u) => n + u.write, 0),
  };
}

function runChild(job: PacedJob): Promise<PacedResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(job)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString(); });
    child.once('exit', (code, signal) => {
      if (code !== 0) reject(new Error(`${job.consumer} failed (${signal ?? `exit code ${code}`})`));
      else resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '') as PacedResult);
    });
  });
}

const cpuMsPerSecond = (x: Measured): number => x.cpuMicros / x.wallMs;
const perMinute = (n: number, x: Measured): number => (60_000 * n) / x.wallMs;
const dynamoCalls = (x: Measured): number => Object.values(x.dynamodb).reduce((a, b) => a + b, 0);
const dollarsPerMonth = (x: Measured): number => (perMinute(x.writeUnits, x) * DOLLARS_PER_MILLION.write + perMinute(x.readUnits, x) * DOLLARS_PER_MILLION.read) * MINUTES_PER_MONTH / 1e6;

export const fixedCostFigure: Figure = {
  name: 'fixed-cost',
  title: 'The fixed cost: CPU and calls per idle shard and per client, and at a moderate rate (8 shards × 100 records/s), against the bare SDK and raw loops',
  async run(options) {
    const settings = settingsFor(options);
    const server = await startServerProcess();
    const kinesis = localKinesisClient(server);
    // kinsumer's DynamoDB calls, counted on the way (nothing is added to its clients).
    const dynamoProxy = await startCountingProxy(server.endpoints.dynamodb);
    const servers = { region: server.region, endpoints: { ...server.endpoints, dynamodb: dynamoProxy.endpoint }, credentials: server.credentials };
    const runs = new Map<string, Measured[]>();
    const loads: number[] = [loadavg()[0] ?? 0];
    let app = 0;
    const measure = async (key: string, consumer: PacedConsumer, streamName: string, shardIds: readonly string[], pollMs: number): Promise<void> => {
      app += 1;
      const result = withDynamo(await runChild({
        consumer, servers, streamName, shardIds, app: `bench-fixed-${process.pid}-${app}`, pollMs, settleMs: settings.settleMs, windowMs: settings.windowMs,
      }), dynamoProxy.log);
      runs.set(`${key}.${consumer}`, [...(runs.get(`${key}.${consumer}`) ?? []), result]);
      loads.push(loadavg()[0] ?? 0);
      log(`${key}, ${consumer}: ${cpuMsPerSecond(result).toFixed(1)} ms/s, ${Math.round(perMinute(result.kinesisCalls, result))} Kinesis + ${Math.round(perMinute(dynamoCalls(result), result))} DynamoDB calls/min, ${result.records} records`);
    };
    try {
      const idle: Array<{ shards: number; streamName: string; shardIds: string[] }> = [];
      for (const shards of settings.idleShards) {
        const streamName = `bench-idle-${shards}-${process.pid}`;
        await createStream(kinesis, streamName, shards);
        idle.push({ shards, streamName, shardIds: (await listShards(kinesis, streamName)).map((s) => s.ShardId ?? '') });
      }
      const moderateName = `bench-moderate-${process.pid}`;
      await createStream(kinesis, moderateName, settings.moderate.shards);
      const moderateShards = await listShards(kinesis, moderateName);
      for (let r = 0; r < settings.rounds; r += 1) {
        for (const stream of idle) {
          for (const consumer of rotate(CONSUMERS, r + stream.shards)) await measure(`idle.${stream.shards}`, consumer, stream.streamName, stream.shardIds, 1000);
        }
      }
      const stopProducing = produce(kinesis, moderateName, moderateShards.map((s) => s.HashKeyRange?.StartingHashKey ?? '0'), settings.moderate.recordsPerSecondPerShard, settings.moderate.bytes);
      try {
        for (let r = 0; r < settings.rounds; r += 1) {
          for (const consumer of rotate(CONSUMERS, r)) await measure('moderate', consumer, moderateName, moderateShards.map((s) => s.ShardId ?? ''), 250);
        }
      } finally {
        await stopProducing();
      }
    } finally {
      kinesis.destroy();
      await dynamoProxy.stop();
      await server.stop();
    }
    return summarise(settings, runs, loads);
  },
};

function summarise(settings: Settings, runs: ReadonlyMap<string, Measured[]>, loads: readonly number[]) {
  const metrics: Metric[] = [];
  const keyed: Record<string, number> = {};
  const med = (key: string, of: (x: Measured) => number): number => median((runs.get(key) ?? []).map(of));
  const [few, many] = settings.idleShards;
  const between = many - few;
  for (const consumer of CONSUMERS) {
    const cpu = (n: number) => med(`idle.${n}.${consumer}`, cpuMsPerSecond);
    const perShard = (cpu(many) - cpu(few)) / between;
    const perClient = cpu(few) - few * perShard;
    keyed[`fixedCost.idle.cpuMsPerSecond.${consumer}.${few}`] = round(cpu(few));
    keyed[`fixedCost.idle.cpuMsPerSecond.${consumer}.${many}`] = round(cpu(many));
    keyed[`fixedCost.perIdleShard.cpuMsPerSecond.${consumer}`] = round(perShard);
    keyed[`fixedCost.perClient.cpuMsPerSecond.${consumer}`] = round(perClient);
    const kinesis = (n: number) => med(`idle.${n}.${consumer}`, (x) => perMinute(x.kinesisCalls, x));
    keyed[`fixedCost.perIdleShard.kinesisCallsPerMinute.${consumer}`] = round((kinesis(many) - kinesis(few)) / between);
  }
  const bare = keyed['fixedCost.perIdleShard.cpuMsPerSecond.bareSdk'] ?? 0;
  const ours = keyed['fixedCost.perIdleShard.cpuMsPerSecond.kinsumer'] ?? 0;
  metrics.push({
    name: `idle: kinsumer's CPU per idle shard (${few} → ${many} shards)`, value: ours, unit: 'ms/s',
    baseline: { name: 'bare SDK loop polling every shard once a second', value: bare, unit: 'ms/s' }, ratio: round(ours / bare),
    target: '<= the bare SDK loop polling once a second', met: ours <= bare,
    note: `raw loop ${keyed['fixedCost.perIdleShard.cpuMsPerSecond.rawHttp']} ms/s per shard`,
  });
  metrics.push({
    name: `idle: kinsumer's CPU per client (at ${few} shard, less its shard)`, value: keyed['fixedCost.perClient.cpuMsPerSecond.kinsumer'] ?? 0, unit: 'ms/s',
    note: `at ${few} / ${many} shards: kinsumer ${keyed[`fixedCost.idle.cpuMsPerSecond.kinsumer.${few}`]} / ${keyed[`fixedCost.idle.cpuMsPerSecond.kinsumer.${many}`]}, bare SDK ${keyed[`fixedCost.idle.cpuMsPerSecond.bareSdk.${few}`]} / ${keyed[`fixedCost.idle.cpuMsPerSecond.bareSdk.${many}`]}, raw ${keyed[`fixedCost.idle.cpuMsPerSecond.rawHttp.${few}`]} / ${keyed[`fixedCost.idle.cpuMsPerSecond.rawHttp.${many}`]} ms/s`,
  });
  const dynamo = (n: number) => med(`idle.${n}.kinsumer`, (x) => perMinute(dynamoCalls(x), x));
  const dollars = (n: number) => med(`idle.${n}.kinsumer`, dollarsPerMonth);
  const dynamoPerShard = (dynamo(many) - dynamo(few)) / between;
  const dollarsPerShard = (dollars(many) - dollars(few)) / between;
  keyed['fixedCost.perIdleShard.dynamoCallsPerMinute.kinsumer'] = round(dynamoPerShard);
  keyed['fixedCost.perClient.dynamoCallsPerMinute.kinsumer'] = round(dynamo(few) - few * dynamoPerShard);
  keyed['fixedCost.perIdleShard.dynamoDollarsPerMonth.kinsumer'] = round(dollarsPerShard);
  keyed['fixedCost.perClient.dynamoDollarsPerMonth.kinsumer'] = round(dollars(few) - few * dollarsPerShard);
  metrics.push({
    name: 'idle: kinsumer\'s calls per idle shard per minute (Kinesis / DynamoDB)', value: keyed['fixedCost.perIdleShard.kinesisCallsPerMinute.kinsumer'] ?? 0, unit: 'Kinesis calls/min',
    note: `${round(dynamoPerShard)} DynamoDB calls/min; per client ${keyed['fixedCost.perClient.dynamoCallsPerMinute.kinsumer']} DynamoDB calls/min (by operation in details)`,
  });
  metrics.push({
    name: 'idle: DynamoDB on-demand per idle shard, from its calls\' capacity units', value: round(dollarsPerShard), unit: '$/month',
    target: `<= $${GOALS.idleShardDollarsPerMonth}`, met: dollarsPerShard <= GOALS.idleShardDollarsPerMonth,
    note: `per client $${keyed['fixedCost.perClient.dynamoDollarsPerMonth.kinsumer']}/month`,
  });
  const moderate = (consumer: PacedConsumer) => med(`moderate.${consumer}`, cpuMsPerSecond);
  for (const consumer of CONSUMERS) keyed[`moderateRate.cpuMsPerSecond.${consumer}`] = round(moderate(consumer));
  const ratioToRaw = moderate('kinsumer') / moderate('rawHttp');
  const ratioToBare = moderate('kinsumer') / moderate('bareSdk');
  keyed['moderateRate.ratioToRaw'] = round(ratioToRaw);
  keyed['moderateRate.ratioToBareSdk'] = round(ratioToBare);
  keyed['moderateRate.kinesisCallsPerMinute.kinsumer'] = round(med('moderate.kinsumer', (x) => perMinute(x.kinesisCalls, x)));
  keyed['moderateRate.dynamoCallsPerMinute.kinsumer'] = round(med('moderate.kinsumer', (x) => perMinute(dynamoCalls(x), x)));
  const { shards, recordsPerSecondPerShard, bytes } = settings.moderate;
  metrics.push({
    name: `moderate rate (${shards} shards × ${recordsPerSecondPerShard} records/s, ${bytes} B): kinsumer's CPU against the raw loop polling every 250 ms`,
    value: round(moderate('kinsumer')), unit: 'ms/s', baseline: { name: 'raw node:http loop', value: round(moderate('rawHttp')), unit: 'ms/s' }, ratio: round(ratioToRaw),
    target: `<= ${GOALS.moderateRatioToRaw} × the raw loop`, met: ratioToRaw <= GOALS.moderateRatioToRaw,
  });
  metrics.push({
    name: 'moderate rate: kinsumer\'s CPU against the bare SDK loop polling every 250 ms', value: round(moderate('kinsumer')), unit: 'ms/s',
    baseline: { name: 'bare SDK loop', value: round(moderate('bareSdk')), unit: 'ms/s' }, ratio: round(ratioToBare),
    note: `kinsumer ${keyed['moderateRate.kinesisCallsPerMinute.kinsumer']} Kinesis + ${keyed['moderateRate.dynamoCallsPerMinute.kinsumer']} DynamoDB calls/min`,
  });
  return {
    settings: { ...settings, dollarsPerMillion: DOLLARS_PER_MILLION, kinsumerOptions: 'defaults (throttleDelayMs 250, a quiet shard polled once a second), initialPosition LATEST' },
    metrics,
    keyed,
    notes: [
      'CPU is process.cpuUsage() of the consumer\'s own process (user + system, every thread, GC included) over the window, after it settled (kinsumer: holding every shard); kinesalite and dynalite run in another process; medians of rotated rounds.',
      'Per idle shard: the difference between the two shard counts over the shards between them; per client: the figure at the smaller count less that many shards. The bare and raw loops have no per-client work beyond their process.',
      'DynamoDB dollars: on-demand prices ($0.625 per million write units, $0.125 per million read units), a write 1 unit, a strongly consistent read 1 and an eventually consistent one half (kinsumer\'s rows are under 1 KB); a transaction 2 units per action.',
      `Load average (1 min) over the run: ${round(Math.min(...loads))}–${round(Math.max(...loads))} on ${cpus().length} cores (other work shares the machine).`,
    ],
    details: {
      runs: Object.fromEntries([...runs].map(([key, list]) => [key, list.map((x) => ({
        cpuMsPerSecond: round(cpuMsPerSecond(x)), kinesisCallsPerMinute: round(perMinute(x.kinesisCalls, x)),
        dynamodbPerMinute: Object.fromEntries(Object.entries(x.dynamodb).map(([op, n]) => [op, round(perMinute(n, x))])),
        dollarsPerMonth: round(dollarsPerMonth(x)), records: x.records, wallMs: Math.round(x.wallMs),
      }))])),
      loadAverage1m: { min: round(Math.min(...loads)), max: round(Math.max(...loads)) },
    },
  };
}

main(fixedCostFigure, import.meta.url);
