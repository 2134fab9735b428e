// Figure 1 — library overhead, no network. An endless in-memory stream serves pages of 10,000
// records (100 B and 1 KiB). Baseline: a bare loop pulling the same pages through the same port
// and touching each record. Measured: a Kinsumer on in-memory lease, membership and metadata
// stores (records$ + ack() + its commits), consumed with concatMap (in-order acks) and with
// mergeMap(…, 16) (acks out of order). Also: the bare loop feeding the same operators, which
// separates what the operator costs from what the library costs.
//
//   npx tsx bench/overhead.ts [--quick]
//
// Kinsumer reads a shard at most 5 times a second (10,000 records a call): the stream has 64
// shards so that this cap (3.2 M records/s) stays above what one core can process (32 shards,
// 1.6 M/s, was nearly reached once the record path was lean), and the figure measures CPU, not the cap. Rates are medians of alternating rounds.
import { type Observable, type OperatorFunction, Subject, concatMap, firstValueFrom, mergeMap } from 'rxjs';
import type { KinsumerRecord } from '../src/types.js';
import { type Figure, type Metric, type RunOptions, cpuMsSince, log, main, median, nowMs, round, sleep } from './support/harness.js';
import { MemoryTables, memoryKinsumer } from './support/memory-deps.js';
import { SyntheticStream } from './support/synthetic-stream.js';

interface Settings {
  readonly shards: number;
  readonly sizes: readonly number[];
  readonly rounds: number;
  readonly warmupMs: number;
  readonly trialMs: number;
}

function settingsFor(options: RunOptions): Settings {
  if (options.tiny === true) return { shards: 4, sizes: [100], rounds: 1, warmupMs: 150, trialMs: 250 };
  if (options.quick) return { shards: 64, sizes: [100, 1024], rounds: Number(process.env.R ?? 1), warmupMs: 500, trialMs: Number(process.env.T ?? 1000) };
  return { shards: 64, sizes: [100, 1024], rounds: 3, warmupMs: 1500, trialMs: 3000 };
}

/** What every consumer does with a record: read its bytes and its sequence number. */
interface Touched {
  readonly data: Uint8Array;
  readonly sequenceNumber: string;
}

let checksum = 0;
let touched = 0;
function touch(record: Touched): void {
  checksum = (checksum + record.data.length + (record.data[0] ?? 0) + record.sequenceNumber.length) | 0;
  touched += 1;
}

/**
 * What `concatMap(async (record) => { handle(record); record.ack(); })` does with a synchronous
 * handler: the work now, then a resolved promise for the operator to wait on.
 */
function handledNow(work: () => void): Promise<void> {
  work();
  return Promise.resolve();
}

/** Completes records out of order: record i finishes after i mod 4 extra microtask turns. */
async function shuffled(i: number, done: () => void): Promise<void> {
  for (let turn = i % 4; turn > 0; turn -= 1) await Promise.resolve();
  done();
}

type Variant = 'bare' | 'bare + concatMap' | 'bare + mergeMap(16)' | 'kinsumer subscribe' | 'kinsumer concatMap' | 'kinsumer mergeMap(16)';
const VARIANTS: readonly Variant[] = ['bare', 'bare + concatMap', 'bare + mergeMap(16)', 'kinsumer subscribe', 'kinsumer concatMap', 'kinsumer mergeMap(16)'];

interface Trial {
  readonly records: number;
  readonly elapsedMs: number;
  readonly cpuMs: number;
  /** Kinsumer only: GetRecords calls per second per shard, commits, acks that came out of order. */
  readonly callsPerShardPerSecond?: number;
  readonly commits?: number;
  readonly outOfOrderAcks?: number;
}

/** Counts records touched, and the process's CPU, over a window. */
async function measure(settings: Settings): Promise<Pick<Trial, 'records' | 'elapsedMs' | 'cpuMs'>> {
  await sleep(settings.warmupMs);
  const startCount = touched;
  const startCpu = process.cpuUsage();
  const start = nowMs();
  await sleep(settings.trialMs);
  return { records: touched - startCount, elapsedMs: nowMs() - start, cpuMs: cpuMsSince(startCpu) };
}

/** The bare loop: every shard in turn, one page each, every record touched (optionally through an operator). */
async function bareTrial(stream: SyntheticStream, settings: Settings, operator: OperatorFunction<Touched, unknown> | undefined): Promise<Trial> {
  const iterators = await Promise.all(stream.shardIds().map(async (shardId) => (await firstValueFrom(stream.getShardIterator(shardId, { type: 'TRIM_HORIZON' }))).shardIterator));
  const input = new Subject<Touched>();
  let handled = 0;
  let caughtUp: (() => void) | undefined;
  let pushed = 0;
  const subscription = operator === undefined ? undefined : input.pipe(operator).subscribe(() => {
    handled += 1;
    if (handled === pushed) caughtUp?.();
  });
  let running = true;
  const loop = (async () => {
    while (running) {
      for (let shard = 0; shard < iterators.length && running; shard += 1) {
        const page = await firstValueFrom(stream.getRecords(iterators[shard] as string, 10_000));
        if (operator === undefined) {
          for (const record of page.records) touch(record);
        } else {
          // Through the operator, one page at a time (as a reader gated on acks would).
          pushed += page.records.length;
          const drained = new Promise<void>((resolve) => { caughtUp = resolve; });
          for (const record of page.records) input.next(record);
          if (handled < pushed) await drained;
        }
        iterators[shard] = page.nextShardIterator as string;
        // The port answers synchronously: let timers run between pages, as network I/O would.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  })();
  const window = await measure(settings);
  running = false;
  await loop;
  subscription?.unsubscribe();
  return window;
}

function operatorFor(variant: Variant): OperatorFunction<Touched, unknown> | undefined {
  let i = 0;
  switch (variant) {
    case 'bare + concatMap': return concatMap((record: Touched) => handledNow(() => touch(record)));
    case 'bare + mergeMap(16)': return mergeMap((record: Touched) => shuffled(i++, () => touch(record)), 16);
    default: return undefined;
  }
}

async function kinsumerTrial(stream: SyntheticStream, settings: Settings, variant: Variant): Promise<Trial> {
  const kinsumer = memoryKinsumer(stream, new MemoryTables(), { clientId: 'bench' });
  let commits = 0;
  kinsumer.events$.subscribe((event) => { if (event.type === 'checkpoint') commits += 1; });
  // Acks that came after a later record of the same shard was acked: proof the mergeMap variant reorders.
  const lastAcked = new Map<string, string>();
  let outOfOrder = 0;
  const ack = (record: KinsumerRecord): void => {
    touch(record);
    const before = lastAcked.get(record.shardId);
    if (before !== undefined && (before.length > record.sequenceNumber.length || (before.length === record.sequenceNumber.length && before > record.sequenceNumber))) outOfOrder += 1;
    else lastAcked.set(record.shardId, record.sequenceNumber);
    record.ack();
  };
  let i = 0;
  const consumed$: Observable<unknown> = variant === 'kinsumer subscribe'
    ? kinsumer.records$
    : variant === 'kinsumer concatMap'
      ? kinsumer.records$.pipe(concatMap((record) => handledNow(() => ack(record))))
      : kinsumer.records$.pipe(mergeMap((record) => shuffled(i++, () => ack(record)), 16));
  const subscription = consumed$.subscribe(variant === 'kinsumer subscribe' ? (record) => ack(record as KinsumerRecord) : undefined);
  const callsBefore = stream.getRecordsCalls;
  const startedMs = nowMs();
  const window = await measure(settings);
  const calls = stream.getRecordsCalls - callsBefore;
  const seconds = (nowMs() - startedMs) / 1000;
  // Stop while still consuming, so the records in flight are acked and committed.
  await kinsumer.stop();
  subscription.unsubscribe();
  return { ...window, callsPerShardPerSecond: calls / seconds / settings.shards, commits, outOfOrderAcks: outOfOrder };
}

function rate(trial: Trial): number {
  return trial.records / (trial.elapsedMs / 1000);
}

export const overhead: Figure = {
  name: 'overhead',
  title: 'Library overhead on an in-memory stream (records/s against a bare loop)',
  async run(options) {
    const settings = settingsFor(options);
    const metrics: Metric[] = [];
    const details: Record<string, unknown> = {};
    const keyed: Record<string, number> = {};
    for (const size of settings.sizes) {
      const stream = new SyntheticStream({ shardCount: settings.shards, recordBytes: size });
      const trials = new Map<Variant, Trial[]>(VARIANTS.map((v) => [v, []]));
      for (let roundIndex = 0; roundIndex < settings.rounds; roundIndex += 1) {
        for (const variant of VARIANTS) {
          const trial = variant.startsWith('bare') ? await bareTrial(stream, settings, operatorFor(variant)) : await kinsumerTrial(stream, settings, variant);
          trials.get(variant)?.push(trial);
          log(`${size} B, round ${roundIndex + 1}: ${variant}: ${Math.round(rate(trial))} records/s`);
        }
      }
      const rateOf = (variant: Variant) => median((trials.get(variant) ?? []).map(rate));
      const cpuPerRecordUs = (variant: Variant) => median((trials.get(variant) ?? []).map((t) => (1000 * t.cpuMs) / Math.max(1, t.records)));
      const bare = rateOf('bare');
      const baseline = { name: 'bare loop', value: round(bare), unit: 'records/s' };
      metrics.push({ name: `${size} B: bare loop`, value: round(bare), unit: 'records/s' });
      const compared = (variant: Variant, target: boolean): Metric => ({
        name: `${size} B: ${variant}`,
        value: round(rateOf(variant)),
        unit: 'records/s',
        baseline,
        ratio: round(rateOf(variant) / bare),
        ...(target ? { target: '>= 0.8', met: rateOf(variant) / bare >= 0.8 } : {}),
      });
      metrics.push(compared('kinsumer subscribe', false));
      metrics.push(compared('kinsumer concatMap', true));
      metrics.push(compared('kinsumer mergeMap(16)', true));
      for (const [variant, matched] of [['kinsumer concatMap', 'bare + concatMap'], ['kinsumer mergeMap(16)', 'bare + mergeMap(16)']] as const) {
        metrics.push({
          name: `${size} B: ${variant} vs the same operator on the bare loop`,
          value: round(rateOf(variant)),
          unit: 'records/s',
          baseline: { name: matched, value: round(rateOf(matched)), unit: 'records/s' },
          ratio: round(rateOf(variant) / rateOf(matched)),
        });
      }
      const library = cpuPerRecordUs('kinsumer subscribe') - cpuPerRecordUs('bare');
      metrics.push({
        name: `${size} B: CPU per record, kinsumer subscribe + ack`,
        value: round(cpuPerRecordUs('kinsumer subscribe')),
        unit: 'µs',
        baseline: { name: 'bare loop', value: round(cpuPerRecordUs('bare')), unit: 'µs' },
        ratio: round(cpuPerRecordUs('kinsumer subscribe') / cpuPerRecordUs('bare')),
        note: 'process CPU (all threads, GC included) per record',
      });
      metrics.push({
        name: `${size} B: library time per record (CPU of subscribe + ack minus the bare loop's)`,
        value: round(library),
        unit: 'µs',
        target: '<= 0.5 µs',
        met: library <= 0.5,
      });
      if (size === 100) keyed['overhead.libraryMicrosPerRecord'] = round(library);
      metrics.push({
        name: `${size} B: CPU per record, kinsumer concatMap`,
        value: round(cpuPerRecordUs('kinsumer concatMap')),
        unit: 'µs',
        baseline: { name: 'bare loop', value: round(cpuPerRecordUs('bare')), unit: 'µs' },
        ratio: round(cpuPerRecordUs('kinsumer concatMap') / cpuPerRecordUs('bare')),
        note: 'process CPU (all threads, GC included) per record',
      });
      details[`${size}B`] = Object.fromEntries([...trials].map(([variant, list]) => [variant, list.map((t) => ({
        recordsPerSecond: Math.round(rate(t)),
        cpuMicrosPerRecord: round((1000 * t.cpuMs) / Math.max(1, t.records)),
        ...(t.callsPerShardPerSecond === undefined ? {} : { getRecordsPerShardPerSecond: round(t.callsPerShardPerSecond) }),
        ...(t.commits === undefined ? {} : { commits: t.commits }),
        ...(t.outOfOrderAcks === undefined ? {} : { outOfOrderAcks: t.outOfOrderAcks }),
      }))]));
    }
    return {
      settings: { ...settings, recordsPerPage: 10_000, kinsumerOptions: 'defaults (throttleDelayMs 250, commitFrequencyMs 1000, maxInFlightRecords 10000)' },
      metrics,
      keyed,
      notes: [
        'Library time is the CPU per record of records$ + ack() (subscribe variant) minus the bare loop\'s, both over the same in-memory port (summary key overhead.libraryMicrosPerRecord: the 100 B figure).',
        'Single process, one JavaScript thread; GC runs on helper threads too (process CPU per record counts them).',
        'Every page is made fresh for each call (new record objects, a copy of the payload, a Date per record), the same for the baseline and the library.',
        `Kinsumer's cap here is ${settings.shards} shards x 5 calls/s x 10,000 records; details give the calls per shard per second actually made (below 5: CPU-bound, not cap-bound).`,
      ],
      details,
    };
  },
};

main(overhead, import.meta.url);
