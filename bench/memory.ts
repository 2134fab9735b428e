// Figure 3 — bounded memory. Runs bench/reader-memory.ts (a producer 100x faster than the
// consumer on kinesalite, with a stall longer than the iterator age bound) in a process of its
// own, so that the RSS it samples is the consumer's alone, and reads its JSON summary. Then the
// same for records of 1 MiB and 10 MiB under maxInFlightBytes (design §9.1): an endless backlog
// served over HTTP (bench/support/synthetic-kinesis.ts), read at the shard's 2 MiB/s, consumed at
// half that.
//
//   npx tsx bench/memory.ts [--quick]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Figure, type RunOptions, main } from './support/harness.js';

const SCRIPT = fileURLToPath(new URL('./reader-memory.ts', import.meta.url));

interface Summary {
  readonly settings: {
    readonly shards: number; readonly maxInFlight: number; readonly recordBytes: number; readonly producePerSecond: number; readonly consumePerSecond: number;
    readonly maxInFlightBytes: number;
  };
  readonly producedRecords: number;
  readonly consumedRecords: number;
  readonly rssAtWarmupMB: number;
  readonly rssMaxGrowthAfterWarmupMB: number;
  readonly heapAtWarmupMB: number;
  readonly heapMaxGrowthAfterWarmupMB: number;
  readonly rssMaxMB: number;
  readonly iteratorRebuilds: number;
  readonly retries: number;
  readonly shardsDied: readonly string[];
}

function argsFor(options: RunOptions): string[] {
  // Quick runs shrink every duration; the stall still outlasts the iterator age bound.
  if (options.tiny === true) return ['--duration-ms', '3000', '--warmup-ms', '1000', '--stall-at-ms', '1200', '--stall-ms', '900', '--iterator-max-age-ms', '500'];
  if (options.quick) return ['--duration-ms', '12000', '--warmup-ms', '5000', '--stall-at-ms', '6000', '--stall-ms', '3000', '--iterator-max-age-ms', '2000'];
  return [];
}

/** The large-record runs: records of `recordBytes` under a 64 MiB budget, the consumer at 1 MiB/s per shard (the reader may read 2). */
const LARGE = [{ key: '1MiB', recordBytes: 1024 * 1024 }, { key: '10MiB', recordBytes: 10 * 1024 * 1024 }] as const;
const LARGE_BUDGET = 64 * 1024 * 1024;

function largeArgs(options: RunOptions, recordBytes: number): string[] {
  const timing = options.tiny === true ? ['--duration-ms', '3000', '--warmup-ms', '1000'] : options.quick ? ['--duration-ms', '20000', '--warmup-ms', '10000'] : ['--duration-ms', '60000', '--warmup-ms', '30000'];
  const shards = 2;
  const perSecond = (shards * 1024 * 1024) / recordBytes;
  return [
    '--synthetic', '1', '--shards', String(shards), '--record-bytes', String(recordBytes), '--max-in-flight-bytes', String(LARGE_BUDGET),
    '--consume-per-second', String(perSecond), '--stall-at-ms', '999999999', '--stall-ms', '0', ...timing,
  ];
}

function runScript(args: readonly string[]): Promise<Summary> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.once('exit', (code) => {
      const last = output.trim().split('\n').pop() ?? '';
      try {
        if (code !== 0) throw new Error(`exit code ${code}`);
        resolve(JSON.parse(last) as Summary);
      } catch (error) {
        reject(new Error(`reader-memory.ts failed (${String(error)}): ${output.slice(-500)}`));
      }
    });
  });
}

export const memory: Figure = {
  name: 'memory',
  title: 'Bounded memory: a consumer 100x slower than the producer, with a stall past the iterator age',
  async run(options) {
    const args = argsFor(options);
    const summary = await runScript(args);
    const { shards, maxInFlight, recordBytes } = summary.settings;
    const boundMB = (shards * maxInFlight * recordBytes) / 2 ** 20;
    const large = [];
    for (const { key, recordBytes: bytes } of LARGE) large.push({ key, summary: await runScript(largeArgs(options, bytes)) });
    const budgetMB = LARGE_BUDGET / 2 ** 20;
    return {
      settings: { ...summary.settings, args, largeRecords: large.map(({ key, summary: run }) => ({ key, ...run.settings })) },
      keyed: {
        'memory.rssGrowthMB.1KiB': summary.rssMaxGrowthAfterWarmupMB,
        ...Object.fromEntries(large.flatMap(({ key, summary: run }) => [
          [`memory.rssGrowthMB.${key}`, run.rssMaxGrowthAfterWarmupMB], [`memory.heapGrowthMB.${key}`, run.heapMaxGrowthAfterWarmupMB],
        ])),
      },
      metrics: [
        {
          name: 'RSS, max growth after warm-up', value: summary.rssMaxGrowthAfterWarmupMB, unit: 'MB',
          target: `<= ${boundMB.toFixed(1)} MB (shards x maxInFlightRecords x record size)`, met: summary.rssMaxGrowthAfterWarmupMB <= boundMB,
        },
        { name: 'heap, max growth after warm-up', value: summary.heapMaxGrowthAfterWarmupMB, unit: 'MB' },
        { name: 'RSS at warm-up', value: summary.rssAtWarmupMB, unit: 'MB' },
        { name: 'produced / consumed records', value: summary.producedRecords / Math.max(1, summary.consumedRecords), unit: 'x' },
        { name: 'iterators rebuilt (stall past the age bound)', value: summary.iteratorRebuilds, unit: '' },
        { name: 'shards that died', value: summary.shardsDied.length, unit: '', target: '0', met: summary.shardsDied.length === 0 },
        ...large.flatMap(({ key, summary: run }) => {
          const recordMB = run.settings.recordBytes / 2 ** 20;
          return [
            {
              name: `${key} records, maxInFlightBytes ${budgetMB} MiB: RSS, max growth after warm-up`, value: run.rssMaxGrowthAfterWarmupMB, unit: 'MB',
              target: `<= ${budgetMB} MB (flat: the budget filled during warm-up)`, met: run.rssMaxGrowthAfterWarmupMB <= budgetMB,
            },
            {
              name: `${key} records: heap, max growth after warm-up`, value: run.heapMaxGrowthAfterWarmupMB, unit: 'MB',
              target: `<= ${2 * recordMB} MB (two records)`, met: run.heapMaxGrowthAfterWarmupMB <= 2 * recordMB,
            },
            { name: `${key} records: RSS at warm-up`, value: run.rssAtWarmupMB, unit: 'MB' },
            { name: `${key} records: consumed`, value: run.consumedRecords, unit: 'records' },
            { name: `${key} records: shards that died`, value: run.shardsDied.length, unit: '', target: '0', met: run.shardsDied.length === 0 },
          ];
        }),
      ],
      notes: [
        'Measured on the shard reader (readShard) over kinesalite, in a process of its own; kinesalite runs in a child process on a LevelDB folder.',
        'The consumer stalls completely for longer than the iterator age bound mid-run: its readers must rebuild iterators, not die.',
        'Large records: 2 shards with an endless backlog served over HTTP by bench/support/synthetic-kinesis.ts (kinesalite refuses records over 1 MiB; '
          + 'kinesis-local takes about 20 s to put one of 10 MiB), read at 2 MiB/s per shard (pacing), consumed at 1 MiB/s per shard, each record decoded by the consumer. '
          + 'Without maxInFlightBytes the count bound lets 10,000 records of 10 MiB wait: the heap grows at the difference (about 2.7 MB/s measured), without end.',
      ],
      details: { kinesalite: summary, large },
    };
  },
};

main(memory, import.meta.url);
