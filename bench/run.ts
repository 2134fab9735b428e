// `npm run bench`: every figure, each in a child process of its own (so one figure's heap, timers
// and servers cannot colour the next), one after the other; then the table on stdout and the
// results in bench/results.json.
//
//   npx tsx bench/run.ts [--quick | --tiny] [--only overhead,kinesis] [--results <file.json>]
//
// --quick shortens every figure (a check, not a measurement: results.json is left alone unless
// --results names a file); --tiny is smaller still and runs the figures side by side (the smoke
// test). A figure that fails is reported and the others still run; the exit code is then 1.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type FigureResult, RESULTS_PATH, machine, saveResults, table } from './support/harness.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const RUNNER = join(HERE, 'support', 'run-figure.ts');

/** The figures, in the order they run. Optional ones run only where their file exists. */
const FIGURES: ReadonlyArray<{ readonly name: string; readonly file: string; readonly optional?: boolean }> = [
  { name: 'overhead', file: 'overhead.ts' },
  { name: 'kinesis', file: 'kinesis.ts' },
  { name: 'cpu', file: 'cpu.ts' },
  { name: 'tls', file: 'tls.ts' },
  { name: 'fixed-cost', file: 'fixed-cost.ts' },
  { name: 'memory', file: 'memory.ts' },
  { name: 'failover', file: 'failover.ts' },
  { name: 'dynamo-cost', file: 'dynamo-cost.ts' },
  { name: 'latency', file: 'latency.ts' },
  { name: 'scale', file: 'scale.ts' },
  { name: 'operators', file: 'operators.ts' },
  { name: 'effects', file: 'effects.ts' },
  // Added by the fan-out work; included when present.
  { name: 'fan-out-latency', file: 'fan-out-latency.ts', optional: true },
];

function argValue(argv: readonly string[], flag: string): string | undefined {
  const at = argv.indexOf(flag);
  return at >= 0 ? argv[at + 1] : undefined;
}

function runChild(file: string, out: string, mode: string[]): Promise<FigureResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', RUNNER, file, '--out', out, ...mode], { stdio: ['ignore', 'inherit', 'inherit'] });
    child.once('exit', (code, signal) => {
      if (code !== 0) {
        reject(new Error(`${file} failed (${signal ?? `exit code ${code}`})`));
        return;
      }
      try {
        resolve(JSON.parse(readFileSync(out, 'utf8')) as FigureResult);
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  });
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const tiny = argv.includes('--tiny');
  const quick = tiny || argv.includes('--quick');
  const only = argValue(argv, '--only')?.split(',');
  const resultsPath = argValue(argv, '--results') ?? (quick ? undefined : RESULTS_PATH);
  const mode = tiny ? ['--tiny'] : quick ? ['--quick'] : [];
  const selected = FIGURES.filter((f) => (only === undefined || only.includes(f.name)) && (!f.optional || existsSync(join(HERE, f.file))));
  const scratch = mkdtempSync(join(tmpdir(), 'kinsumer-bench-'));
  const m = machine();
  process.stderr.write(`kinsumer bench (${tiny ? 'tiny' : quick ? 'quick' : 'full'}): ${m.cpu}, ${m.cores} cores, ${m.memoryGB} GiB, Node ${m.node}\n`);
  // By position in `selected`: a figure module may name its figure differently from its file.
  const results: Array<FigureResult | undefined> = selected.map(() => undefined);
  const failures: string[] = [];
  const one = async (figure: (typeof selected)[number], index: number): Promise<void> => {
    const started = Date.now();
    process.stderr.write(`\n== ${figure.name}\n`);
    try {
      results[index] = await runChild(join(HERE, figure.file), join(scratch, `${figure.name}.json`), mode);
      process.stderr.write(`== ${figure.name} done in ${Math.round((Date.now() - started) / 1000)} s\n`);
    } catch (error) {
      failures.push(`${figure.name}: ${error instanceof Error ? error.message : String(error)}`);
      process.stderr.write(`== ${figure.name} FAILED: ${String(error)}\n`);
    }
  };
  try {
    // Measurements run one at a time; the tiny smoke run only checks that everything runs.
    if (tiny) await Promise.all(selected.map(one));
    else for (const [index, figure] of selected.entries()) await one(figure, index);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const ordered = results.filter((r): r is FigureResult => r !== undefined);
  console.log(`\n${table(ordered)}\n`);
  if (resultsPath !== undefined) {
    saveResults(ordered, resultsPath);
    process.stderr.write(`results written to ${resultsPath}\n`);
  }
  if (failures.length > 0) {
    process.stderr.write(`\nfailed:\n  ${failures.join('\n  ')}\n`);
    process.exitCode = 1;
  }
}

main().then(() => process.exit(process.exitCode ?? 0), (error: unknown) => {
  console.error(error);
  process.exit(1);
});
