// Figure — the processing operators (issue 15): what per-key parallelism buys on one shard, and
// what the acked ranges (§7.3) save at a hand-off.
//
// 1. Throughput: one shard of 1,000 partition keys, a handler that waits 10 ms (a real timer: a
//    database call). records/s with concatMap, then processRecords 'shard', and 'partitionKey' at
//    concurrency 10 (Lambda's ParallelizationFactor at most) and 100, in alternating rounds;
//    ratios against concatMap in the same run.
// 2. Hand-off: processRecords 'partitionKey' × 100, one record in 1,000 hangs (a call stuck on a
//    downstream timeout) so completion is out of order and the drain cannot finish; a graceful
//    stop() mid-run, then a new owner reads on. Counted: records the first owner acked that the
//    new owner is given again — with the acked ranges, and with them switched off (a seam around
//    the lease store that writes no ranges).
//
// The stream is the in-memory one (src/testing/memory-stream.ts) behind the real client, not
// kinesalite: a 10 ms handler makes the operators the bottleneck, and on a shared 2-core machine
// a Kinesis server in the same run would only add noise; the read path has its own figures.
//
//   npx tsx bench/operators.ts [--quick | --tiny]
import { type OperatorFunction, concatMap, firstValueFrom, fromEvent, take, tap } from 'rxjs';
import { type KinsumerRecord, processRecords } from '../src/index.js';
import type { LeaseStore } from '../src/ports/lease-store.js';
import { MemoryStream } from '../src/testing/index.js';
import { type Figure, type Metric, type RunOptions, log, main, median, nowMs, round, sleep } from './support/harness.js';
import { MemoryTables, memoryKinsumer } from './support/memory-deps.js';

const HANDLER_MS = 10;
const KEYS = 1000;
/** Concurrency of the hand-off part, and the throughput part's largest. */
const WIDE = 100;

interface Settings {
  /** Records in the throughput stream: more than the fastest variant reads in a trial. */
  readonly records: number;
  readonly rounds: number;
  readonly warmupMs: number;
  readonly trialMs: number;
  /** Records in the hand-off stream, and how many the first owner acks before it is stopped. */
  readonly handOffRecords: number;
  readonly ackedBeforeStop: number;
  /** The first owner's shutdownTimeoutMs: its drain gives up after three quarters of it. */
  readonly shutdownTimeoutMs: number;
}

function settingsFor(options: RunOptions): Settings {
  if (options.tiny === true) return { records: 4_000, rounds: 1, warmupMs: 150, trialMs: 300, handOffRecords: 3_000, ackedBeforeStop: 500, shutdownTimeoutMs: 800 };
  if (options.quick) return { records: 40_000, rounds: 1, warmupMs: 700, trialMs: 1_500, handOffRecords: 20_000, ackedBeforeStop: 5_000, shutdownTimeoutMs: 2_000 };
  return { records: 80_000, rounds: 3, warmupMs: 1_000, trialMs: 4_000, handOffRecords: 20_000, ackedBeforeStop: 5_000, shutdownTimeoutMs: 4_000 };
}

const wait = (ms: number) => new Promise<void>((resolve) => { setTimeout(resolve, ms); });

/** One shard of `count` records, keys key-0 … key-999 in turn, data = the record's index; and its last sequence number. */
function filledStream(count: number): { readonly stream: MemoryStream; readonly last: string } {
  const stream = new MemoryStream({ shardCount: 1 });
  const [shardId] = stream.shardIds() as [string];
  let last = '';
  for (let i = 0; i < count; i += 5_000) {
    const put = stream.putRecords(Array.from({ length: Math.min(5_000, count - i) }, (_, j) => ({ partitionKey: `key-${(i + j) % KEYS}`, data: String(i + j) })), { shardId });
    last = put.at(-1)?.sequenceNumber ?? last;
  }
  return { stream, last };
}

type Variant = 'concatMap' | "processRecords 'shard'" | "processRecords 'partitionKey' × 10" | "processRecords 'partitionKey' × 100";
const VARIANTS: readonly Variant[] = ['concatMap', "processRecords 'shard'", "processRecords 'partitionKey' × 10", "processRecords 'partitionKey' × 100"];

/** The consumer's pipeline: every record waits HANDLER_MS and is acked; `done` counts it. */
function pipeline(variant: Variant, done: () => void): OperatorFunction<KinsumerRecord, unknown> {
  const handle = () => wait(HANDLER_MS);
  switch (variant) {
    case 'concatMap': return concatMap(async (record) => {
      await handle();
      record.ack();
      done();
    });
    case "processRecords 'shard'": return (source) => source.pipe(processRecords(handle), tap(done));
    case "processRecords 'partitionKey' × 10": return (source) => source.pipe(processRecords(handle, { ordering: 'partitionKey', concurrency: 10 }), tap(done));
    case "processRecords 'partitionKey' × 100": return (source) => source.pipe(processRecords(handle, { ordering: 'partitionKey', concurrency: WIDE }), tap(done));
  }
}

interface Trial {
  readonly records: number;
  readonly elapsedMs: number;
  /** The stream ran dry during the trial: the rate is a lower bound. */
  readonly ranDry: boolean;
}

async function trial(stream: MemoryStream, variant: Variant, settings: Settings, round: number): Promise<Trial> {
  // Fresh tables: every trial reads the stream from its start.
  const consumer = memoryKinsumer(stream, new MemoryTables(), { clientId: `bench-${round}-${variant}`, shutdownTimeoutMs: 2_000 });
  let done = 0;
  let failed: unknown;
  const subscription = consumer.records$.pipe(pipeline(variant, () => { done += 1; })).subscribe({ error: (error: unknown) => { failed = error; } });
  // The warm-up starts once records flow (joining the group and capturing take a moment, longer on a busy machine).
  await until(() => done > 0 || failed !== undefined, `${variant}: the first record`, 60_000);
  await sleep(settings.warmupMs);
  const startCount = done;
  const start = nowMs();
  await sleep(settings.trialMs);
  const records = done - startCount;
  const elapsedMs = nowMs() - start;
  await consumer.stop().catch(() => undefined);
  subscription.unsubscribe();
  if (failed !== undefined) throw failed instanceof Error ? failed : new Error(`${variant} failed`, { cause: failed });
  return { records, elapsedMs, ranDry: done >= settings.records };
}

/** The seam of part 2: a lease store whose commits and release carry no acked ranges. */
function withoutAckedRanges(store: LeaseStore): LeaseStore {
  return {
    read: (shardId) => store.read(shardId),
    readMany: (shardIds) => store.readMany(shardIds),
    capture: (shardId) => store.capture(shardId),
    commit: (lease, write) => store.commit(lease, { checkpoint: write.checkpoint, finished: write.finished }),
    renew: (lease) => store.renew(lease),
    release: (lease, write) => store.release(lease, { checkpoint: write.checkpoint, finished: write.finished }),
    resetCheckpoint: (shardId, checkpoint, options) => store.resetCheckpoint(shardId, checkpoint, options),
  };
}

interface HandOff {
  /** Records the first owner acked. */
  readonly ackedByFirst: number;
  /** Of those, beyond the checkpoint it released (acked behind a record that was not). */
  readonly ackedBeyondCheckpoint: number;
  /** Acked ranges in the released row. */
  readonly rangesReleased: number;
  /** Records the new owner was given that the first owner had acked. */
  readonly duplicates: number;
  /** Records the new owner was given in all. */
  readonly deliveredToNext: number;
}

async function until(condition: () => boolean, what: string, limitMs: number): Promise<void> {
  const deadline = nowMs() + limitMs;
  while (!condition()) {
    if (nowMs() > deadline) throw new Error(`operators: still waiting for ${what} after ${limitMs} ms`);
    await sleep(20);
  }
}

async function handOff(settings: Settings, ranges: boolean): Promise<HandOff> {
  const { stream, last } = filledStream(settings.handOffRecords);
  const [shardId] = stream.shardIds() as [string];
  const tables = new MemoryTables();
  const wrap = ranges ? (store: LeaseStore) => store : withoutAckedRanges;
  const text = (record: KinsumerRecord) => new TextDecoder().decode(record.data);
  // A call stuck on a downstream timeout: it gives up only when the lease ends (ctx.signal).
  const hangs = (record: KinsumerRecord) => Number(text(record)) % 1000 === 500;

  const first = memoryKinsumer(stream, tables, { clientId: 'first', shutdownTimeoutMs: settings.shutdownTimeoutMs }, wrap);
  const acked = new Set<string>();
  const firstRun = first.records$.pipe(
    processRecords(async (record, { signal }) => {
      if (hangs(record)) await firstValueFrom(fromEvent(signal, 'abort').pipe(take(1)));
      else await wait(HANDLER_MS);
    }, { ordering: 'partitionKey', concurrency: WIDE }),
  ).subscribe((processed) => acked.add(processed.record.sequenceNumber));
  await until(() => acked.size >= settings.ackedBeforeStop, `${settings.ackedBeforeStop} records acked`, 60_000);
  await first.stop();
  firstRun.unsubscribe();
  const released = tables.checkpoints.row(shardId);
  const checkpoint = released?.checkpoint?.type === 'position' ? BigInt(released.checkpoint.position.sequenceNumber) : -1n;

  const next = memoryKinsumer(stream, tables, { clientId: 'next' }, wrap);
  let duplicates = 0;
  let deliveredToNext = 0;
  const nextRun = next.records$.pipe(
    tap((record) => {
      deliveredToNext += 1;
      if (acked.has(record.sequenceNumber)) duplicates += 1;
    }),
    processRecords(() => wait(HANDLER_MS), { ordering: 'partitionKey', concurrency: WIDE }),
  ).subscribe();
  await until(() => {
    const row = tables.checkpoints.row(shardId);
    return row?.ownerId === 'next' && row.checkpoint?.type === 'position' && row.checkpoint.position.sequenceNumber === last;
  }, 'the next owner at the end of the shard', 120_000);
  await next.stop();
  nextRun.unsubscribe();
  return {
    ackedByFirst: acked.size,
    ackedBeyondCheckpoint: [...acked].filter((sequenceNumber) => BigInt(sequenceNumber) > checkpoint).length,
    rangesReleased: released?.acked?.length ?? 0,
    duplicates,
    deliveredToNext,
  };
}

export const operators: Figure = {
  name: 'operators',
  title: 'Processing operators: one shard, 1,000 keys, a 10 ms handler; duplicates after a graceful hand-off with and without acked ranges',
  async run(options) {
    const settings = settingsFor(options);
    const { stream } = filledStream(settings.records);
    const rates = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const trials: Array<{ variant: Variant; round: number } & Trial> = [];
    for (let round = 0; round < settings.rounds; round += 1) {
      // Alternating order, so no variant always runs first (or last) in a round.
      const order = round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
      for (const variant of order) {
        const result = await trial(stream, variant, settings, round);
        const rate = (result.records / result.elapsedMs) * 1000;
        rates.get(variant)?.push(rate);
        trials.push({ variant, round, ...result });
        log(`operators round ${round + 1}/${settings.rounds}: ${variant} ${round3(rate)} records/s${result.ranDry ? ' (ran dry)' : ''}`);
      }
    }
    const rate = (variant: Variant) => median(rates.get(variant) ?? []);
    const base = rate('concatMap');
    const metrics: Metric[] = [{ name: 'records/s, concatMap (one at a time)', value: round(base), unit: 'records/s' }];
    for (const variant of VARIANTS.slice(1)) {
      const value = rate(variant);
      const ratio = value / base;
      metrics.push({
        name: `records/s, ${variant}`, value: round(value), unit: 'records/s',
        baseline: { name: 'concatMap', value: round(base), unit: 'records/s' }, ratio: round(ratio),
        ...(variant === "processRecords 'partitionKey' × 100" ? { target: '>= 50 × concatMap', met: ratio >= 50 } : {}),
      });
    }

    const without = await handOff(settings, false);
    log(`operators hand-off without ranges: ${JSON.stringify(without)}`);
    const withRanges = await handOff(settings, true);
    log(`operators hand-off with ranges: ${JSON.stringify(withRanges)}`);
    metrics.push(
      { name: 'hand-off: records acked by the first owner beyond its released checkpoint', value: withRanges.ackedBeyondCheckpoint, unit: 'records' },
      { name: 'hand-off: acked records delivered again, acked ranges off', value: without.duplicates, unit: 'records' },
      { name: 'hand-off: acked records delivered again, acked ranges on', value: withRanges.duplicates, unit: 'records', target: '0', met: withRanges.duplicates === 0 },
      { name: 'hand-off: acked ranges in the released row', value: withRanges.rangesReleased, unit: '' },
    );
    return {
      settings: { ...settings, handlerMs: HANDLER_MS, keys: KEYS, shards: 1 },
      metrics,
      notes: [
        `Real timers: every handler call waits ${HANDLER_MS} ms on setTimeout (measured ~${round3(1000 / Math.max(1, base))} ms a record with concatMap).`,
        'In-memory stream and tables behind the real client (bench/support/memory-deps.ts); rates are medians of alternating rounds, each a fresh consumer reading from TRIM_HORIZON.',
        `Hand-off: processRecords 'partitionKey' × ${WIDE}, one record in 1,000 hangs until its lease ends; stop() after ${settings.ackedBeforeStop} acks, drain bound ${0.75 * settings.shutdownTimeoutMs} ms; "ranges off" is a seam around the lease store that writes none.`,
      ],
      details: { trials, handOff: { without, with: withRanges } },
    };
  },
};

function round3(value: number): number {
  return round(value, 3);
}

main(operators, import.meta.url);
