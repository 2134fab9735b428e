// One worker process of a fleet: a Kinsumer that logs every record it acks to its ack log, and
// reports its events to the parent over IPC. Configuration: JSON in argv[2] (see WorkerConfig).
// 'stop' over IPC (or SIGTERM) stops it gracefully.
import { join } from 'node:path';
import { concatMap, mergeMap, tap } from 'rxjs';
import { Kinsumer, type KinsumerEvent, type KinsumerRecord, type KinsumerSettings, type StreamRef } from '../../src/index.js';
import { localDynamoDbClient, localKinesisClient, type LocalAwsConfig } from '../../src/testing/index.js';
import { AckWriter } from './ack-log.js';
import { amountOf } from './producer.js';

/** What a worker is told at start. */
export interface WorkerConfig {
  readonly id: string;
  /** Endpoints to use (the local servers, or a fault proxy in front of them). */
  readonly aws: LocalAwsConfig;
  readonly options: Omit<KinsumerSettings, 'kinesis' | 'dynamodb' | 'clientId'> & StreamRef;
  /** Folder of the ack logs: this worker writes `<id>.acks.jsonl` there. */
  readonly logDir: string;
  /**
   * Ack log file name inside `logDir`. Default `<id>.acks.jsonl`. A worker restarted with the same
   * id after a SIGKILL takes a new file, so its lines never join a torn last line of the old one.
   */
  readonly logFile?: string;
  /** Simulated work per record. Default 0. */
  readonly processingMs?: number;
  /** Records processed at once, acks in any order (`mergeMap`); 1 = in order (`concatMap`). Default 1. */
  readonly concurrency?: number;
  /** SDK attempts per call (1: every fault reaches kinsumer's own retries). Default the SDK's. */
  readonly maxAttempts?: number;
  /**
   * Effects exactly once (design §8.1): each record is acked with a write that adds its amount
   * (`amountOf`) to its partition key's total in this table (hash key `account`), committed with
   * its checkpoint. Default: plain acks.
   */
  readonly effects?: { readonly table: string };
}

/** What a worker tells its parent. */
export type WorkerReport =
  | { readonly type: 'event'; readonly at: number; readonly event: SerializedEvent }
  | { readonly type: 'acked'; readonly at: number; readonly count: number }
  | { readonly type: 'stopped'; readonly at: number }
  | { readonly type: 'failed'; readonly at: number; readonly error: string };

/** An event with its errors reduced to name and message (IPC carries plain data). */
export type SerializedEvent = { readonly type: KinsumerEvent['type']; readonly shardId?: string; readonly error?: string } & Record<string, unknown>;

function serialize(event: KinsumerEvent): SerializedEvent {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(event)) out[key] = value instanceof Error ? `${value.name}: ${value.message}` : value;
  return out as SerializedEvent;
}

function main(): void {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;
  const report = (message: WorkerReport) => { if (process.connected) process.send?.(message); };
  const overrides = config.maxAttempts === undefined ? {} : { maxAttempts: config.maxAttempts };
  const kinsumer = new Kinsumer({
    ...config.options,
    clientId: config.id,
    // Its events go to the parent, which narrates them: warnings on stderr would write over its view.
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    kinesis: localKinesisClient(config.aws, overrides),
    dynamodb: localDynamoDbClient(config.aws, overrides),
  });
  const log = new AckWriter(join(config.logDir, config.logFile ?? `${config.id}.acks.jsonl`));
  const decoder = new TextDecoder();
  let acked = 0;
  kinsumer.events$.subscribe((event) => report({ type: 'event', at: Date.now(), event: serialize(event) }));
  const ackTimer = setInterval(() => report({ type: 'acked', at: Date.now(), count: acked }), 250);

  const processingMs = config.processingMs ?? 0;
  const concurrency = config.concurrency ?? 1;
  let received = 0;
  // When kinsumer emitted each record (with concurrency or a slow handler, handling starts later).
  const emittedAt = new WeakMap<KinsumerRecord, number>();
  const handle = async (record: KinsumerRecord) => {
    const e = Date.now();
    const i = received++;
    if (processingMs > 0) await new Promise((resolve) => setTimeout(resolve, processingMs));
    log.write({
      e, r: emittedAt.get(record) ?? e, i, t: Date.now(), w: config.id, shardId: record.shardId, seq: record.sequenceNumber,
      ...(record.subSequenceNumber === undefined ? {} : { sub: record.subSequenceNumber }),
      key: record.partitionKey, data: decoder.decode(record.data),
    });
    const data = decoder.decode(record.data);
    const { effects } = config;
    record.ack(effects === undefined ? undefined : {
      writes: [{
        Update: {
          TableName: effects.table, Key: { account: { S: record.partitionKey } }, UpdateExpression: 'ADD amount :a',
          ExpressionAttributeValues: { ':a': { N: String(amountOf(data)) } },
        },
      }],
    });
    acked += 1;
  };
  kinsumer.records$
    .pipe(tap((record) => emittedAt.set(record, Date.now())), concurrency === 1 ? concatMap(handle) : mergeMap(handle, concurrency))
    .subscribe({
      error: (error: unknown) => {
        report({ type: 'failed', at: Date.now(), error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
        process.exitCode = 1;
        void kinsumer.stop().catch(() => undefined).finally(() => process.exit(1));
      },
    });

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void kinsumer.stop().then(
      () => { clearInterval(ackTimer); report({ type: 'acked', at: Date.now(), count: acked }); report({ type: 'stopped', at: Date.now() }); log.close(); process.exit(0); },
      (error: unknown) => { report({ type: 'failed', at: Date.now(), error: String(error) }); process.exit(1); },
    );
  };
  process.on('message', (message) => { if (message === 'stop') stop(); });
  process.on('SIGTERM', stop); // on, not once: a second SIGTERM must not end it mid-stop
  process.once('disconnect', stop);
}

main();
