// `kinsumer import-kcl` and `kinsumer export-kcl`: moving from the AWS KCL and back, through
// importKclCheckpoints() and exportKclCheckpoints() (one implementation for the CLI and programs).
// Both print their plan, one line per shard (`--json`: the plan as JSON), and exit 3 when they
// refused, having written nothing, as `reset` does.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { firstValueFrom } from 'rxjs';
import { Dynamo } from '../../dynamodb/dynamo.js';
import { tableNames } from '../../dynamodb/table-names.js';
import { DEFAULT_KCL_WATCH_MS } from '../../kcl/kcl-options.js';
import { exportKclCheckpoints } from '../../kcl/export-kcl.js';
import { importKclCheckpoints } from '../../kcl/import-kcl.js';
import { readCheckpointRows } from '../../kcl/kinsumer-rows.js';
import type { KclPlan } from '../../kcl/plan.js';
import type { InitialPosition } from '../../types.js';
import { clientSettings, dynamodbClient, kinesisClient } from '../clients.js';
import { EXIT, type CliIo, type Command, type ExitCode, type OptionValues, UsageError } from '../command.js';
import { STREAMS_HELP, STREAMS_OPTION, applicationOption, groupStreamsOption, integerOption, parseTimestamp, textOption } from '../common-options.js';
import { counted } from '../format.js';
import { outputWidth, reportLines } from '../wrap.js';
import { ignoredLines, planView, shortNumbers, writtenShards } from './kcl-view.js';
import { tableExists } from './tables.js';

const SHARED_OPTIONS = {
  ...STREAMS_OPTION,
  'all-streams': { type: 'boolean' },
  'lease-table': { type: 'string' },
  'watch-ms': { type: 'string' },
  'dry-run': { type: 'boolean' },
  force: { type: 'boolean' },
  json: { type: 'boolean' },
  wide: { type: 'boolean' },
} as const;

const SHARED_HELP = {
  streams: `${STREAMS_HELP}; its rows are keyed by stream, as the KCL's multi-stream leases are`,
  'lease-table': 'the KCL application\'s lease table (the KCL names it after its applicationName)',
  'dry-run': 'print the plan, write nothing (not even a missing table)',
  json: 'print the plan as JSON ({ shards: [{ shardId, kcl, start, action, reason?, forced? }], written, refused, ... })',
  wide: 'one line per shard with sequence numbers and reasons in full, however wide (default: fit the terminal, 80 columns in a pipe)',
} as const;

/** The options both commands read alike. */
function moveOptions(values: OptionValues) {
  const all = values['all-streams'] === true;
  if (all && (values.stream !== undefined || values.streams !== undefined)) throw new UsageError('give --all-streams, --streams or --stream, one of them');
  const group = all ? undefined : groupStreamsOption(values);
  const stream = group?.stream;
  return {
    applicationName: applicationOption(values),
    ...(stream === undefined ? { streams: group?.streams ?? ('all' as const) } : stream.streamArn === undefined ? { streamName: stream.streamName } : { streamArn: stream.streamArn }),
    leaseTable: String(textOption(values, 'lease-table')),
    watchMs: integerOption(values, 'watch-ms', DEFAULT_KCL_WATCH_MS),
    dryRun: values['dry-run'] === true,
    force: values.force === true,
  };
}

/** The clients a move runs with. */
interface MoveClients {
  readonly dynamodb: ReturnType<typeof dynamodbClient>;
  readonly kinesis: ReturnType<typeof kinesisClient>;
}

/** Runs one of the two with the clients the options name, and prints its plan and outcome. */
async function runMove(
  name: 'import-kcl' | 'export-kcl', values: OptionValues, io: CliIo,
  move: (clients: MoveClients) => Promise<KclPlan>,
  summary: (plan: KclPlan, clients: MoveClients) => Promise<readonly string[]>,
): Promise<ExitCode> {
  const settings = clientSettings(values);
  const kinesis = kinesisClient(settings);
  const dynamodb = dynamodbClient(settings);
  const width = outputWidth(io.stdout);
  try {
    const plan = await move({ dynamodb, kinesis });
    if (values.json === true) io.stdout.write(`${JSON.stringify(plan, null, 2)}\n`);
    else io.stdout.write(planView(plan, name === 'import-kcl' ? 'import' : 'export', width, values.wide === true));
    if (plan.refused.length > 0) {
      const errorWidth = outputWidth(io.stderr);
      io.stderr.write(`kinsumer ${name}: refused:\n${reportLines(plan.refused.map((r) => `  ${shortNumbers(r)}`), errorWidth)}`);
      io.stderr.write(plan.written === 0 ? 'Nothing was written.\n' : `${counted(plan.written, 'row was', 'rows were')} written before that.\n`);
      return EXIT.refused;
    }
    if (values.json !== true) io.stdout.write(reportLines(await summary(plan, { dynamodb, kinesis }), width));
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
  usage: 'kinsumer import-kcl --lease-table <KCL table> --stream <name|arn> --app <name> [--watch-ms 15000] [--timestamp <ISO time>] [--dry-run] [--force] [--json] [--wide]',
  options: { ...SHARED_OPTIONS, timestamp: { type: 'string' } },
  optionHelp: {
    'lease-table': SHARED_HELP['lease-table'],
    streams: SHARED_HELP.streams,
    'all-streams': 'into a group that reads several streams: every stream the KCL table has multi-stream leases of (by name; a stream of another account needs its ARN in --streams)',
    'watch-ms': `watch the KCL leases (and kinsumer's owned rows) this long first: a leaseCounter that moves means the KCL fleet still runs, and the import is refused; make it longer than the fleet's failoverTimeMillis / 3 (default ${DEFAULT_KCL_WATCH_MS})`,
    timestamp: 'the AT_TIMESTAMP time the KCL application is configured with (an ISO 8601 time); without it, AT_TIMESTAMP leases are refused',
    'dry-run': SHARED_HELP['dry-run'],
    force: 'write even where a kinsumer checkpoint would move backwards, a live kinsumer client holds the shard, or the KCL fleet looks alive; the plan marks those lines forced',
    json: SHARED_HELP.json,
    wide: SHARED_HELP.wide,
  },
  exitCodes: EXIT_CODES('imported (with --dry-run: planned)', 'refused: the KCL fleet is alive, or a shard is refused (see its line); nothing was written'),
  required: ['lease-table', 'stream|streams|all-streams', 'app'],
  async run(values, io) {
    const options = moveOptions(values);
    const { applicationName, leaseTable, dryRun } = options;
    const timestampText = textOption(values, 'timestamp');
    const timestamp = timestampText === undefined ? undefined : parseTimestamp(timestampText, 'timestamp');
    if (timestampText !== undefined && timestamp === undefined) throw new UsageError(`--timestamp must be an ISO 8601 time (2026-01-31T12:00:00Z), not '${timestampText}'`);
    if (timestamp !== undefined && timestamp.getTime() > Date.now()) throw new UsageError(`--timestamp ${timestampText ?? ''} is in the future (Kinesis reads AT_TIMESTAMP only up to now)`);
    const missing: string[] = [];
    return runMove('import-kcl', values, io, async (clients) => {
      // Asked first: the import creates kinsumer's tables when it writes, and says so.
      missing.push(...await missingTables(clients.dynamodb, applicationName));
      return importKclCheckpoints({ ...clients, ...options, ...(timestamp === undefined ? {} : { timestamp }), onWatch: onWatch('import-kcl', io) });
    }, (plan) => {
      const rows = counted(writtenShards(plan).length, 'checkpoint row');
      const tables = missing.length === 0 ? [] : [dryRun ? `dry run: kinsumer's tables ${missing.join(', ')} would be created` : `created kinsumer's tables ${missing.join(', ')}`];
      return Promise.resolve([
        ...tables,
        dryRun
          ? `dry run: ${rows} of app ${applicationName} would be written; nothing was written`
          : `imported ${counted(plan.written, 'checkpoint')} from ${leaseTable} into app ${applicationName}: start kinsumer now (and keep the KCL fleet stopped)`,
        ...ignoredLines(plan),
      ]);
    });
  },
};

/** Which of the application's three tables do not exist. */
async function missingTables(dynamodb: DynamoDBClient, applicationName: string): Promise<string[]> {
  const names = Object.values(tableNames(applicationName));
  const present = await Promise.all(names.map((table) => tableExists(dynamodb, table)));
  return names.filter((_, i) => !present[i]);
}

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
  usage: 'kinsumer export-kcl --app <name> --stream <name|arn> --lease-table <KCL table> [--initial-position <position>] [--watch-ms 15000] [--dry-run] [--force] [--json] [--wide]',
  options: { ...SHARED_OPTIONS, 'initial-position': { type: 'string' } },
  optionHelp: {
    'lease-table': `${SHARED_HELP['lease-table']}; created (hash key leaseKey) when missing`,
    streams: SHARED_HELP.streams,
    'all-streams': 'from a group that reads several streams: every stream it has rows of (by name), into a multi-stream table',
    'initial-position': 'LATEST, TRIM_HORIZON or an ISO 8601 time: the group\'s initialPosition, for shards kinsumer never read and whose parents say nothing (default TRIM_HORIZON)',
    'watch-ms': `watch kinsumer's clients and owned rows this long first: a row that moves means a live kinsumer client, and the export is refused (default ${DEFAULT_KCL_WATCH_MS})`,
    'dry-run': SHARED_HELP['dry-run'],
    force: 'export while kinsumer clients are live; the plan marks every line forced',
    json: SHARED_HELP.json,
    wide: SHARED_HELP.wide,
  },
  exitCodes: EXIT_CODES('exported (with --dry-run: planned)', 'refused: live kinsumer clients, or a shard is refused (see its line); nothing was written'),
  required: ['lease-table', 'stream|streams|all-streams', 'app'],
  async run(values, io) {
    const options = moveOptions(values);
    const { applicationName, leaseTable, dryRun } = options;
    const positionText = textOption(values, 'initial-position');
    const initialPosition = positionText === undefined ? undefined : parseInitialPosition(positionText);
    return runMove('export-kcl', values, io, (clients) => exportKclCheckpoints({
      ...clients, ...options, ...(initialPosition === undefined ? {} : { initialPosition }), onWatch: onWatch('export-kcl', io),
    }), async (plan, clients) => {
      const leases = counted(writtenShards(plan).length, 'KCL lease');
      return [
        ...(plan.createdTables ?? []).map((table) => (dryRun ? `dry run: table ${table} would be created` : `created table ${table}`)),
        dryRun
          ? `dry run: ${leases} would be written to ${leaseTable}; nothing was written`
          : `exported ${counted(plan.written, 'checkpoint')} of app ${applicationName} into ${leaseTable}: start the KCL application now (and keep kinsumer stopped)`,
        ...(plan.kclTimestamp === undefined ? [] : [`AT_TIMESTAMP leases: configure the KCL application with InitialPositionInStream AT_TIMESTAMP ${plan.kclTimestamp.toISOString()}`]),
        ...await ackedRangesLines(clients.dynamodb, applicationName, writtenShards(plan)),
        ...ignoredLines(plan),
      ];
    });
  },
};

/**
 * The caveat of an export, when it applies: the shards whose rows hold records acked beyond their
 * checkpoint (acked ranges), which the KCL lease cannot carry. Said without the list when the rows
 * cannot be read again (the caveat then may apply).
 */
async function ackedRangesLines(dynamodb: DynamoDBClient, applicationName: string, shardIds: readonly string[]): Promise<string[]> {
  let withRanges: string[];
  try {
    const rows = await firstValueFrom(readCheckpointRows(new Dynamo(dynamodb), tableNames(applicationName).checkpoints));
    withRanges = shardIds.filter((shardId) => (rows.get(shardId)?.row?.acked?.length ?? 0) > 0);
  } catch {
    return ['Records kinsumer acked beyond an unacked one (acked ranges), if any, are not carried over: the KCL processes them again.'];
  }
  if (withRanges.length === 0) return [];
  return [`Records kinsumer acked beyond an unacked one (acked ranges, on ${counted(withRanges.length, 'shard')}: ${withRanges.join(', ')}) are not carried over: the KCL processes them again.`];
}
