import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { type FigureResult, type ResultsFile, SUMMARY_KEYS, summaryValue } from '../../bench/support/harness.js';

const run = promisify(execFile);

/** The figures bench/run.ts must always produce (bench/fan-out-latency.ts is optional). */
const FIGURES = ['overhead', 'kinesis', 'cpu', 'tls', 'fixed-cost', 'memory', 'failover', 'dynamo-cost', 'latency', 'scale', 'operators', 'effects'] as const;

// `npm run bench` in its tiny mode: every figure runs end to end on the real local servers and
// worker processes, with durations cut to almost nothing. Only the shape of the results is
// checked — never a speed: speed belongs to the benchmark run, not to the tests.
describe('the benchmark runner (bench/run.ts --tiny)', function () {
  this.timeout(600_000);
  let dir: string;
  let results: ResultsFile;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kinsumer-bench-smoke-'));
    const path = join(dir, 'results.json');
    try {
      await run(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--tiny', '--results', path], { cwd: process.cwd(), maxBuffer: 64 * 1024 * 1024 });
    } catch (error) {
      const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
      throw new Error(`bench/run.ts --tiny failed:\n${stdout}${stderr}`);
    }
    results = JSON.parse(await readFile(path, 'utf8')) as ResultsFile;
  });

  after(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('writes the machine it ran on', () => {
    expect(results.machine.cores).to.be.a('number').above(0);
    expect(results.machine.node).to.match(/^v\d+/);
  });

  // The stable keys other tools read (issue 19): present and numeric after every run.
  for (const key of SUMMARY_KEYS) {
    it(`fills the summary key ${key} with a number`, () => {
      const value = summaryValue(results.summary, key);
      expect(value, key).to.be.a('number');
      expect(Number.isFinite(value), `${key} is finite`).to.equal(true);
    });
  }

  for (const name of FIGURES) {
    it(`reports the ${name} figure with a numeric value for every metric`, () => {
      const figure: FigureResult | undefined = results.figures[name];
      expect(figure, `figure ${name}`).to.not.equal(undefined);
      expect(figure?.tiny).to.equal(true);
      expect(figure?.metrics.length, `metrics of ${name}`).to.be.above(0);
      for (const metric of figure?.metrics ?? []) {
        expect(metric.value, `${name}: ${metric.name}`).to.be.a('number');
        expect(Number.isFinite(metric.value), `${name}: ${metric.name} is finite`).to.equal(true);
        if (metric.baseline !== undefined) expect(Number.isFinite(metric.baseline.value), `${name}: ${metric.name} baseline`).to.equal(true);
        if (metric.ratio !== undefined) expect(metric.ratio, `${name}: ${metric.name} ratio`).to.be.a('number');
      }
    });
  }
});
