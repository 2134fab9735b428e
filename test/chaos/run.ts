// `npm run chaos -- [--duration s] [--workers 3..5] [--seed n] [--report path]`: one chaos run
// (see runner.ts). Prints the report, writes it as JSON, exits 1 on any violation, 2 on bad arguments.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { buildReport, formatReport } from './report.js';
import { runChaos } from './runner.js';

const USAGE = `usage: npm run chaos -- [--duration <seconds, default 30>] [--workers <3..5, default 3>] [--seed <n, default: time>] [--report <path, default chaos-report.json>] [--initial-position TRIM_HORIZON|LATEST] [--effects] [--poison <permille>] [--quiet]`;

function parse(argv: readonly string[]): { durationMs: number; workers: number; seed: number; report: string; quiet: boolean; effects: boolean; poisonPermille: number; initialPosition: 'TRIM_HORIZON' | 'LATEST' } | string {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        duration: { type: 'string', default: '30' },
        workers: { type: 'string', default: '3' },
        seed: { type: 'string' },
        report: { type: 'string', default: 'chaos-report.json' },
        quiet: { type: 'boolean', default: false },
        // Every record adds its amount to its key's total in DynamoDB Local, exactly once (design §8.1).
        effects: { type: 'boolean', default: false },
        // With --effects: records in a thousand that kill their process, dead-lettered once (design §9.3).
        poison: { type: 'string', default: '0' },
        'initial-position': { type: 'string', default: 'TRIM_HORIZON' },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    }));
  } catch (error) {
    return (error as Error).message;
  }
  if (values.help) return '';
  const duration = Number(values.duration);
  const workers = Number(values.workers);
  const seed = values.seed === undefined ? Date.now() % 1_000_000 : Number(values.seed);
  if (!(Number.isFinite(duration) && duration >= 10)) return '--duration must be a number of seconds, at least 10';
  if (!(Number.isInteger(workers) && workers >= 3 && workers <= 5)) return '--workers must be 3, 4 or 5';
  if (!Number.isInteger(seed) || seed < 0) return '--seed must be a non-negative integer';
  const initialPosition = values['initial-position'];
  if (initialPosition !== 'TRIM_HORIZON' && initialPosition !== 'LATEST') return '--initial-position must be TRIM_HORIZON or LATEST';
  const poisonPermille = Number(values.poison);
  if (!(Number.isInteger(poisonPermille) && poisonPermille >= 0 && poisonPermille <= 1000)) return '--poison must be an integer 0..1000 (records in a thousand)';
  if (poisonPermille > 0 && !values.effects) return '--poison needs --effects (the dead letters are written with the checkpoint)';
  return { durationMs: duration * 1000, workers, seed, report: values.report, quiet: values.quiet, effects: values.effects, poisonPermille, initialPosition };
}

async function main(): Promise<number> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const argv = process.argv.slice(2);
  const args = parse(argv);
  if (typeof args === 'string') {
    process.stderr.write(args === '' ? `${USAGE}\n` : `${args}\n${USAGE}\n`);
    return args === '' ? 0 : 2;
  }
  const log = args.quiet ? undefined : (line: string) => process.stdout.write(`[chaos] ${line}\n`);
  const result = await runChaos({
    durationMs: args.durationMs, workers: args.workers, seed: args.seed, initialPosition: args.initialPosition, effects: args.effects, poisonPermille: args.poisonPermille, ...(log === undefined ? {} : { log }),
  });
  const report = buildReport(result, `npm run chaos -- ${argv.join(' ')}`.trim());
  writeFileSync(args.report, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${formatReport(report)}\n  report: ${args.report}\n`);
  return report.passed ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`chaos run aborted: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
    process.exit(1);
  },
);
