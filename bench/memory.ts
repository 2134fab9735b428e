// Figure 3 — bounded memory. Runs bench/reader-memory.ts (a producer 100x faster than the
// consumer on kinesalite, with a stall longer than the iterator age bound) in a process of its
// own, so that the RSS it samples is the consumer's alone, and reads its JSON summary.
//
//   npx tsx bench/memory.ts [--quick]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Figure, type RunOptions, main } from './support/harness.js';

const SCRIPT = fileURLToPath(new URL('./reader-memory.ts', import.meta.url));

interface Summary {
  readonly settings: { readonly shards: number; readonly maxInFlight: number; readonly recordBytes: number; readonly producePerSecond: number; readonly consumePerSecond: number };
  readonly producedRecords: number;
  readonly consumedRecords: number;
  readonly rssAtWarmupMB: number;
  readonly rssMaxGrowthAfterWarmupMB: number;
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
    return {
      settings: { ...summary.settings, args },
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
      ],
      notes: [
        'Measured on the shard reader (readShard) over kinesalite, in a process of its own; kinesalite runs in a child process on a LevelDB folder.',
        'The consumer stalls completely for longer than the iterator age bound mid-run: its readers must rebuild iterators, not die.',
      ],
      details: summary,
    };
  },
};

main(memory, import.meta.url);
