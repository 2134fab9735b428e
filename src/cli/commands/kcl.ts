// `kinsumer import-kcl` and `kinsumer export-kcl`: moving from the AWS KCL and back, through
// importKclCheckpoints() and exportKclCheckpoints() (one implementation for the CLI and programs).
// Both print their plan, one line per shard (`--json`: the plan as JSON), and exit 3 when they
// refused, having written nothing, as `reset` does.
import { DEFAULT_KCL_WATCH_MS } from '../../kcl/kcl-options.js';
import { exportKclCheckpoints } from '../../kcl/export-kcl.js';
import { importKclCheckpoints } from '../../kcl/import-kcl.js';
import { planStartText } from '../../kcl/kinsumer-side.js';
import type { KclPlan, KclPlanCheckpoint, KclPlanLine } from '../../kcl/plan.js';
import type { InitialPosition } from '../../types.js';
import { clientSettings, dynamodbClient, kinesisClient } from '../clients.js';
import { EXIT, type CliIo, type Command, type ExitCode, type OptionValues, UsageError } from '../command.js';
import { applicationOption, integerOption, parseTimestamp, streamOption, textOption } from '../common-options.js';
import { renderTable } from '../format.js';

const SHARED_OPTIONS = {
  'lease-table': { type: 'string' },
  'watch-ms': { type: 'string' },
  'dry-run': { type: 'boolean' },
  force: { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

const SHARED_HELP = {
  'lease-table': 'the KCL application\'s lease table (the KCL names it after its applicationName)',
  'dry-run': 'print the plan, write nothing (not even a missing table)',
  json: 'print the plan as JSON ({ shards: [{ shardId, kcl, start, action, reason?, forced? }], written, refused, ... })',
} as const;

function kclText(kcl: KclPlanCheckpoint | undefined): string {
  if (kcl === undefined) return '-';
  return kcl.subSequenceNumber === undefined ? kcl.checkpoint : `${kcl.checkpoint}/${kcl.subSequenceNumber}`;
}

function actionText(line: KclPlanLine): string {
  return line.forced === true ? 'write (forced)' : line.action;
}

/** The plan as a person reads it: one line per shard, sequence numbers in full. */
export function planTable(plan: KclPlan, direction: 'import' | 'export'): string {
  const rows = plan.shards.map((line) => {
    const kcl = kclText(line.kcl);
    const start = planStartText(line.start);
    return [line.shardId, ...(direction === 'import' ? [kcl, start] : [start, kcl]), actionText(line), line.reason ?? ''];
  });
  const headers = direction === 'import' ? ['SHARD', 'KCL CHECKPOINT', 'KINSUMER START', 'ACTION', 'WHY'] : ['SHARD', 'KINSUMER CHECKPOINT', 'KCL CHECKPOINT', 'ACTION', 'WHY'];
  return renderTable(headers, rows);
}

/** The options both commands read alike. */
function moveOptions(values: OptionValues) {
  const stream = streamOption(values);
  return {
    applicationName: applicationOption(values),
    ...(stream.streamArn === undefined ? { streamName: stream.streamName } : { streamArn: stream.streamArn }),
    leaseTable: String(textOption(values, 'lease-table')),
    watchMs: integerOption(values, 'watch-ms', DEFAULT_KCL_WATCH_MS),
    dryRun: values['dry-run'] === true,
    force: values.force === true,
  };
}

/** Runs one of the two with the clients the options name, and prints its plan and outcome. */
async function runMove(
  name: 'import-kcl' | 'export-kcl', values: OptionValues, io: CliIo,
  move: (clients: { dynamodb: ReturnType<typeof dynamodbClient>; kinesis: ReturnType<typeof kinesisClient> }) => Promise<KclPlan>,
  summary: (plan: KclPlan) => readonly string[],
): Promise<ExitCode> {
  const settings = clientSettings(values);
  const kinesis = kinesisClient(settings);
  const dynamodb = dynamodbClient(settings);
  try {
    const plan = await move({ dynamodb, kinesis });
    if (values.json === true) io.stdout.write(`${JSON.stringify(plan, null, 2)}\n`);
    else io.stdout.write(planTable(plan, name === 'import-kcl' ? 'import' : 'export'));
    if (plan.refused.length > 0) {
      io.stderr.write(`kinsumer ${name}: refused:\n${plan.refused.map((r) => `  ${r}\n`).join('')}`);
      io.stderr.write(plan.written === 0 ? 'Nothing was written.\n' : `${plan.written} rows were written before that.\n`);
      return EXIT.refused;
    }
    if (values.json !== true) for (const line of summary(plan)) io.stdout.write(`${line}\n`);
    return EXIT.ok;
  } finally {
    kinesis.destroy();
    dynamodb.destroy();
  }
}

function onWatch(name: string, io: CliIo) {
  return (what: string, watchMs: number) => {
    io.stderr.write(`kinsumer ${name}: watching ${what} for ${watchMs} ms to tell a live fleet from a stopped one...\n`);
  };
}

const EXIT_CODES = (done: string, refused: string) => ({
  [EXIT.ok]: done,
  [EXIT.failure]: 'an AWS error, or the stream or a table is missing',
  [EXIT.usage]: 'bad command line',
  [EXIT.refused]: refused,
});

export const importKclCommand: Command = {
  name: 'import-kcl',
  summary: 'start kinsumer where a stopped AWS KCL application stopped: its lease table\'s checkpoints into the app\'s checkpoints',
  usage: 'kinsumer import-kcl --lease-table <KCL table> --stream <name|arn> --app <name> [--watch-ms 15000] [--timestamp <ISO time>] [--dry-run] [--force] [--json]',
  options: { ...SHARED_OPTIONS, timestamp: { type: 'string' } },
  optionHelp: {
    'lease-table': SHARED_HELP['lease-table'],
    'watch-ms': `watch the KCL leases (and kinsumer's owned rows) this long first: a leaseCounter that moves means the KCL fleet still runs, and the import is refused; make it longer than the fleet's failoverTimeMillis / 3 (default ${DEFAULT_KCL_WATCH_MS})`,
    timestamp: 'the AT_TIMESTAMP time the KCL application is configured with (an ISO 8601 time); without it, AT_TIMESTAMP leases are refused',
    'dry-run': SHARED_HELP['dry-run'],
    force: 'write even where a kinsumer checkpoint would move backwards, a live kinsumer client holds the shard, or the KCL fleet looks alive; the plan marks those lines forced',
    json: SHARED_HELP.json,
  },
  exitCodes: EXIT_CODES('imported (with --dry-run: planned)', 'refused: the KCL fleet is alive, or a shard is refused (see its line); nothing was written'),
  required: ['lease-table', 'stream', 'app'],
  async run(values, io) {
    const options = moveOptions(values);
    const { applicationName, leaseTable, dryRun } = options;
    const timestampText = textOption(values, 'timestamp');
    const timestamp = timestampText === undefined ? undefined : parseTimestamp(timestampText, 'timestamp');
    if (timestampText !== undefined && timestamp === undefined) throw new UsageError(`--timestamp must be an ISO 8601 time (2026-01-31T12:00:00Z), not '${timestampText}'`);
    if (timestamp !== undefined && timestamp.getTime() > Date.now()) throw new UsageError(`--timestamp ${timestampText ?? ''} is in the future (Kinesis reads AT_TIMESTAMP only up to now)`);
    return runMove('import-kcl', values, io, (clients) => importKclCheckpoints({
      ...clients, ...options, ...(timestamp === undefined ? {} : { timestamp }), onWatch: onWatch('import-kcl', io),
    }), (plan) => [
      dryRun
        ? `dry run: ${plan.shards.filter((l) => l.action === 'write').length} checkpoint rows of app ${applicationName} would be written; nothing was`
        : `imported ${plan.written} checkpoints from ${leaseTable} into app ${applicationName}: start kinsumer now (and keep the KCL fleet stopped)`,
      ...ignoredLines(plan),
    ]);
  },
};

/** `--initial-position`: LATEST, TRIM_HORIZON or an ISO 8601 time. */
function parseInitialPosition(text: string): InitialPosition {
  if (text === 'LATEST' || text === 'TRIM_HORIZON') return text;
  const timestamp = parseTimestamp(text, 'initial-position');
  if (timestamp === undefined) throw new UsageError(`--initial-position must be LATEST, TRIM_HORIZON or an ISO 8601 time, not '${text}'`);
  return { timestamp };
}

export const exportKclCommand: Command = {
  name: 'export-kcl',
  summary: 'roll back to the AWS KCL: a stopped kinsumer group\'s checkpoints into the KCL application\'s lease table',
  usage: 'kinsumer export-kcl --app <name> --stream <name|arn> --lease-table <KCL table> [--initial-position <position>] [--watch-ms 15000] [--dry-run] [--force] [--json]',
  options: { ...SHARED_OPTIONS, 'initial-position': { type: 'string' } },
  optionHelp: {
    'lease-table': `${SHARED_HELP['lease-table']}; created (hash key leaseKey) when missing`,
    'initial-position': 'LATEST, TRIM_HORIZON or an ISO 8601 time: the group\'s initialPosition, for shards kinsumer never read and whose parents say nothing (default TRIM_HORIZON)',
    'watch-ms': `watch kinsumer's clients and owned rows this long first: a row that moves means a live kinsumer client, and the export is refused (default ${DEFAULT_KCL_WATCH_MS})`,
    'dry-run': SHARED_HELP['dry-run'],
    force: 'export while kinsumer clients are live; the plan marks every line forced',
    json: SHARED_HELP.json,
  },
  exitCodes: EXIT_CODES('exported (with --dry-run: planned)', 'refused: live kinsumer clients, or a shard is refused (see its line); nothing was written'),
  required: ['lease-table', 'stream', 'app'],
  async run(values, io) {
    const options = moveOptions(values);
    const { applicationName, leaseTable, dryRun } = options;
    const positionText = textOption(values, 'initial-position');
    const initialPosition = positionText === undefined ? undefined : parseInitialPosition(positionText);
    return runMove('export-kcl', values, io, (clients) => exportKclCheckpoints({
      ...clients, ...options, ...(initialPosition === undefined ? {} : { initialPosition }), onWatch: onWatch('export-kcl', io),
    }), (plan) => [
      ...(plan.createdTables ?? []).map((table) => (dryRun ? `dry run: table ${table} would be created` : `created table ${table}`)),
      dryRun
        ? `dry run: ${plan.shards.filter((l) => l.action === 'write').length} KCL leases would be written to ${leaseTable}; nothing was`
        : `exported ${plan.written} checkpoints of app ${applicationName} into ${leaseTable}: start the KCL application now (and keep kinsumer stopped)`,
      ...(plan.kclTimestamp === undefined ? [] : [`AT_TIMESTAMP leases: configure the KCL application with InitialPositionInStream AT_TIMESTAMP ${plan.kclTimestamp.toISOString()}`]),
      'Records kinsumer acked beyond an unacked one (acked ranges) are not carried over: the KCL processes them again.',
      ...ignoredLines(plan),
    ]);
  },
};

function ignoredLines(plan: KclPlan): string[] {
  const { otherStreams, otherItems } = plan.ignored;
  return [
    ...(otherStreams > 0 ? [`left alone: ${otherStreams} leases of other streams`] : []),
    ...(otherItems > 0 ? [`left alone: ${otherItems} items that are not leases (KCL 3.5's leader, migration, worker-metrics and stream items)`] : []),
  ];
}
