// Figure — effects exactly once into DynamoDB (issue 24, design §8.1): what committing each
// record's own writes with its checkpoint, in one TransactWriteItems, costs against the same
// pipeline writing into a plain BatchWriteItem sink (at least once).
//
// One shard, 32 partition keys, processRecords with ordering 'partitionKey' (concurrency 32) and a
// handler that waits 1 ms (a real timer). Effects: the handler returns `{ writes }`, an ADD of the
// record's amount to its key's total; the record settles once its transaction committed. Plain
// sink: the handler puts the record's item into a sink that flushes BatchWriteItem calls of up to
// 25 items (one call in flight per 25 records gathered, or after 2 ms) and resolves once its batch
// is written; kinsumer commits the checkpoint as usual. Each trial is a fresh consumer group
// reading the stream from TRIM_HORIZON; the two alternate, rounds' medians are compared.
//
// DynamoDB is Amazon's DynamoDB Local (dynalite has no transactions): every table of the group and
// the user's. The stream is the in-memory one, behind the real client: the figure is about DynamoDB.
// Write units are computed from AWS's rules (a transactional write of an item up to 1 KB costs 2
// WCU, a plain one 1), since DynamoDB Local mis-sums transactional capacity (see
// /work/notes/ddb-transactions.md (a)).
//
//   npx tsx bench/effects.ts [--quick | --tiny]
import { BatchWriteItemCommand, CreateTableCommand, type DynamoDBClient, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { type OperatorFunction, tap } from 'rxjs';
import { Kinsumer, createTables, processRecords } from '../src/index.js';
import type { KinsumerRecord } from '../src/index.js';
import { Dynamo } from '../src/dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../src/dynamodb/lease-store.js';
import { DynamoMembershipStore } from '../src/dynamodb/membership-store.js';
import { DynamoMetadataStore } from '../src/dynamodb/metadata-store.js';
import { MemoryStream, startLocalAws, type LocalAws } from '../src/testing/index.js';
import { type Figure, type Metric, type RunOptions, log, main, median, nowMs, round, sleep } from './support/harness.js';

const HANDLER_MS = 1;
const KEYS = 32;
const CONCURRENCY = 32;
const SINK_BATCH = 25;
const SINK_LINGER_MS = 2;

interface Settings {
  readonly records: number;
  readonly rounds: number;
  readonly warmupMs: number;
  readonly trialMs: number;
}

function settingsFor(options: RunOptions): Settings {
  if (options.tiny === true) return { records: 3_000, rounds: 1, warmupMs: 300, trialMs: 1_000 };
  if (options.quick) return { records: 30_000, rounds: 1, warmupMs: 1_500, trialMs: 4_000 };
  return { records: 60_000, rounds: 3, warmupMs: 3_000, trialMs: 10_000 };
}

type Variant = 'effects' | 'plain sink';

/** DynamoDB calls of one trial, by command. */
type Calls = Record<string, number>;

const wait = (ms: number) => new Promise<void>((resolve) => { setTimeout(resolve, ms); });

/** At-least-once sink: BatchWriteItem of up to 25 puts, resolving each put once its batch is written. */
class BatchSink {
  #pending: Array<{ request: WriteRequest; done: () => void; failed: (error: unknown) => void }> = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly client: DynamoDBClient, private readonly table: string) {}

  put(item: WriteRequest['PutRequest']): Promise<void> {
    return new Promise<void>((done, failed) => {
      this.#pending.push({ request: { PutRequest: item }, done, failed });
      if (this.#pending.length >= SINK_BATCH) this.#flush();
      else this.#timer ??= setTimeout(() => this.#flush(), SINK_LINGER_MS);
    });
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#pending.splice(0, SINK_BATCH);
    if (batch.length === 0) return;
    void this.#write(batch.map((entry) => entry.request)).then(() => { for (const entry of batch) entry.done(); }, (error: unknown) => { for (const entry of batch) entry.failed(error); });
    if (this.#pending.length > 0) this.#timer = setTimeout(() => this.#flush(), SINK_LINGER_MS);
  }

  async #write(requests: WriteRequest[]): Promise<void> {
    let left = requests;
    while (left.length > 0) {
      const out = await this.client.send(new BatchWriteItemCommand({ RequestItems: { [this.table]: left } }));
      left = out.UnprocessedItems?.[this.table] ?? [];
    }
  }
}

function pipeline(variant: Variant, table: string, sink: BatchSink, done: () => void): OperatorFunction<KinsumerRecord, unknown> {
  const options = { ordering: 'partitionKey', concurrency: CONCURRENCY } as const;
  const amount = (record: KinsumerRecord) => String((Number(new TextDecoder().decode(record.data)) % 9) + 1);
  if (variant === 'effects') {
    return (source) => source.pipe(processRecords(async (record) => {
      await wait(HANDLER_MS);
      return { writes: [{ Update: { TableName: table, Key: { account: { S: record.partitionKey } }, UpdateExpression: 'ADD amount :a', ExpressionAttributeValues: { ':a': { N: amount(record) } } } }] };
    }, options), tap(done));
  }
  return (source) => source.pipe(processRecords(async (record) => {
    await wait(HANDLER_MS);
    await sink.put({ Item: { account: { S: record.id }, key: { S: record.partitionKey }, amount: { N: amount(record) } } });
  }, options), tap(done));
}

/** A consumer of `stream` whose every table is on DynamoDB Local; `calls` counts its DynamoDB calls. */
function consumer(local: LocalAws, stream: MemoryStream, app: string, calls: Calls): Kinsumer {
  const client = local.dynamodb;
  client.middlewareStack.add((next, context) => async (args) => {
    calls[context.commandName ?? '?'] = (calls[context.commandName ?? '?'] ?? 0) + 1;
    return next(args);
  }, { step: 'initialize', name: `count-${app}` });
  // Quiet: each trial ends by unsubscribing with records in flight, which the default logger warns about.
  const logger = { debug() {}, info() {}, warn() {}, error() {} };
  return new Kinsumer({ streamName: 'bench', applicationName: app, clientId: app, kinesis: local.kinesis, dynamodb: client, logger }, (options) => {
    const dynamo = new Dynamo(client);
    // As the Kinsumer's own wiring: the wall clock only written, every expiry on elapsedNow.
    const common = {
      dynamo, clientId: options.clientId, clientName: options.clientName, leaseTtlMs: options.leaseTtlMs,
      now: () => options.clock.wallNow(), elapsedNow: () => options.clock.elapsedNow(),
    };
    return {
      store: new DynamoLeaseStore({ ...common, table: `${app}_checkpoints`, scheduler: options.scheduler }),
      membership: new DynamoMembershipStore({ ...common, table: `${app}_clients` }),
      metadata: new DynamoMetadataStore({ ...common, table: `${app}_metadata` }),
      stream,
      prepare: () => createTables({ dynamodb: client, applicationName: app }),
    };
  });
}

interface Trial {
  readonly variant: Variant;
  readonly records: number;
  readonly elapsedMs: number;
  readonly calls: Calls;
  readonly ranDry: boolean;
}

async function trial(local: LocalAws, stream: MemoryStream, variant: Variant, settings: Settings, index: number): Promise<Trial> {
  const app = `bench-effects-${index < 0 ? 'warm' : index}-${variant === 'effects' ? 'tx' : 'sink'}`;
  const table = `${app}_user`;
  await local.dynamodb.send(new CreateTableCommand({
    TableName: table, BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'account', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'account', KeyType: 'HASH' }],
  }));
  const counting: Calls = {};
  const kinsumer = consumer(local, stream, app, counting);
  let done = 0;
  let failed: unknown;
  const subscription = kinsumer.records$.pipe(pipeline(variant, table, new BatchSink(local.dynamodb, table), () => { done += 1; }))
    .subscribe({ error: (error: unknown) => { failed = error; } });
  const deadline = nowMs() + 120_000;
  while (done === 0 && failed === undefined) {
    if (nowMs() > deadline) throw new Error(`effects: ${variant} delivered nothing in 120 s`);
    await sleep(20);
  }
  await sleep(settings.warmupMs);
  const startCount = done;
  const before = { ...counting };
  const start = nowMs();
  await sleep(settings.trialMs);
  const records = done - startCount;
  const elapsedMs = nowMs() - start;
  const calls = Object.fromEntries(Object.entries(counting).map(([command, count]) => [command, count - (before[command] ?? 0)]));
  subscription.unsubscribe();
  await kinsumer.stop().catch(() => undefined);
  if (failed !== undefined) throw failed instanceof Error ? failed : new Error(`${variant} failed`, { cause: failed });
  return { variant, records, elapsedMs, calls, ranDry: done >= settings.records };
}

export const effects: Figure = {
  name: 'effects',
  title: 'Effects exactly once: records\' writes in one transaction with their checkpoint, against a plain BatchWriteItem sink (DynamoDB Local, one shard, 32 keys, 1 ms handler)',
  async run(options) {
    const settings = settingsFor(options);
    const local = await startLocalAws({ kinesis: 'kinesalite', dynamodb: 'dynamodb-local' });
    try {
      const stream = new MemoryStream({ shardCount: 1 });
      const [shardId] = stream.shardIds() as [string];
      for (let i = 0; i < settings.records; i += 5_000) {
        stream.putRecords(Array.from({ length: Math.min(5_000, settings.records - i) }, (_, j) => ({ partitionKey: `key-${(i + j) % KEYS}`, data: String(i + j) })), { shardId });
      }
      const trials: Trial[] = [];
      // DynamoDB Local compiles its transaction path as it goes (the first seconds run several
      // times slower): one short effects trial first, not counted.
      if (options.tiny !== true) {
        const warm = await trial(local, stream, 'effects', { ...settings, warmupMs: 0 }, -1);
        log(`effects warm-up: ${round((warm.records / warm.elapsedMs) * 1000)} records/s (not counted)`);
      }
      for (let r = 0; r < settings.rounds; r += 1) {
        const order: Variant[] = r % 2 === 0 ? ['effects', 'plain sink'] : ['plain sink', 'effects'];
        for (const variant of order) {
          const result = await trial(local, stream, variant, settings, trials.length);
          trials.push(result);
          log(`effects round ${r + 1}/${settings.rounds}: ${variant} ${round((result.records / result.elapsedMs) * 1000)} records/s, calls ${JSON.stringify(result.calls)}${result.ranDry ? ' (ran dry)' : ''}`);
        }
      }
      const rate = (variant: Variant) => median(trials.filter((t) => t.variant === variant).map((t) => (t.records / t.elapsedMs) * 1000));
      const per = (variant: Variant, command: string) => median(trials.filter((t) => t.variant === variant).map((t) => (t.calls[command] ?? 0) / Math.max(1, t.records)));
      const withEffects = rate('effects');
      const plain = rate('plain sink');
      const ratio = withEffects / plain;
      const transactionsPerRecord = per('effects', 'TransactWriteItemsCommand');
      // AWS's rule: 2 WCU per transactional item up to 1 KB (the checkpoint row and each total),
      // 1 WCU per plain item up to 1 KB (each sink item, each checkpoint UpdateItem).
      const effectsWcu = 2 * transactionsPerRecord + 2 * 1 + 1 * per('effects', 'UpdateItemCommand');
      const plainWcu = 1 + 1 * per('plain sink', 'UpdateItemCommand');
      const metrics: Metric[] = [
        { name: 'records/s, plain BatchWriteItem sink (at least once)', value: round(plain), unit: 'records/s' },
        {
          name: 'records/s, effects exactly once (TransactWriteItems with the checkpoint)', value: round(withEffects), unit: 'records/s',
          baseline: { name: 'plain sink', value: round(plain), unit: 'records/s' }, ratio: round(ratio),
          target: '>= 1,000 records/s and >= 0.5 × plain sink', met: withEffects >= 1000 && ratio >= 0.5,
        },
        { name: 'transactions per record', value: round(transactionsPerRecord), unit: '' },
        { name: 'records per transaction', value: round(1 / Math.max(transactionsPerRecord, 1e-9)), unit: '' },
        { name: 'write units per record, effects (AWS rule: 2 per transactional item)', value: round(effectsWcu), unit: 'WCU' },
        { name: 'write units per record, plain sink (1 per item, plus checkpoint commits)', value: round(plainWcu), unit: 'WCU' },
      ];
      return {
        settings: { ...settings, handlerMs: HANDLER_MS, keys: KEYS, concurrency: CONCURRENCY, shards: 1, sinkBatch: SINK_BATCH, sinkLingerMs: SINK_LINGER_MS },
        metrics,
        notes: [
          'DynamoDB Local serialises every transaction behind one lock and answers slower than DynamoDB; both pipelines write to it, so the ratio is the figure to read.',
          'Write units follow AWS\'s documented rules (Local mis-sums transactional capacity); the checkpoint row and the totals are under 1 KB.',
          `processRecords settles a record once its transaction committed, so each key has one record in flight: a transaction holds at most ${KEYS} records here.`,
        ],
        details: { trials },
        keyed: {
          'effects.recordsPerSecond': round(withEffects),
          'effects.ratioToPlainSink': round(ratio),
          'effects.transactionsPerRecord': round(transactionsPerRecord),
          'effects.writeUnitsPerRecord': round(effectsWcu),
        },
      };
    } finally {
      await local.stop();
    }
  },
};

main(effects, import.meta.url);
