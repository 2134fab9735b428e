// `kinsumer reset`: moves the application's checkpoints to LATEST, TRIM_HORIZON or a timestamp,
// through resetCheckpoints() (one implementation for the CLI and for programs). Refuses (exit 3)
// while a live client leases any of the shards: a running consumer would lose its lease in the
// middle of its work. A live owner is one whose lease row changes while the command watches it for
// --lease-ttl-ms (no clock is compared with the owners'), so an unforced reset of leased shards
// takes that long. --force resets those too (their owners are fenced and read again from the new
// checkpoint), without waiting.
import { DEFAULTS } from '../../options.js';
import type { StoredCheckpoint } from '../../ports/lease-store.js';
import { type ShardReset, resetCheckpoints } from '../../reset/reset-checkpoints.js';
import type { InitialPosition, StartingPosition } from '../../types.js';
import { clientSettings, dynamodbClient, kinesisClient } from '../clients.js';
import { EXIT, UsageError, type CliIo, type Command } from '../command.js';
import { STREAMS_HELP, STREAMS_OPTION, applicationOption, groupStreamsOption, integerOption, listOption, parseTimestamp, textOption } from '../common-options.js';
import { clientLabel } from '../../group/client-label.js';
import { ageText, checkpointText, counted } from '../format.js';
import { outputWidth, reportLines } from '../wrap.js';

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

function ownerText(owner: NonNullable<ShardReset['liveOwner']>): string {
  return clientLabel(owner.clientId, owner.clientName);
}

/** The shard's checkpoint before the reset, in the words `status` uses. */
function previousText(previous: StartingPosition | undefined): string {
  if (previous?.type !== 'AFTER_SEQUENCE_NUMBER') return checkpointText(previous);
  const { sequenceNumber, subSequenceNumber } = previous;
  return checkpointText({ type: 'position', position: subSequenceNumber === undefined ? { sequenceNumber } : { sequenceNumber, subSequenceNumber } }, { short: true });
}

function initialPosition(target: StoredCheckpoint): InitialPosition {
  if (target.type === 'AT_TIMESTAMP') return { timestamp: target.timestamp };
  if (target.type === 'position') throw new UsageError('--to cannot be a sequence number');
  return target.type;
}

export const resetCommand: Command = {
  name: 'reset',
  summary: 'move checkpoints to LATEST, TRIM_HORIZON or a timestamp (refused while leases are held, unless --force)',
  usage: 'kinsumer reset --stream <name|arn> --app <name> --to LATEST|TRIM_HORIZON|<ISO timestamp> [--shard <id>[,<id>...]] [--force]',
  options: {
    ...STREAMS_OPTION,
    to: { type: 'string' },
    clear: { type: 'boolean' },
    shard: { type: 'string' },
    force: { type: 'boolean' },
    'lease-ttl-ms': { type: 'string' },
  },
  optionHelp: {
    streams: `${STREAMS_HELP}: reset the shards of these of its streams`,
    to: 'LATEST, TRIM_HORIZON or an ISO 8601 timestamp such as 2026-01-31T12:00:00Z (or --clear, with --streams)',
    clear: 'with --streams, instead of --to: delete every checkpoint row of these streams (a stream dropped from the group\'s list keeps its rows until then; every incarnation of its name; the stream need not exist)',
    shard: 'only these shards (comma-separated); default every shard of the stream',
    force: 'reset shards leased by live clients too: their owners are fenced and read again from the new checkpoint',
    'lease-ttl-ms': `the application's leaseTtlMs: leased shards are watched this long, and an owner whose lease did not change meanwhile no longer holds it (default ${DEFAULTS.leaseTtlMs})`,
  },
  exitCodes: {
    [EXIT.ok]: 'checkpoints moved (or, with --clear, rows deleted)',
    [EXIT.failure]: 'an AWS error, or the stream or a table is missing',
    [EXIT.usage]: 'bad command line',
    [EXIT.refused]: 'refused: live clients hold leases (nothing changed; see --force)',
  },
  required: ['stream|streams', 'app', 'to|clear'],
  async run(values, io) {
    const app = applicationOption(values);
    const group = groupStreamsOption(values);
    const clear = values.clear === true;
    const to = textOption(values, 'to');
    if (clear && to !== undefined) throw new UsageError('give --to or --clear, not both');
    if (clear && group.streams === undefined) throw new UsageError('--clear is for a group that reads several streams (--streams)');
    const target = to === undefined ? undefined : parseResetTarget(to, Date.now());
    const only = listOption(values, 'shard');
    const force = values.force === true;
    const leaseTtlMs = integerOption(values, 'lease-ttl-ms', DEFAULTS.leaseTtlMs);
    const settings = clientSettings(values);
    const kinesis = kinesisClient(settings);
    const dynamodb = dynamodbClient(settings);
    // Every line at the terminal's width (80 in a pipe).
    const lines = (output: CliIo['stdout']) => (text: string) => output.write(reportLines(text.split('\n').filter((line) => line !== ''), outputWidth(output)));
    const out = lines(io.stdout);
    const err = lines(io.stderr);
    try {
      const { stream } = group;
      const which = stream === undefined ? { streams: group.streams } : stream.streamArn === undefined ? { streamName: stream.streamName } : { streamArn: stream.streamArn };
      const result = await resetCheckpoints({
        dynamodb, kinesis, applicationName: app, ...which, ...(target === undefined ? { clear: true } : { to: initialPosition(target) }), force, leaseTtlMs, ...(only === undefined ? {} : { shardIds: only }),
        onWatch: (leased, watchMs) => err(`kinsumer reset: ${leased.length === 1 ? '1 shard is leased; watching it' : `${leased.length} shards are leased; watching them`} for ${watchMs} ms to tell live owners from stopped ones...\n`),
      });
      const held = result.shards.filter((s) => s.outcome === 'held' && s.liveOwner !== undefined);
      if (held.length > 0) {
        err(`kinsumer reset: refused: ${held.length} of ${counted(result.shards.length, 'shard')} ${held.length === 1 ? 'is leased by a live client' : 'are leased by live clients'}:\n`);
        for (const shard of held) {
          const renewedAt = shard.liveOwner?.renewedAt?.getTime() ?? 0;
          err(`  ${shard.shardId}  ${ownerText(shard.liveOwner ?? { clientId: '?' })}, renewed ${ageText(Date.now() - renewedAt)} ago\n`);
        }
        err('Stop the consumers first (or wait until their leases expire), or reset anyway with --force.\nNothing was changed.\n');
        return EXIT.refused;
      }
      for (const shard of result.shards) {
        if (shard.outcome === 'captured') {
          out(`${shard.shardId}: NOT reset, a client captured it meanwhile\n`);
          continue;
        }
        if (shard.outcome === 'held') {
          out(`${shard.shardId}: NOT reset, its owner cannot be read (${shard.corrupt ?? 'corrupt row'}); reset it with --force\n`);
          continue;
        }
        // A corrupt row is overwritten by the reset: say what it was.
        if (shard.corrupt !== undefined) err(`kinsumer reset: ${shard.corrupt}; reset it\n`);
        if (target === undefined) {
          out(`${shard.shardId}: ${previousText(shard.previous)} -> row deleted${shard.liveOwner === undefined ? '' : ` (lease of ${ownerText(shard.liveOwner)} revoked)`}\n`);
          continue;
        }
        const notes = [
          ...(shard.liveOwner !== undefined ? [`lease of ${ownerText(shard.liveOwner)} revoked`] : []),
          ...(shard.finished ? ['finished: it stays finished and is not read again'] : []),
        ];
        out(`${shard.shardId}: ${previousText(shard.previous)} -> ${checkpointText(target)}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}\n`);
      }
      const missed = result.shards.filter((s) => s.outcome !== 'reset' && s.outcome !== 'cleared');
      if (missed.length > 0) {
        err(`kinsumer reset: refused for ${counted(missed.length, 'shard')}: ${missed.map((s) => s.shardId).join(', ')}\n`);
        return EXIT.refused;
      }
      out(target === undefined
        ? `cleared ${counted(result.shards.length, 'row')} of streams ${group.streams?.join(', ') ?? ''} of app ${app}\n`
        : `reset ${counted(result.shards.length, 'shard')} of app ${app} to ${checkpointText(target)}\n`);
      return EXIT.ok;
    } finally {
      kinesis.destroy();
      dynamodb.destroy();
    }
  },
};
