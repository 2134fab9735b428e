// Figure 7 — scale. Worker processes (examples/demo/worker.ts, default timings) share a stream on
// the local servers; every DynamoDB call of every worker goes through a counting proxy.
//   - time until ownership is balanced (every shard held, counts differ by <= 1): from a cold
//     start (the first spawn), and after one worker leaves (its graceful stop);
//   - CPU per worker while idle (no records; coordination plus empty GetRecords polls), from /proc;
//   - DynamoDB calls per minute as the shard count grows (8 -> 64 -> 200, 10 workers) and, at 200
//     shards, with 2 workers instead of 10: the cost must grow with shards, not shards x workers.
//
//   npx tsx bench/scale.ts [--quick] [--configs 200x10,64x2]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTables } from '../src/index.js';
import { createStream, localDynamoDbClient, localKinesisClient } from '../src/testing/index.js';
import { WorkerProcess } from '../examples/demo/fleet.js';
import { startCountingProxy, type CountingProxy, type DynamoCall } from './support/dynamo-calls.js';
import { type Figure, type Metric, type RunOptions, log, main, processCpuSeconds, round, sleep, waitFor } from './support/harness.js';
import { type ServerProcess, startServerProcess } from './support/local-servers.js';

interface Config {
  readonly shards: number;
  readonly workers: number;
  /** Also time a worker leaving. */
  readonly leave: boolean;
}

interface Settings {
  readonly configs: readonly Config[];
  /** A multiple of shardCheckFrequencyMs and of the lease renewal interval (5 s by default): periodic calls cluster, so a shorter window would alias. */
  readonly windowMs: number;
}

/** `--configs 200x10,64x2` (shards x workers) replaces the configurations; the first also times a leave. */
function configsFromArgs(argv: readonly string[]): Config[] | undefined {
  const at = argv.indexOf('--configs');
  if (at < 0) return undefined;
  return (argv[at + 1] ?? '').split(',').map((text, i) => {
    const [shards, workers] = text.split('x').map(Number);
    return { shards: shards ?? 8, workers: workers ?? 2, leave: i === 0 };
  });
}

function settingsFor(options: RunOptions): Settings {
  const configs = configsFromArgs(process.argv);
  if (configs !== undefined) return { configs, windowMs: options.quick ? 10_000 : 30_000 };
  if (options.tiny === true) return { configs: [{ shards: 4, workers: 2, leave: true }], windowMs: 5000 };
  if (options.quick) return { configs: [{ shards: 8, workers: 3, leave: false }, { shards: 24, workers: 3, leave: true }, { shards: 24, workers: 2, leave: false }], windowMs: 10_000 };
  return {
    configs: [
      { shards: 8, workers: 10, leave: false },
      { shards: 64, workers: 10, leave: false },
      { shards: 200, workers: 10, leave: true },
      // Fewer workers on the same shards: shards x workers growth would show here. (64, not 200:
      // two workers polling 100 shards each saturate 2 cores together with kinesalite.)
      { shards: 64, workers: 2, leave: false },
    ],
    windowMs: 30_000,
  };
}

interface Measured {
  readonly config: Config;
  readonly coldBalancedMs: number;
  /** From the last worker's first heartbeat to balance. */
  readonly afterLastJoinMs: number;
  readonly leaveBalancedMs?: number;
  readonly callsPerMinute: number;
  readonly shardCallsPerMinute: number;
  readonly coordinationCallsPerMinute: number;
  readonly byOperation: Record<string, number>;
  readonly idleCpuPercentPerWorker: number;
  readonly idleCpuPercentMaxWorker: number;
  readonly serverCpuPercent: number | undefined;
  readonly heldAfterBalance: readonly number[];
  /** Each worker's CPU over the idle window, in the order of heldAfterBalance. */
  readonly idleCpuPercent: readonly number[];
}

function balanced(workers: readonly WorkerProcess[], shards: number): boolean {
  const counts = workers.filter((w) => w.running).map((w) => w.held().length);
  return counts.length > 0 && counts.reduce((a, b) => a + b, 0) === shards && Math.max(...counts) - Math.min(...counts) <= 1;
}

async function measureConfig(server: ServerProcess, proxy: CountingProxy, config: Config, windowMs: number, serial: number): Promise<Measured> {
  const name = `bench-scale-${config.shards}x${config.workers}-${process.pid}-${serial}`;
  const kinesis = localKinesisClient(server);
  const dynamodb = localDynamoDbClient(server);
  const logDir = mkdtempSync(join(tmpdir(), 'kinsumer-bench-scale-'));
  const workers: WorkerProcess[] = [];
  try {
    await createStream(kinesis, name, config.shards, { timeoutMs: 120_000 });
    await createTables({ dynamodb, applicationName: name });
    const aws = { region: server.region, credentials: server.credentials, endpoints: { kinesis: server.endpoints.kinesis, dynamodb: proxy.endpoint } };
    const startedAt = Date.now();
    for (let i = 0; i < config.workers; i += 1) {
      workers.push(new WorkerProcess({ id: `w${String(i).padStart(2, '0')}`, aws, logDir, options: { streamName: name, applicationName: name } }));
    }
    await waitFor(() => balanced(workers, config.shards), `${config.shards} shards balanced over ${config.workers} workers`, 600_000, 20);
    const balancedAt = Date.now();
    const coldBalancedMs = balancedAt - startedAt;
    // The proxy saw each worker's first heartbeat (a put of its row in <app>_clients): balance
    // measured from the last one leaves out process start-up.
    const joinedAt = workers.map((w) => proxy.log.calls.find((c) => c.table === `${name}_clients` && c.command === 'PutItem' && c.key === w.id)?.atMs ?? balancedAt);
    const afterLastJoinMs = balancedAt - Math.max(...joinedAt);
    const heldAfterBalance = workers.map((w) => w.held().length);
    log(`${config.shards} shards x ${config.workers} workers: balanced ${coldBalancedMs} ms after the first spawn, ${afterLastJoinMs} ms after the last joined (${heldAfterBalance.join('/')})`);
    // One more membership period so that start-up traffic is behind us, then the idle window.
    await sleep(6000);
    const cpuBefore = workers.map((w) => processCpuSeconds(w.pid ?? -1) ?? Number.NaN);
    const serverBefore = processCpuSeconds(server.pid);
    const from = Date.now();
    await sleep(windowMs);
    const to = Date.now();
    const cpuPercent = workers.map((w, i) => (100 * ((processCpuSeconds(w.pid ?? -1) ?? Number.NaN) - (cpuBefore[i] ?? Number.NaN))) / ((to - from) / 1000));
    const serverAfter = processCpuSeconds(server.pid);
    const calls = proxy.log.calls.filter((c: DynamoCall) => c.atMs >= from && c.atMs < to && c.table.startsWith(name));
    const minutes = (to - from) / 60_000;
    const shardCalls = calls.filter((c) => c.table === `${name}_checkpoints` && c.key !== undefined);
    const counts = new Map<string, number>();
    for (const c of calls) {
      const key = `${c.command} ${c.table.replace(`${name}_`, '<app>_')}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const byOperation = Object.fromEntries([...counts].map(([key, count]) => [key, round(count / minutes)]));
    let leaveBalancedMs: number | undefined;
    if (config.leave) {
      const leaver = workers[0] as WorkerProcess;
      const leftAt = Date.now();
      await leaver.stop();
      await waitFor(() => balanced(workers, config.shards), `${config.shards} shards re-balanced over ${config.workers - 1} workers`, 600_000, 20);
      leaveBalancedMs = Date.now() - leftAt;
      log(`  one worker left: balanced again after ${leaveBalancedMs} ms`);
    }
    return {
      config,
      coldBalancedMs,
      afterLastJoinMs,
      ...(leaveBalancedMs === undefined ? {} : { leaveBalancedMs }),
      callsPerMinute: calls.length / minutes,
      shardCallsPerMinute: shardCalls.length / minutes,
      coordinationCallsPerMinute: (calls.length - shardCalls.length) / minutes,
      byOperation,
      idleCpuPercentPerWorker: cpuPercent.reduce((a, b) => a + b, 0) / cpuPercent.length,
      idleCpuPercentMaxWorker: Math.max(...cpuPercent),
      serverCpuPercent: serverBefore === undefined || serverAfter === undefined ? undefined : (100 * (serverAfter - serverBefore)) / ((to - from) / 1000),
      heldAfterBalance,
      idleCpuPercent: cpuPercent.map((x) => round(x)),
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    kinesis.destroy();
    dynamodb.destroy();
    rmSync(logDir, { recursive: true, force: true });
  }
}

export const scale: Figure = {
  name: 'scale',
  title: 'Scale: worker processes on many shards — time to balance, idle CPU, DynamoDB calls per minute',
  async run(options) {
    const settings = settingsFor(options);
    const server = await startServerProcess();
    const proxy = await startCountingProxy(server.endpoints.dynamodb);
    const results: Measured[] = [];
    try {
      let serial = 0;
      for (const config of settings.configs) {
        serial += 1;
        results.push(await measureConfig(server, proxy, config, settings.windowMs, serial));
      }
    } finally {
      await proxy.stop();
      await server.stop();
    }
    const metrics: Metric[] = [];
    for (const r of results.filter((x) => x.config.leave)) {
      metrics.push({ name: `${r.config.shards} shards, ${r.config.workers} workers: balanced after a cold start`, value: r.coldBalancedMs, unit: 'ms', note: 'from the first spawn; includes process start-up' });
      metrics.push({ name: `${r.config.shards} shards, ${r.config.workers} workers: balanced after the last worker joined`, value: r.afterLastJoinMs, unit: 'ms', note: 'from the last worker\'s first heartbeat' });
      if (r.leaveBalancedMs !== undefined) {
        metrics.push({ name: `${r.config.shards} shards, ${r.config.workers} -> ${r.config.workers - 1} workers: balanced after one leaves`, value: r.leaveBalancedMs, unit: 'ms', note: 'from its graceful stop()' });
      }
      metrics.push({ name: `${r.config.shards} shards, ${r.config.workers} workers: idle CPU per worker (mean)`, value: round(r.idleCpuPercentPerWorker), unit: '% of a core', note: 'coordination plus empty GetRecords polls of its shards' });
    }
    // Where there are more workers than shards, some hold none: their CPU is coordination alone.
    const shardless = results.flatMap((r) => r.idleCpuPercent.filter((_, i) => r.heldAfterBalance[i] === 0));
    if (shardless.length > 0) {
      metrics.push({ name: 'idle CPU of a worker holding no shard (coordination only)', value: round(shardless.reduce((a, b) => a + b, 0) / shardless.length), unit: '% of a core', note: `mean of ${shardless.length} workers` });
    }
    const withWorkers = (w: number) => results.filter((x) => x.config.workers === w).sort((a, b) => a.config.shards - b.config.shards);
    const byShards = withWorkers(Math.max(...results.map((x) => x.config.workers)));
    for (const r of byShards) {
      metrics.push({ name: `${r.config.shards} shards, ${r.config.workers} workers: DynamoDB calls/min`, value: round(r.callsPerMinute), unit: 'calls/min', ratio: round(r.shardCallsPerMinute / r.config.shards), ratioOf: 'shard-calls/min per shard' });
    }
    const smallest = byShards[0];
    const largest = byShards[byShards.length - 1];
    if (smallest !== undefined && largest !== undefined && largest !== smallest) {
      const perShardSmall = smallest.shardCallsPerMinute / smallest.config.shards;
      const perShardLarge = largest.shardCallsPerMinute / largest.config.shards;
      metrics.push({
        name: `per-shard calls/min, ${largest.config.shards} vs ${smallest.config.shards} shards (${largest.config.workers} workers)`, value: round(perShardLarge), unit: 'calls/min',
        baseline: { name: `${smallest.config.shards} shards`, value: round(perShardSmall), unit: 'calls/min' }, ratio: round(perShardLarge / perShardSmall),
        target: '0.8..1.25 (linear in shards)', met: perShardLarge / perShardSmall >= 0.8 && perShardLarge / perShardSmall <= 1.25,
      });
    }
    const few = results.find((x) => x.config.workers < (largest?.config.workers ?? 0));
    const many = byShards.find((x) => x.config.shards === few?.config.shards);
    if (few !== undefined && many !== undefined) {
      const ratio = many.callsPerMinute / few.callsPerMinute;
      const workerRatio = many.config.workers / few.config.workers;
      metrics.push({
        name: `${many.config.shards} shards: calls/min with ${many.config.workers} workers vs ${few.config.workers}`, value: round(many.callsPerMinute), unit: 'calls/min',
        baseline: { name: `${few.config.workers} workers`, value: round(few.callsPerMinute), unit: 'calls/min' }, ratio: round(ratio),
        target: `well below ${workerRatio} (shards x workers would scale by ${workerRatio})`, met: ratio < 1 + (workerRatio - 1) / 4,
      });
    }
    return {
      settings: { ...settings, kinsumerOptions: 'defaults (shardCheckFrequencyMs 5000, leaseTtlMs 15000, throttleDelayMs 250)' },
      metrics,
      notes: [
        'Every worker is a separate Node process (tsx); DynamoDB calls of all of them are counted by an HTTP proxy in front of dynalite.',
        'kinesalite serves every worker\'s idle GetRecords polls (4 per second per shard) from one process: at 200 shards it is busy, which slows everything on 2 cores.',
        '"Shard calls" name one checkpoint row (renewals, commits, captures); the rest is coordination (heartbeat, clients scan, shard-list read, leader work).',
      ],
      details: results.map((r) => ({ ...r, callsPerMinute: round(r.callsPerMinute), shardCallsPerMinute: round(r.shardCallsPerMinute), coordinationCallsPerMinute: round(r.coordinationCallsPerMinute), idleCpuPercentPerWorker: round(r.idleCpuPercentPerWorker), idleCpuPercentMaxWorker: round(r.idleCpuPercentMaxWorker), serverCpuPercent: r.serverCpuPercent === undefined ? null : round(r.serverCpuPercent) })),
    };
  },
};

main(scale, import.meta.url);
