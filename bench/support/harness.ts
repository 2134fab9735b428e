// The shared part of the benchmarks: arguments, clocks, percentiles, CPU and memory sampling, the
// result format, the table, and bench/results.json. A figure is a module exporting a `Figure`;
// `npm run bench` runs each in a child process of its own (bench/run.ts), and each also runs alone:
//
//   npx tsx bench/<figure>.ts [--quick | --tiny] [--out <file.json>]
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem, type } from 'node:os';
import { fileURLToPath } from 'node:url';

/** How a figure is asked to run. */
export interface RunOptions {
  /** Shorter durations and fewer runs: a smoke check, not a measurement. */
  readonly quick: boolean;
  /** Even smaller, for the test suite's smoke test (a few hundred milliseconds). */
  readonly tiny?: boolean;
}

/** One line of the table: a measured value, and where there is one, its baseline, ratio and target. */
export interface Metric {
  readonly name: string;
  readonly value: number | null;
  readonly unit: string;
  /** The baseline measured in the same run. */
  readonly baseline?: { readonly name: string; readonly value: number; readonly unit: string };
  /** `value / baseline.value`, or `value` over what `ratioOf` names (`leaseTtlMs`, ...). */
  readonly ratio?: number;
  readonly ratioOf?: string;
  /** The design's target, in words (`>= 0.8`, `<= leaseTtlMs + throttleDelayMs`). */
  readonly target?: string;
  /** Whether the target was met; absent when the metric has no target. */
  readonly met?: boolean;
  readonly note?: string;
}

/** What a figure reports. */
export interface FigureResult {
  /** The figure's command-line name (`overhead`, `kinesis`, ...). */
  readonly figure: string;
  readonly title: string;
  /** ISO date of the run. */
  readonly date: string;
  readonly quick: boolean;
  readonly tiny?: boolean;
  readonly durationMs: number;
  /** The knobs the figure ran with. */
  readonly settings: Record<string, unknown>;
  readonly metrics: readonly Metric[];
  /** Caveats that belong next to the numbers (what the local servers cannot say, ...). */
  readonly notes: readonly string[];
  /** Raw figures behind the metrics (per-run values, counts by call type, samples). */
  readonly details?: unknown;
  /**
   * The headline figures under stable dotted keys (`cpu.microsPerRecord.kinsumer.100B`), gathered
   * from every figure into the `summary` of bench/results.json.
   */
  readonly keyed?: Readonly<Record<string, number>>;
}

/** A benchmark figure. */
export interface Figure {
  readonly name: string;
  readonly title: string;
  run(options: RunOptions): Promise<Omit<FigureResult, 'figure' | 'title' | 'date' | 'quick' | 'durationMs'>>;
}

/** The machine, as results.json and BENCHMARKS.md describe it. */
export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGB: number;
  readonly os: string;
  readonly node: string;
}

export function machine(): Machine {
  const list = cpus();
  return {
    cpu: list[0]?.model ?? 'unknown',
    cores: list.length,
    memoryGB: Math.round(totalmem() / 2 ** 30),
    os: `${type()} ${release()}`,
    node: process.version,
  };
}

export const RESULTS_PATH = fileURLToPath(new URL('../results.json', import.meta.url));

/** The headline figures, nested by their dotted keys: `summary.cpu.microsPerRecord.kinsumer['100B']`. */
export interface Summary {
  readonly [key: string]: number | Summary;
}

/** The content of bench/results.json. */
export interface ResultsFile {
  readonly machine: Machine;
  readonly updated: string;
  /** Every figure's `keyed` values, nested (see {@link summarize}). */
  readonly summary?: Summary;
  readonly figures: Record<string, FigureResult>;
}

/** The keys every full run fills (bench/results.json's `summary`); the smoke test checks them. */
export const SUMMARY_KEYS: readonly string[] = [
  'handoff.graceful.p95Ms',
  'failover.crash.p95Ms',
  'failover.crash.boundMs',
  'overhead.libraryMicrosPerRecord',
  ...['kinsumer', 'bareSdk', 'rawHttp', 'lifion'].flatMap((consumer) => ['100B', '1KiB'].map((size) => `cpu.microsPerRecord.${consumer}.${size}`)),
  // kinsumer's CPU per record over the raw node:http loop's, the practical limit (issue 26).
  'cpu.ratioToRaw.100B',
  'cpu.ratioToRaw.1KiB',
  'capacity.shardsPerCoreAtLimit.100B',
  'capacity.shardsPerCoreAtLimit.1KiB',
  'effects.recordsPerSecond',
  'effects.ratioToPlainSink',
  'effects.transactionsPerRecord',
  // The production path: TLS endpoints, the SDK's default clients (issue 31).
  ...['kinsumer', 'bareSdk', 'bareSdkKeepAlive', 'rawHttp'].flatMap((consumer) => ['100B', '1KiB'].map((size) => `tls.microsPerRecord.${consumer}.${size}`)),
  ...['100B', '1KiB'].flatMap((size) => [`tls.ratioToRaw.${size}`, `tls.ratioToBareSdk.${size}`]),
  ...['kinsumer', 'bareSdk', 'bareSdkKeepAlive', 'rawHttp'].map((consumer) => `tls.idle.microsPerPoll.${consumer}`),
  'tls.idle.kinsumerCpuMsPerSecond',
  // The fixed cost: per idle shard, per client, and at a moderate rate (issue 31).
  ...['kinsumer', 'bareSdk', 'rawHttp'].map((consumer) => `fixedCost.perIdleShard.cpuMsPerSecond.${consumer}`),
  'fixedCost.perClient.cpuMsPerSecond.kinsumer',
  'fixedCost.perIdleShard.kinesisCallsPerMinute.kinsumer',
  'fixedCost.perIdleShard.dynamoCallsPerMinute.kinsumer',
  'fixedCost.perClient.dynamoCallsPerMinute.kinsumer',
  'fixedCost.perIdleShard.dynamoDollarsPerMonth.kinsumer',
  'fixedCost.perClient.dynamoDollarsPerMonth.kinsumer',
  ...['kinsumer', 'bareSdk', 'rawHttp'].map((consumer) => `moderateRate.cpuMsPerSecond.${consumer}`),
  'moderateRate.ratioToRaw',
  'moderateRate.ratioToBareSdk',
  'moderateRate.kinesisCallsPerMinute.kinsumer',
  'moderateRate.dynamoCallsPerMinute.kinsumer',
];

/** The figures' keyed values nested by their dotted keys; a later figure's value wins. */
export function summarize(figures: readonly FigureResult[]): Summary {
  const root: Record<string, unknown> = {};
  for (const figure of figures) {
    for (const [key, value] of Object.entries(figure.keyed ?? {})) {
      const path = key.split('.');
      let node = root;
      for (const part of path.slice(0, -1)) {
        const next = node[part];
        node = typeof next === 'object' && next !== null ? (next as Record<string, unknown>) : (node[part] = {});
      }
      node[path.at(-1) as string] = value;
    }
  }
  return root as Summary;
}

/** The value at a dotted key of a summary; `undefined` when absent. */
export function summaryValue(summary: Summary | undefined, key: string): number | undefined {
  let node: number | Summary | undefined = summary;
  for (const part of key.split('.')) node = typeof node === 'object' ? node[part] : undefined;
  return typeof node === 'number' ? node : undefined;
}

// ------------------------------------------------------------------ clocks and statistics

/** Milliseconds, monotonic, sub-millisecond. */
export function nowMs(): number {
  return performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The p-th percentile (0..100) by the nearest-rank method; `NaN` for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] as number;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Rounds to `digits` significant digits (tables and JSON stay readable). */
export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value) || value === 0) return value;
  const scale = 10 ** (digits - Math.ceil(Math.log10(Math.abs(value))));
  return Math.round(value * scale) / scale;
}

/** Polls `check` every `intervalMs` until it holds; throws after `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs: number, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

// ------------------------------------------------------------------ CPU and memory

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); `undefined` elsewhere. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return ticks / 100;
  } catch {
    return undefined;
  }
}

/** This process's CPU time (user + system, all threads) in milliseconds since `since`. */
export function cpuMsSince(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

/** One memory sample. */
export interface MemorySample {
  readonly atMs: number;
  readonly rss: number;
  readonly heapUsed: number;
}

// ------------------------------------------------------------------ the table

function format(value: number | null, unit: string): string {
  if (value === null || !Number.isFinite(value)) return 'n/a';
  const rounded = round(value, 3);
  const text = Math.abs(rounded) >= 1e5 ? rounded.toExponential(2) : String(rounded);
  return unit === '' ? text : `${text} ${unit}`;
}

/** The results as a plain-text table (figure, metric, value, baseline, ratio, target, met). */
export function table(results: readonly FigureResult[]): string {
  const rows: string[][] = [['figure', 'metric', 'value', 'baseline', 'ratio', 'target', 'met']];
  for (const result of results) {
    for (const metric of result.metrics) {
      rows.push([
        result.figure,
        metric.name,
        format(metric.value, metric.unit),
        metric.baseline === undefined ? '' : `${format(metric.baseline.value, metric.baseline.unit)} (${metric.baseline.name})`,
        metric.ratio === undefined ? '' : `${format(metric.ratio, '')}${metric.ratioOf === undefined ? '' : ` x ${metric.ratioOf}`}`,
        metric.target ?? '',
        metric.met === undefined ? '' : metric.met ? 'yes' : 'NO',
      ]);
    }
  }
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  const line = (row: readonly string[]) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd();
  const [header, ...body] = rows;
  return [line(header ?? []), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** Adds or replaces figures in bench/results.json (other figures are kept). */
export function saveResults(results: readonly FigureResult[], path = RESULTS_PATH): void {
  let current: ResultsFile | undefined;
  try {
    current = JSON.parse(readFileSync(path, 'utf8')) as ResultsFile;
  } catch {
    current = undefined;
  }
  const figures: Record<string, FigureResult> = { ...(current?.figures ?? {}) };
  for (const result of results) figures[result.figure] = result;
  const file: ResultsFile = { machine: machine(), updated: new Date().toISOString(), summary: summarize(Object.values(figures)), figures };
  writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`);
}

// ------------------------------------------------------------------ running a figure

/** Runs a figure and stamps its result. */
export async function runFigure(figure: Figure, options: RunOptions): Promise<FigureResult> {
  const started = Date.now();
  const result = await figure.run(options);
  return {
    figure: figure.name,
    title: figure.title,
    date: new Date(started).toISOString(),
    quick: options.quick,
    ...(options.tiny === true ? { tiny: true } : {}),
    durationMs: Date.now() - started,
    ...result,
  };
}

/**
 * The command line of one figure: `--quick`; `--out <file>` writes the result there (for
 * bench/run.ts) instead of printing the table and updating bench/results.json.
 */
export function main(figure: Figure, entryUrl: string): void {
  if (process.argv[1] === undefined || fileURLToPath(entryUrl) !== process.argv[1]) return;
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  // lifion-kinesis (the peer) loads aws-sdk v2, which prints a maintenance notice to stderr.
  process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE = '1';
  const argv = process.argv.slice(2);
  const tiny = argv.includes('--tiny');
  const quick = tiny || argv.includes('--quick');
  const outAt = argv.indexOf('--out');
  const out = outAt >= 0 ? argv[outAt + 1] : undefined;
  runFigure(figure, { quick, tiny }).then((result) => {
    if (out === undefined) {
      console.log(`\n${table([result])}\n`);
      // A quick run is a smoke check: it must not overwrite the committed measurements.
      if (!quick) saveResults([result]);
    } else {
      writeFileSync(out, JSON.stringify(result));
    }
    // Exit now: a stopped client's shutdown bound or a local server's keep-alive would hold the loop open.
    process.exit(0);
  }, (error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}

/** Progress lines go to stderr, so stdout stays the table. */
export function log(message: string): void {
  process.stderr.write(`  ${message}\n`);
}
