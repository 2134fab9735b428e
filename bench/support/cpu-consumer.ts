// One consumer reading one preloaded shard of kinesalite, alone in its process, for the CPU figure
// (bench/cpu.ts): it counts the CPU time of this process (`process.cpuUsage`: every thread, GC
// included) between the end of the first page and the last record, and prints it as one JSON line.
//
//   node --import tsx bench/support/cpu-consumer.ts '<json Job>'
//
// The first pages (`warmup` records, whole pages of 10,000) are the warm-up: the per-record code is
// compiled and the heap grown by then, and start-up (tables, registration, capture, lifion's lease
// acquisition) lies before it.
//
// Each consumer imports what it runs when it starts (the SDK, kinsumer, lifion-kinesis): a process
// carries no other consumer's modules in its heap.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import type { LocalAwsConfig } from '../../src/testing/index.js';

/**
 * The consumers measured. Over TLS (`Job.tls`), `kinsumer` and `bareSdk` use the SDK's default
 * clients (the production path: `new KinesisClient({...})`), `bareSdkKeepAlive` a keep-alive
 * `NodeHttpHandler`, `rawHttp` node:https; over plain HTTP every SDK client has a `NodeHttpHandler`.
 */
export type CpuConsumer = 'kinsumer' | 'bareSdk' | 'bareSdkKeepAlive' | 'rawHttp' | 'lifion' | 'lifionPollDelay0';

/** What the figure asks one child for. */
export interface Job {
  readonly consumer: CpuConsumer;
  readonly servers: LocalAwsConfig;
  readonly streamName: string;
  readonly shardId: string;
  /** Records in the shard. */
  readonly records: number;
  /** Records of the warm-up (whole pages): the measurement starts when this many arrived. */
  readonly warmup: number;
  /** Application name (kinsumer) or consumer group (lifion): fresh for every run. */
  readonly app: string;
  /** lifion-kinesis's state table, created by the figure (so lifion does not wait 20 s for it). */
  readonly lifionTable: string;
  /** Write a CPU profile of the measured window (the inspector's sampler, 100 µs) to this file. */
  readonly profile?: string;
  /**
   * kinsumer only: after the last record, measure its CPU for this long with the shard drained
   * (leases, group-epoch reads, checkpoints, empty polls: what it spends by the clock, not by the record).
   */
  readonly idleMs?: number;
  /** The endpoints are TLS ones (their certificate trusted through NODE_EXTRA_CA_CERTS). */
  readonly tls?: boolean;
  /** The bare and raw loops: after the last record, this many GetRecords on the drained shard, measured (CPU per empty poll). */
  readonly idlePolls?: number;
}

/** AWS calls made (commands sent, retries not counted again). */
export interface CallCounts {
  readonly dynamodb: number;
  readonly kinesis: number;
}

/** `Date.now()` at the start and the end of a measured span (the figure counts DynamoDB calls in it at its proxy). */
export interface Span {
  readonly fromMs: number;
  readonly toMs: number;
}

/** What a child prints. */
export interface JobResult {
  readonly records: number;
  readonly cpuMicros: number;
  readonly wallMs: number;
  readonly checksum: number;
  /** kinsumer only: the calls it made in the measured window (DynamoDB's filled in by the figure, from `window`). */
  readonly calls?: CallCounts;
  readonly window?: Span;
  /** kinsumer only (see {@link Job.idleMs}): its CPU and calls while idle on the drained shard. */
  readonly idle?: { readonly cpuMicros: number; readonly wallMs: number; readonly calls: CallCounts; readonly window: Span };
  /** The bare and raw loops (see {@link Job.idlePolls}): the CPU of that many empty GetRecords. */
  readonly idlePolls?: { readonly cpuMicros: number; readonly polls: number };
}

// kinsumer's GetRecords, counted by its `stats` (nothing is added to its clients: kinsumer leaves a
// client with middleware of the application's on the SDK's path, which is not what is measured).
// DynamoDB calls are counted by the figure, at a proxy in front of the local server.
const calls = { dynamodb: 0, kinesis: 0 };
const callsSince = (start: CallCounts): CallCounts => ({ dynamodb: calls.dynamodb - start.dynamodb, kinesis: calls.kinesis - start.kinesis });

let checksum = 0;
function touch(data: Uint8Array | undefined, sequenceNumber: string | undefined): void {
  checksum = (checksum + (data?.length ?? 0) + (sequenceNumber?.length ?? 0)) | 0;
}

/** Counts records; takes the CPU reading at the end of the warm-up and at the last record. */
class Meter {
  private seen = 0;
  private startCpu: NodeJS.CpuUsage | undefined;
  private startWall = 0;
  private startCalls: CallCounts = { ...calls };
  private startDate = 0;
  private result: JobResult | undefined;
  private resolveDone!: (result: JobResult) => void;
  /** Set by the bare and raw loops after their last record (see {@link Job.idlePolls}). */
  idlePolls: JobResult['idlePolls'];
  readonly done = new Promise<JobResult>((resolve) => { this.resolveDone = resolve; });

  private readonly session: Session | undefined;

  constructor(private readonly job: Job) {
    if (job.profile !== undefined) {
      this.session = new Session();
      this.session.connect();
      this.session.post('Profiler.enable');
      this.session.post('Profiler.setSamplingInterval', { interval: 100 });
    }
  }

  count(n: number): void {
    this.seen += n;
    if (this.startCpu === undefined && this.seen >= this.job.warmup) {
      this.session?.post('Profiler.start');
      this.startCpu = process.cpuUsage();
      this.startWall = performance.now();
      this.startDate = Date.now();
      this.startCalls = { ...calls };
    }
    if (this.result === undefined && this.startCpu !== undefined && this.seen >= this.job.records) {
      const used = process.cpuUsage(this.startCpu);
      const result: JobResult = {
        records: this.seen - this.job.warmup, cpuMicros: used.user + used.system, wallMs: performance.now() - this.startWall, checksum,
        ...(this.job.consumer === 'kinsumer' ? { calls: callsSince(this.startCalls), window: { fromMs: this.startDate, toMs: Date.now() } } : {}),
      };
      this.result = result;
      const { session } = this;
      const path = this.job.profile;
      if (session === undefined || path === undefined) {
        this.resolveDone(result);
        return;
      }
      session.post('Profiler.stop', (error, answer) => {
        if (error === null) writeFileSync(path, JSON.stringify(answer.profile));
        this.resolveDone(result);
      });
    }
  }
}

/** The clients a consumer of this job builds (see {@link CpuConsumer}). */
async function clients(job: Job, keepAlive = false) {
  const { KinesisClient } = await import('@aws-sdk/client-kinesis');
  const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
  const { localDynamoDbClient, localKinesisClient } = await import('../../src/testing/index.js');
  const { servers } = job;
  if (job.tls !== true) return { kinesis: localKinesisClient(servers), dynamodb: localDynamoDbClient(servers) };
  const base = { region: servers.region, credentials: servers.credentials };
  if (!keepAlive) {
    return { kinesis: new KinesisClient({ ...base, endpoint: servers.endpoints.kinesis }), dynamodb: new DynamoDBClient({ ...base, endpoint: servers.endpoints.dynamodb }) };
  }
  const { NodeHttpHandler } = await import('@smithy/node-http-handler');
  const { Agent } = await import('node:https');
  const requestHandler = new NodeHttpHandler({ httpsAgent: new Agent({ keepAlive: true }) });
  return { kinesis: new KinesisClient({ ...base, endpoint: servers.endpoints.kinesis, requestHandler }), dynamodb: new DynamoDBClient({ ...base, endpoint: servers.endpoints.dynamodb }) };
}

/** After the last record: `job.idlePolls` GetRecords on the drained shard, their CPU. */
async function idlePolls(job: Job, poll: () => Promise<unknown>): Promise<JobResult['idlePolls']> {
  if (job.idlePolls === undefined || job.idlePolls <= 0) return undefined;
  for (let i = 0; i < 20; i += 1) await poll();
  const cpu = process.cpuUsage();
  for (let i = 0; i < job.idlePolls; i += 1) await poll();
  const used = process.cpuUsage(cpu);
  return { cpuMicros: used.user + used.system, polls: job.idlePolls };
}

async function bareSdk(job: Job, meter: Meter, keepAlive = false): Promise<() => Promise<void>> {
  const { GetRecordsCommand, GetShardIteratorCommand } = await import('@aws-sdk/client-kinesis');
  const { kinesis } = await clients(job, keepAlive);
  let iterator = (await kinesis.send(new GetShardIteratorCommand({ StreamName: job.streamName, ShardId: job.shardId, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
  let read = 0;
  while (read < job.records && iterator !== undefined) {
    const page = await kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 10_000 }));
    const records = page.Records ?? [];
    for (const record of records) touch(record.Data, record.SequenceNumber);
    read += records.length;
    meter.count(records.length);
    iterator = page.NextShardIterator;
  }
  const last = iterator;
  meter.idlePolls = await idlePolls(job, () => kinesis.send(new GetRecordsCommand({ ShardIterator: last, Limit: 10_000 })));
  return () => Promise.resolve(kinesis.destroy());
}

/** The limit: `node:http`, JSON.parse and base64, no SDK (raw-get-records.ts). */
async function rawHttp(job: Job, meter: Meter): Promise<() => Promise<void>> {
  const { RawKinesis } = await import('./raw-get-records.js');
  const kinesis = new RawKinesis(job.servers);
  let iterator: string | undefined = await kinesis.trimHorizon(job.streamName, job.shardId);
  let read = 0;
  while (read < job.records && iterator !== undefined) {
    const page = await kinesis.getRecords(iterator, 10_000, touch);
    read += page.count;
    meter.count(page.count);
    iterator = page.next;
  }
  const last = iterator ?? '';
  meter.idlePolls = await idlePolls(job, () => kinesis.getRecords(last, 10_000, touch));
  return () => Promise.resolve(kinesis.destroy());
}

async function kinsumer(job: Job, meter: Meter): Promise<() => Promise<void>> {
  const { Kinsumer, createTables } = await import('../../src/index.js');
  const { kinesis, dynamodb } = await clients(job);
  await createTables({ dynamodb, applicationName: job.app });
  // Every GetRecords answered, lean or through the SDK.
  const stats = { eventsFromKinesis: () => { calls.kinesis += 1; } };
  const consumer = new Kinsumer({ streamName: job.streamName, applicationName: job.app, kinesis, dynamodb, clientId: `${job.app}-client`, stats });
  const subscription = consumer.records$.subscribe((record) => {
    touch(record.data, record.sequenceNumber);
    record.ack();
    meter.count(1);
  });
  return async () => {
    await consumer.stop().catch(() => undefined);
    subscription.unsubscribe();
  };
}

async function lifion(job: Job, meter: Meter, pollDelay: number | undefined): Promise<() => Promise<void>> {
  const { lifionConsumer } = await import('./lifion.js');
  const { servers } = job;
  const consumer = lifionConsumer({
    streamName: job.streamName,
    consumerGroup: job.app,
    createStreamIfNeeded: false,
    initialPositionInStream: 'TRIM_HORIZON',
    useEnhancedFanOut: false,
    useAutoCheckpoints: true,
    // Bytes, as kinsumer and the SDK hand them over (its default 'auto' would try JSON.parse).
    shouldParseJson: false,
    ...(pollDelay === undefined ? {} : { pollDelay }),
    endpoint: servers.endpoints.kinesis,
    region: servers.region,
    accessKeyId: servers.credentials.accessKeyId,
    secretAccessKey: servers.credentials.secretAccessKey,
    dynamoDb: {
      endpoint: servers.endpoints.dynamodb,
      region: servers.region,
      accessKeyId: servers.credentials.accessKeyId,
      secretAccessKey: servers.credentials.secretAccessKey,
      tableName: job.lifionTable,
    },
  });
  const errors: unknown[] = [];
  consumer.on('error', (error) => errors.push(error));
  consumer.on('data', (chunk) => {
    for (const record of chunk.records) touch(record.data, record.sequenceNumber);
    meter.count(chunk.records.length);
  });
  await consumer.startConsumer();
  void meter.done.catch(() => undefined);
  return () => {
    consumer.stopConsumer();
    if (errors.length > 0) process.stderr.write(`lifion-kinesis errors: ${errors.map(String).join('; ')}\n`);
    return Promise.resolve();
  };
}

async function run(job: Job): Promise<JobResult> {
  const meter = new Meter(job);
  const start = {
    bareSdk: (j: Job, m: Meter) => bareSdk(j, m), bareSdkKeepAlive: (j: Job, m: Meter) => bareSdk(j, m, true), rawHttp, kinsumer,
    lifion: (j: Job, m: Meter) => lifion(j, m, undefined), lifionPollDelay0: (j: Job, m: Meter) => lifion(j, m, 0),
  }[job.consumer];
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${job.consumer}: no ${job.records} records within 240 s`)), 240_000).unref());
  const stop = await Promise.race([start(job, meter), timeout]);
  const result = await Promise.race([meter.done, timeout]);
  const idle = job.idleMs === undefined || job.idleMs <= 0 ? undefined : await idleFor(job.idleMs);
  await stop();
  return { ...result, ...(idle === undefined ? {} : { idle }), ...(meter.idlePolls === undefined ? {} : { idlePolls: meter.idlePolls }) };
}

/** The process's CPU and calls over `ms` of doing nothing but what it does by the clock. */
async function idleFor(ms: number): Promise<NonNullable<JobResult['idle']>> {
  const cpu = process.cpuUsage();
  const wall = performance.now();
  const fromMs = Date.now();
  const start = { ...calls };
  await new Promise((resolve) => setTimeout(resolve, ms));
  const used = process.cpuUsage(cpu);
  return { cpuMicros: used.user + used.system, wallMs: performance.now() - wall, calls: callsSince(start), window: { fromMs, toMs: Date.now() } };
}

if (process.argv[2] !== undefined && import.meta.url.endsWith(process.argv[1]?.split('/').pop() ?? '\0')) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE = '1';
  run(JSON.parse(process.argv[2]) as Job).then((result) => {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    process.exit(0);
  }, (error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
