// `kinsumer reset`: moves the application's checkpoints to LATEST, TRIM_HORIZON or a timestamp.
// Refuses (exit 3) while a live client leases any of the shards: a running consumer would go on
// from where it is and overwrite the reset with its next commit. --force fences the owners
// instead (LeaseStore.resetCheckpoint moves the lease counter), so they re-read from the new place.
import { firstValueFrom } from 'rxjs';
import { millisFromNanos, nanosFromMillis } from '../../dynamodb/codec.js';
import { Dynamo } from '../../dynamodb/dynamo.js';
import { type CorruptCheckpointError, DynamoLeaseStore, leaseAvailable } from '../../dynamodb/lease-store.js';
import { LeaseHeldError } from '../../errors.js';
import { KinesisStream } from '../../kinesis/kinesis.js';
import { DEFAULTS, tableNames } from '../../options.js';
import type { CheckpointRow, StoredCheckpoint } from '../../ports.js';
import { clientSettings, dynamodbClient, kinesisClient } from '../clients.js';
import { EXIT, UsageError, type Command } from '../command.js';
import { applicationOption, integerOption, listOption, parseTimestamp, streamOption, textOption } from '../common-options.js';
import { ageText, checkpointText } from '../format.js';

/** The client id the CLI's lease store uses; it never captures, so no row ever names it as owner. */
const CLI_CLIENT_ID = 'kinsumer-cli';

/**
 * `--to`: `LATEST`, `TRIM_HORIZON`, or an ISO 8601 timestamp with a date and time (not in the
 * future: Kinesis refuses an AT_TIMESTAMP iterator beyond its clock, so the shard could not be read).
 */
export function parseResetTarget(text: string, nowMs: number): StoredCheckpoint {
  if (text === 'LATEST' || text === 'TRIM_HORIZON') return { type: text };
  const timestamp = parseTimestamp(text, 'to');
  if (timestamp === undefined) throw new UsageError(`--to must be LATEST, TRIM_HORIZON or an ISO 8601 timestamp (2026-01-31T12:00:00Z), not '${text}'`);
  if (timestamp.getTime() > nowMs) throw new UsageError(`--to ${text} is in the future (Kinesis reads AT_TIMESTAMP only up to now)`);
  return { type: 'AT_TIMESTAMP', timestamp };
}

function ownerText(row: CheckpointRow): string {
  const id = row.ownerId ?? '?';
  return row.ownerName === undefined || row.ownerName === id ? id : `${row.ownerName} (${id})`;
}

export const resetCommand: Command = {
  name: 'reset',
  summary: 'move checkpoints to LATEST, TRIM_HORIZON or a timestamp (refused while leases are held, unless --force)',
  usage: 'kinsumer reset --stream <name|arn> --app <name> --to LATEST|TRIM_HORIZON|<ISO timestamp> [--shard <id>[,<id>...]] [--force]',
  options: {
    to: { type: 'string' },
    shard: { type: 'string' },
    force: { type: 'boolean' },
    'lease-ttl-ms': { type: 'string' },
  },
  optionHelp: {
    to: 'LATEST, TRIM_HORIZON or an ISO 8601 timestamp such as 2026-01-31T12:00:00Z',
    shard: 'only these shards (comma-separated); default every shard of the stream',
    force: 'reset shards leased by live clients too: their owners are fenced and read again from the new checkpoint',
    'lease-ttl-ms': `the application's leaseTtlMs: an owner not heard from for this long no longer holds its lease (default ${DEFAULTS.leaseTtlMs})`,
  },
  exitCodes: {
    [EXIT.ok]: 'checkpoints moved',
    [EXIT.failure]: 'an AWS error, or the stream or a table is missing',
    [EXIT.usage]: 'bad command line',
    [EXIT.refused]: 'refused: live clients hold leases (nothing changed; see --force)',
  },
  required: ['stream', 'app', 'to'],
  async run(values, io) {
    const app = applicationOption(values);
    const stream = streamOption(values);
    const target = parseResetTarget(String(textOption(values, 'to')), Date.now());
    const only = listOption(values, 'shard');
    const force = values.force === true;
    const leaseTtlMs = integerOption(values, 'lease-ttl-ms', DEFAULTS.leaseTtlMs);
    const settings = clientSettings(values);
    const kinesis = kinesisClient(settings);
    const dynamodb = dynamodbClient(settings);
    try {
      const shardIds = (await firstValueFrom(new KinesisStream(kinesis, stream).listShards())).map((s) => s.shardId);
      const unknown = (only ?? []).filter((id) => !shardIds.includes(id));
      if (unknown.length > 0) throw new UsageError(`not a shard of stream ${stream.streamArn ?? stream.streamName}: ${unknown.join(', ')}`);
      const targets = only ?? shardIds;

      const corrupt: CorruptCheckpointError[] = [];
      const store = new DynamoLeaseStore({
        dynamo: new Dynamo(dynamodb), table: tableNames(app).checkpoints, clientId: CLI_CLIENT_ID, clientName: CLI_CLIENT_ID,
        leaseTtlMs, now: Date.now, onCorruptRow: (error) => corrupt.push(error),
      });
      const rows = new Map((await firstValueFrom(store.readMany(targets))).map((row) => [row.shardId, row]));
      const cutoffNs = nanosFromMillis(Date.now() - leaseTtlMs);
      const held = [...rows.values()].filter((row) => !leaseAvailable(row, CLI_CLIENT_ID, cutoffNs));
      if (held.length > 0 && !force) {
        io.stderr.write(`kinsumer reset: refused: ${held.length} of ${targets.length} shards are leased by live clients:\n`);
        for (const row of held) io.stderr.write(`  ${row.shardId}  ${ownerText(row)}, renewed ${ageText(Date.now() - millisFromNanos(row.lastUpdateNs ?? 0n))} ago\n`);
        io.stderr.write('Stop the consumers first (or wait until their leases expire), or reset anyway with --force.\nNothing was changed.\n');
        return EXIT.refused;
      }
      // A corrupt row is overwritten by the reset: say what it was.
      for (const error of corrupt) io.stderr.write(`kinsumer reset: ${error.message}; resetting it\n`);

      const raced: string[] = [];
      for (const shardId of targets) {
        const before = rows.get(shardId);
        try {
          await firstValueFrom(store.resetCheckpoint(shardId, target, { force }), { defaultValue: undefined });
        } catch (error) {
          // Captured by a client between the check above and this write.
          if (!(error instanceof LeaseHeldError)) throw error;
          raced.push(shardId);
          io.stdout.write(`${shardId}: NOT reset, a client captured it meanwhile\n`);
          continue;
        }
        const notes = [
          ...(before !== undefined && held.includes(before) ? [`lease of ${ownerText(before)} revoked`] : []),
          ...(before?.finished === true ? ['finished: it stays finished and is not read again'] : []),
        ];
        io.stdout.write(`${shardId}: ${checkpointText(before?.checkpoint)} -> ${checkpointText(target)}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}\n`);
      }
      if (raced.length > 0) {
        io.stderr.write(`kinsumer reset: refused for ${raced.length} shards leased meanwhile: ${raced.join(', ')}\n`);
        return EXIT.refused;
      }
      io.stdout.write(`reset ${targets.length} shards of app ${app} to ${checkpointText(target)}\n`);
      return EXIT.ok;
    } finally {
      kinesis.destroy();
      dynamodb.destroy();
    }
  },
};
