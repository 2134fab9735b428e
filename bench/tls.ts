// The cpu figure on the production path (issue 31 item 2): the same preloaded shard, read through
// local TLS endpoints (node:http2 secure servers, HTTP/1.1 allowed, a self-signed certificate, in
// the servers' process) by clients built as the README's first example builds them. Consumers, each
// in a process of its own: kinsumer with the SDK's default clients, the bare SDK GetRecords loop as
// users write it (`new KinesisClient({...})`: its HTTP/2 handler opens a TLS session per call), the
// same loop with a keep-alive NodeHttpHandler, and the raw loop on node:https (the practical limit).
// CPU per record at saturation, and per idle poll: the bare and raw loops poll their drained shard
// `idlePolls` more times; kinsumer stays `idleMs` on it (its idle polls, leases and group reads).
//
//   npx tsx bench/tls.ts [--quick | --tiny]      (CONSUMERS=..., SIZES=..., ROUNDS=... narrow a quick run)
import { cpus, loadavg } from 'node:os';
import { localKinesisClient } from '../src/testing/index.js';
import { LABEL, RATIO_TO_RAW_GOAL, callsPerSecond } from './cpu.js';
import type { CpuConsumer, Job, JobResult } from './support/cpu-consumer.js';
import { microsPerRecord, preloadShard, rotate, runChild } from './support/cpu-runs.js';
import { type Figure, type Metric, type RunOptions, log, main, median, round } from './support/harness.js';
import { startServerProcess } from './support/local-servers.js';

type Size = { readonly bytes: number; readonly key: '100B' | '1KiB'; readonly records: number; readonly warmup: number };

interface Settings {
  readonly sizes: readonly Size[];
  readonly rounds: number;
  readonly consumers: readonly CpuConsumer[];
  /** kinsumer: measured this long idle on its drained shard. */
  readonly idleMs: number;
  /** The bare and raw loops: empty polls measured on their drained shard. */
  readonly idlePolls: number;
}

const CONSUMERS: readonly CpuConsumer[] = ['kinsumer', 'bareSdk', 'bareSdkKeepAlive', 'rawHttp'];

const TLS_LABEL: Record<string, string> = {
  kinsumer: 'kinsumer, default clients (records$ + ack)',
  bareSdk: 'bare SDK loop, default handler (a TLS session per call)',
  bareSdkKeepAlive: LABEL.bareSdkKeepAlive,
  rawHttp: 'raw node:https + JSON.parse + base64 loop (no SDK)',
};

function settingsFor(options: RunOptions): Settings {
  if (options.tiny === true) {
    return { sizes: [{ bytes: 100, key: '100B', records: 300, warmup: 100 }, { bytes: 1024, key: '1KiB', records: 300, warmup: 100 }], rounds: 1, consumers: CONSUMERS, idleMs: 300, idlePolls: 10 };
  }
  if (options.quick) {
    const consumers = process.env.CONSUMERS?.split(',') ?? CONSUMERS;
    const sizes = process.env.SIZES?.split(',') ?? ['100B', '1KiB'];
    const all: Size[] = [{ bytes: 100, key: '100B', records: 50_000, warmup: 20_000 }, { bytes: 1024, key: '1KiB', records: 40_000, warmup: 20_000 }];
    return {
      sizes: all.filter((s) => sizes.includes(s.key)), rounds: Number(process.env.ROUNDS ?? 1),
      consumers: CONSUMERS.filter((c) => consumers.includes(c)), idleMs: 5000, idlePolls: 200,
    };
  }
  return {
    sizes: [{ bytes: 100, key: '100B', records: 110_000, warmup: 30_000 }, { bytes: 1024, key: '1KiB', records: 60_000, warmup: 20_000 }],
    rounds: 3, consumers: CONSUMERS, idleMs: 10_000, idlePolls: 300,
  };
}

export const tlsFigure: Figure = {
  name: 'tls',
  title: 'CPU per record and per idle poll over TLS with the SDK\'s default clients (the production path), each consumer in its own process',
  async run(options) {
    const settings = settingsFor(options);
    const server = await startServerProcess({ tls: true });
    const tls = server.tls;
    if (tls === undefined) throw new Error('the servers started without TLS endpoints');
    // Loading goes over plain HTTP; the consumers read through the TLS endpoints.
    const kinesis = localKinesisClient(server);
    const metrics: Metric[] = [];
    const keyed: Record<string, number> = {};
    const loads: number[] = [loadavg()[0] ?? 0];
    const runs = new Map<string, JobResult[]>();
    try {
      const streams = new Map<string, { streamName: string; shardId: string }>();
      for (const size of settings.sizes) streams.set(size.key, await preloadShard(kinesis, `bench-tls-${size.bytes}-${process.pid}`, size.records, size.bytes));
      let app = 0;
      const job = (consumer: CpuConsumer, size: Size): Job => {
        app += 1;
        const stream = streams.get(size.key) as { streamName: string; shardId: string };
        return {
          consumer, servers: { region: tls.region, endpoints: tls.endpoints, credentials: tls.credentials }, tls: true,
          ...stream, records: size.records, warmup: size.warmup, app: `bench-tls-${process.pid}-${app}`, lifionTable: '',
          ...(consumer === 'kinsumer' ? { idleMs: settings.idleMs } : { idlePolls: settings.idlePolls }),
        };
      };
      for (let r = 0; r < settings.rounds; r += 1) {
        for (const size of settings.sizes) {
          for (const consumer of rotate(settings.consumers, r + (size.bytes === 100 ? 0 : 2))) {
            const result = await runChild(job(consumer, size), { NODE_EXTRA_CA_CERTS: tls.caFile });
            runs.set(`${consumer}.${size.key}`, [...(runs.get(`${consumer}.${size.key}`) ?? []), result]);
            loads.push(loadavg()[0] ?? 0);
            log(`round ${r + 1}, ${size.key}, ${consumer}: ${microsPerRecord(result).toFixed(2)} µs/record (${result.records} records, ${Math.round(result.wallMs)} ms)`);
          }
        }
      }
    } finally {
      kinesis.destroy();
      await server.stop();
    }
    const has = (consumer: CpuConsumer): boolean => settings.consumers.includes(consumer);
    const cpuOf = (consumer: CpuConsumer, key: string): number => median((runs.get(`${consumer}.${key}`) ?? []).map(microsPerRecord));
    for (const size of settings.sizes) {
      for (const consumer of settings.consumers) {
        const value = cpuOf(consumer, size.key);
        metrics.push({ name: `${size.key}: CPU per record over TLS, ${TLS_LABEL[consumer]}`, value: round(value), unit: 'µs' });
        keyed[`tls.microsPerRecord.${consumer}.${size.key}`] = round(value);
      }
      if (has('kinsumer') && has('rawHttp')) {
        const ratio = cpuOf('kinsumer', size.key) / cpuOf('rawHttp', size.key);
        metrics.push({
          name: `${size.key}: kinsumer (default clients) against the raw TLS loop, CPU per record`, value: round(cpuOf('kinsumer', size.key)), unit: 'µs',
          baseline: { name: 'raw node:https loop', value: round(cpuOf('rawHttp', size.key)), unit: 'µs' }, ratio: round(ratio),
          target: `<= ${RATIO_TO_RAW_GOAL} × the raw TLS loop`, met: ratio <= RATIO_TO_RAW_GOAL,
        });
        keyed[`tls.ratioToRaw.${size.key}`] = round(ratio);
      }
      if (has('kinsumer') && has('bareSdk')) {
        const ratio = cpuOf('kinsumer', size.key) / cpuOf('bareSdk', size.key);
        metrics.push({
          name: `${size.key}: kinsumer (default clients) against the bare SDK loop as users write it (default handler)`, value: round(cpuOf('kinsumer', size.key)), unit: 'µs',
          baseline: { name: 'bare SDK loop, default handler', value: round(cpuOf('bareSdk', size.key)), unit: 'µs' }, ratio: round(ratio),
          target: '< 1 × the bare SDK loop', met: ratio < 1,
        });
        keyed[`tls.ratioToBareSdk.${size.key}`] = round(ratio);
      }
    }
    // Per idle poll: every size's runs together (an empty page is the same whatever the records were).
    const all = (consumer: CpuConsumer): JobResult[] => settings.sizes.flatMap((size) => runs.get(`${consumer}.${size.key}`) ?? []);
    for (const consumer of settings.consumers.filter((c) => c !== 'kinsumer')) {
      const perPoll = median(all(consumer).flatMap((x) => (x.idlePolls === undefined ? [] : [x.idlePolls.cpuMicros / x.idlePolls.polls])));
      metrics.push({ name: `CPU per idle poll (an empty GetRecords, back to back), ${TLS_LABEL[consumer]}`, value: round(perPoll), unit: 'µs' });
      keyed[`tls.idle.microsPerPoll.${consumer}`] = round(perPoll);
    }
    const idle = all('kinsumer').flatMap((x) => (x.idle === undefined ? [] : [x.idle]));
    if (idle.length > 0) {
      const rate = median(idle.map((x) => x.cpuMicros / x.wallMs));
      const perPoll = median(idle.map((x) => x.cpuMicros / Math.max(1, x.calls.kinesis)));
      const calls = callsPerSecond({ dynamodb: median(idle.map((x) => x.calls.dynamodb)), kinesis: median(idle.map((x) => x.calls.kinesis)) }, median(idle.map((x) => x.wallMs)));
      metrics.push({
        name: 'kinsumer (default clients) idle on its drained shard: CPU per second', value: round(rate), unit: 'ms/s',
        note: `${calls.kinesisCallsPerSecond} GetRecords a second (its DynamoDB calls go to the TLS endpoint, not counted here: see the fixed-cost figure)`,
      });
      metrics.push({
        name: 'kinsumer idle: all its CPU per GetRecords (its leases and group reads included)', value: round(perPoll), unit: 'µs',
        ...(has('bareSdk') ? { baseline: { name: 'bare SDK loop, default handler, per poll', value: keyed['tls.idle.microsPerPoll.bareSdk'] ?? 0, unit: 'µs' } } : {}),
      });
      keyed['tls.idle.kinsumerCpuMsPerSecond'] = round(rate);
      keyed['tls.idle.microsPerPoll.kinsumer'] = round(perPoll);
    }
    return {
      settings: { ...settings, transport: 'TLS 1.3, node:http2 secure server with HTTP/1.1 allowed, self-signed P-256 certificate (trusted via NODE_EXTRA_CA_CERTS), in the servers\' process' },
      metrics,
      keyed,
      notes: [
        'The TLS endpoints forward to kinesalite and dynalite over plain HTTP in the servers\' process; their CPU is not the consumer\'s and is not counted.',
        'kinsumer and the bare SDK loop use the SDK\'s default clients (new KinesisClient({ region, endpoint, credentials })): kinsumer replaces the per-call TLS session of the Kinesis client\'s default handler with its own keep-alive connections; the bare loop pays a TLS handshake per GetRecords.',
        'CPU per idle poll: the bare and raw loops call GetRecords on their drained shard back to back; kinsumer\'s figure is all its CPU while idle (leases, group-epoch reads, once-a-second polls) over its GetRecords, so not a per-call cost alone.',
        `Load average (1 min) over the run: ${round(Math.min(...loads))}–${round(Math.max(...loads))} on ${cpus().length} cores (other work shares the machine).`,
      ],
      details: {
        runs: Object.fromEntries([...runs].map(([key, list]) => [key, list.map((x) => ({
          microsPerRecord: round(microsPerRecord(x)), records: x.records, wallMs: Math.round(x.wallMs),
          ...(x.calls === undefined ? {} : { getRecords: x.calls.kinesis }), ...(x.idlePolls === undefined ? {} : { idlePolls: x.idlePolls }),
          ...(x.idle === undefined ? {} : { idle: { cpuMsPerSecond: round(x.idle.cpuMicros / x.idle.wallMs), getRecordsPerSecond: callsPerSecond(x.idle.calls, x.idle.wallMs).kinesisCallsPerSecond } }),
        }))])),
        loadAverage1m: { min: round(Math.min(...loads)), max: round(Math.max(...loads)) },
      },
    };
  },
};

main(tlsFigure, import.meta.url);
