// `npm run simulate`: deterministic simulation of whole consumer groups on virtual time.
//
//   npm run simulate -- --seeds 200                 seeds 1..200, every kind of trouble
//   npm run simulate -- --seed 17                   one seed: its schedule, violations, shrunk reproduction
//   npm run simulate -- --seeds 500 --only skew     one kind alone (comma-separated), or --exclude kinds
//   npm run simulate -- --scale                     2,000 shards, 50 clients, one simulated hour (BENCHMARKS.md)
//
// Exit code 1 when any seed breaks an invariant.
import { parseArgs } from 'node:util';
import { INVARIANTS, type InvariantName } from './checker.js';
import { DEFAULT_STEPS, Summary, failureJson, failureLines } from './report.js';
import { ALL_KINDS, FAULT_KINDS, type FaultKind, describeSchedule } from './schedule.js';
import { simulateSeed } from './search.js';

const USAGE = `usage: npm run simulate -- [--seeds N] [--from S] [--seed S] [--steps N] [--only kinds] [--exclude kinds]
                             [--json] [--no-shrink] [--shrink-seconds N] [--path P] [--stop-on-fail] [--scale ...]

  --seeds N           run seeds S..S+N-1 (default 100), S = --from (default 1)
  --seed S            run one seed and print its schedule (a failure is shrunk and printed)
  --steps N           at most N commands per schedule (default ${DEFAULT_STEPS})
  --only a,b          only these kinds of trouble; --exclude a,b: all but these
  --json              one JSON document on stdout instead of text
  --no-shrink         report failures as generated, without shrinking (by default a single
                      --seed is shrunk, and in a run of many seeds the first failure of each invariant)
  --shrink-seconds N  wall-clock budget for shrinking one failure (default 60)
  --path P            with --seed: replay the shrunk case at this fast-check path
  --stop-on-fail      stop at the first failing seed
  --find INVARIANT    stop at the first seed that breaks this invariant and say how many seeds it
                      took; shrinking then keeps that invariant
  --scale             the scale simulation instead: [--shards 2000] [--clients 50] [--minutes 60]
                      [--records-per-second 0] [--seed 1] [--json] [--quiet] (BENCHMARKS.md)

kinds of trouble:
${Object.entries(FAULT_KINDS).map(([k, v]) => `  ${k.padEnd(15)} ${v}`).join('\n')}

invariants checked:
${Object.entries(INVARIANTS).map(([k, v]) => `  ${k.padEnd(25)} ${v}`).join('\n')}
`;

function kindList(text: string | undefined, option: string): FaultKind[] {
  if (text === undefined) return [];
  const kinds = text.split(',').map((k) => k.trim()).filter((k) => k !== '');
  const unknown = kinds.filter((k) => !(k in FAULT_KINDS));
  if (unknown.length > 0) throw new Error(`--${option}: unknown kind ${unknown.join(', ')} (known: ${ALL_KINDS.join(', ')})`);
  return kinds as FaultKind[];
}

function integer(text: string | undefined, option: string, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${option} must be a non-negative integer, not ${text}`);
  return value;
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--scale')) {
    const { scaleMain } = await import('./scale.js');
    return scaleMain(argv.filter((a) => a !== '--scale'));
  }
  const { values } = parseArgs({
    args: argv,
    options: {
      seeds: { type: 'string' }, from: { type: 'string' }, seed: { type: 'string' }, steps: { type: 'string' },
      only: { type: 'string' }, exclude: { type: 'string' }, json: { type: 'boolean' }, 'no-shrink': { type: 'boolean' },
      'shrink-seconds': { type: 'string' }, path: { type: 'string' }, 'stop-on-fail': { type: 'boolean' }, help: { type: 'boolean' },
      find: { type: 'string' },
    },
  });
  if (values.help === true) {
    process.stdout.write(USAGE);
    return 0;
  }
  const only = kindList(values.only, 'only');
  const excluded = new Set(kindList(values.exclude, 'exclude'));
  const kinds = new Set((only.length > 0 ? only : ALL_KINDS).filter((k) => !excluded.has(k)));
  const maxCommands = integer(values.steps, 'steps', DEFAULT_STEPS);
  const single = values.seed === undefined ? undefined : integer(values.seed, 'seed', 1);
  const from = single ?? integer(values.from, 'from', 1);
  const count = single === undefined ? integer(values.seeds, 'seeds', 100) : 1;
  const find = values.find;
  if (find !== undefined && !(find in INVARIANTS)) throw new Error(`--find: unknown invariant ${find} (known: ${Object.keys(INVARIANTS).join(', ')})`);
  const options = {
    kinds, maxCommands, shrink: values['no-shrink'] !== true,
    ...(find === undefined ? {} : { target: find as InvariantName }),
    shrinkBudgetMs: 1000 * integer(values['shrink-seconds'], 'shrink-seconds', 60),
    ...(values.path === undefined ? {} : { path: values.path }),
  };
  const json = values.json === true;
  const out = (line: string) => { if (!json) process.stdout.write(`${line}\n`); };
  out(`kinsumer simulate: seeds ${from}..${from + count - 1}, at most ${maxCommands} commands each, kinds: ${kinds.size === ALL_KINDS.length ? 'all' : [...kinds].join(', ')}`);

  // Shrinking costs dozens of runs: in a run of many seeds only the first failure of each
  // invariant is shrunk (the others print their replay command); a single --seed always is.
  const shrunkAlready = new Set<string>();
  const summary = new Summary();
  const failures: Record<string, unknown>[] = [];
  for (let seed = from; seed < from + count; seed += 1) {
    let outcome = await simulateSeed(seed, single === undefined ? { ...options, shrink: false } : options);
    if (single === undefined && options.shrink && outcome.invariant !== undefined && !shrunkAlready.has(outcome.invariant)) {
      shrunkAlready.add(outcome.invariant);
      outcome = await simulateSeed(seed, options);
    }
    summary.add(outcome);
    if (single !== undefined && outcome.invariant === undefined) {
      for (const line of describeSchedule(outcome.schedule)) out(`  ${line}`);
      out(`seed ${seed}: passed (${outcome.result.steps} steps, ${(outcome.result.simulatedMs / 1000).toFixed(1)} simulated s)`);
    }
    if (outcome.invariant !== undefined) {
      for (const line of failureLines(outcome, kinds, maxCommands, find)) out(line);
      failures.push(failureJson(outcome, kinds, maxCommands, find));
      if (values['stop-on-fail'] === true) break;
      if (find !== undefined && outcome.result.counts.has(find as InvariantName)) {
        out(`found ${find} at seed ${seed}: ${seed - from + 1} seeds`);
        break;
      }
    } else if (single === undefined && (seed - from + 1) % 50 === 0) {
      out(`… ${seed - from + 1} seeds, ${summary.failed} failed`);
    }
  }
  if (json) process.stdout.write(`${JSON.stringify({ kinds: [...kinds], maxCommands, summary: summary.toJSON(), failures }, null, 2)}\n`);
  else for (const line of summary.lines()) out(line);
  return summary.failed > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (error: unknown) => {
  process.stderr.write(`simulate: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 2;
});
