// Renders bench/results.json as the Markdown tables of BENCHMARKS.md (one table per figure).
//
//   npx tsx bench/support/markdown.ts [bench/results.json]
import { readFileSync } from 'node:fs';
import { type Metric, RESULTS_PATH, type ResultsFile, round } from './harness.js';

function format(value: number | null | undefined, unit = ''): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return 'n/a';
  const rounded = round(value, 3);
  const text = Math.abs(rounded) >= 1e4 ? rounded.toLocaleString('en-US') : String(rounded);
  return unit === '' ? text : `${text} ${unit}`;
}

function row(metric: Metric): string {
  const baseline = metric.baseline === undefined ? '' : `${format(metric.baseline.value, metric.baseline.unit)} (${metric.baseline.name})`;
  const ratio = metric.ratio === undefined ? '' : `${format(metric.ratio)}${metric.ratioOf === undefined ? '' : ` × ${metric.ratioOf}`}`;
  const met = metric.met === undefined ? '' : metric.met ? 'yes' : '**no**';
  const cells = [metric.name, format(metric.value, metric.unit), baseline, ratio, metric.target ?? '', met];
  return `| ${cells.map((c) => c.replaceAll('|', '\\|')).join(' | ')} |`;
}

const file = JSON.parse(readFileSync(process.argv[2] ?? RESULTS_PATH, 'utf8')) as ResultsFile;
const out: string[] = [];
// The order of `npm run bench`; figures it does not know (added later) come last.
const ORDER = ['overhead', 'kinesis', 'cpu', 'tls', 'fixed-cost', 'memory', 'failover', 'dynamo-cost', 'latency', 'scale', 'operators', 'effects'];
const rank = (name: string): number => (ORDER.includes(name) ? ORDER.indexOf(name) : ORDER.length);
for (const figure of Object.values(file.figures).sort((a, b) => rank(a.figure) - rank(b.figure))) {
  out.push(`### ${figure.figure} — ${figure.title}`, '', `Run ${figure.date.slice(0, 16).replace('T', ' ')} UTC, ${Math.round(figure.durationMs / 1000)} s${figure.quick ? ' (quick)' : ''}.`, '');
  out.push('| metric | value | baseline (same run) | ratio | target | met |', '| --- | --- | --- | --- | --- | --- |');
  for (const metric of figure.metrics) out.push(row(metric));
  if (figure.notes.length > 0) out.push('', ...figure.notes.map((note) => `- ${note}`));
  out.push('');
}
console.log(out.join('\n'));
