// `kinsumer status`: the stream's shards side by side with the application's checkpoint rows.
// Read-only: one ListShards walk and one BatchGetItem per 100 shards, nothing written.
import { firstValueFrom } from 'rxjs';
import { Dynamo } from '../../dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../dynamodb/lease-store.js';
import type { CorruptCheckpointError } from '../../errors.js';
import { millisFromNanos } from '../../dynamodb/codec.js';
import { KinesisStream } from '../../kinesis/kinesis.js';
import { DEFAULTS, tableNames } from '../../options.js';
import type { CheckpointRow, ShardInfo } from '../../ports.js';
import { clientSettings, dynamodbClient, kinesisClient } from '../clients.js';
import { EXIT, type Command } from '../command.js';
import { applicationOption, integerOption, streamOption } from '../common-options.js';
import { type CheckpointJson, ageText, checkpointJson, checkpointText, renderTable } from '../format.js';

/** One shard as `status` sees it. */
export interface ShardStatus {
  readonly shard: ShardInfo;
  /** `undefined`: no checkpoint row (never captured), or a corrupt one (see `corrupt`). */
  readonly row: CheckpointRow | undefined;
  /** The lease holder is live: it renewed within the lease TTL. */
  readonly ownerLive: boolean;
  readonly lastUpdateMs: number | undefined;
  readonly ageMs: number | undefined;
  /** Why the row could not be decoded, when it is corrupt. */
  readonly corrupt: string | undefined;
}

/** The status of every shard, in ListShards order. Pure: rows and clock in. */
export function shardStatuses(
  shards: readonly ShardInfo[], rows: readonly CheckpointRow[], corrupt: ReadonlyMap<string, string>, nowMs: number, leaseTtlMs: number,
): ShardStatus[] {
  const byShard = new Map(rows.map((row) => [row.shardId, row]));
  return shards.map((shard) => {
    const row = byShard.get(shard.shardId);
    const lastUpdateMs = row?.lastUpdateNs === undefined ? undefined : millisFromNanos(row.lastUpdateNs);
    const ageMs = lastUpdateMs === undefined ? undefined : nowMs - lastUpdateMs;
    // An estimate for humans: the row's age by this machine's clock. A one-shot command has no
    // history to judge by observation as consumers do (src/row-observer.ts), and status decides
    // nothing; with clocks that disagree, an owner may show as expired while it is live.
    const ownerLive = row?.ownerId !== undefined && ageMs !== undefined && ageMs < leaseTtlMs;
    return { shard, row, ownerLive, lastUpdateMs, ageMs, corrupt: corrupt.get(shard.shardId) };
  });
}

/** One shard in `status --json`: plain JSON values, `null` for "none". */
export interface ShardStatusJson {
  readonly shardId: string;
  readonly parentShardIds: readonly string[];
  /** `false` once the shard was closed by a split or merge. */
  readonly open: boolean;
  /** The lease holder; `live` is `false` once it was not renewed for the lease TTL. */
  readonly owner: { readonly id: string; readonly name: string | null; readonly live: boolean } | null;
  readonly checkpoint: CheckpointJson | null;
  readonly finished: boolean;
  /** The row's last capture, commit, renewal or release (ISO 8601), and how long ago it was. */
  readonly lastUpdate: string | null;
  readonly lastUpdateAgeMs: number | null;
  readonly leaseCounter: number | null;
  readonly lastOwnerId: string | null;
  readonly corrupt: string | null;
}

export function statusJson(status: ShardStatus): ShardStatusJson {
  const { shard, row } = status;
  return {
    shardId: shard.shardId,
    parentShardIds: shard.parentShardIds,
    open: shard.open,
    owner: row?.ownerId === undefined ? null : { id: row.ownerId, name: row.ownerName ?? null, live: status.ownerLive },
    checkpoint: checkpointJson(row?.checkpoint),
    finished: row?.finished ?? false,
    lastUpdate: status.lastUpdateMs === undefined ? null : new Date(status.lastUpdateMs).toISOString(),
    lastUpdateAgeMs: status.ageMs ?? null,
    leaseCounter: row?.leaseCounter ?? null,
    lastOwnerId: row?.lastOwnerId ?? null,
    corrupt: status.corrupt ?? null,
  };
}

/** The human table of `status`. */
export function statusTable(statuses: readonly ShardStatus[]): string {
  const rows = statuses.map(({ shard, row, ownerLive, ageMs, corrupt }) => [
    shard.shardId,
    shard.parentShardIds.length === 0 ? '-' : shard.parentShardIds.join(','),
    ownerText(row, ownerLive),
    corrupt === undefined ? checkpointText(row?.checkpoint) : `CORRUPT (${corrupt})`,
    row?.finished === true ? 'yes' : shard.open ? 'no' : 'no (closed)',
    ageMs === undefined ? '-' : `${ageText(ageMs)} ago`,
  ]);
  return renderTable(['SHARD', 'PARENTS', 'OWNER', 'CHECKPOINT', 'FINISHED', 'UPDATED'], rows);
}

function ownerText(row: CheckpointRow | undefined, live: boolean): string {
  if (row?.ownerId === undefined) return '-';
  const who = row.ownerName === undefined || row.ownerName === row.ownerId ? row.ownerId : `${row.ownerName} (${row.ownerId})`;
  return live ? who : `${who} [expired]`;
}

export const statusCommand: Command = {
  name: 'status',
  summary: 'show each shard of the stream with its owner, checkpoint, finished flag and last update',
  usage: 'kinsumer status --stream <name|arn> --app <name> [--json] [--lease-ttl-ms N]',
  options: {
    json: { type: 'boolean' },
    'lease-ttl-ms': { type: 'string' },
  },
  optionHelp: {
    json: 'print JSON ({ stream, app, shards: [...] }) instead of a table',
    'lease-ttl-ms': `the application's leaseTtlMs: owners not heard from for this long show as expired (default ${DEFAULTS.leaseTtlMs})`,
  },
  required: ['stream', 'app'],
  async run(values, io) {
    const app = applicationOption(values);
    const stream = streamOption(values);
    const leaseTtlMs = integerOption(values, 'lease-ttl-ms', DEFAULTS.leaseTtlMs);
    const settings = clientSettings(values);
    const kinesis = kinesisClient(settings);
    const dynamodb = dynamodbClient(settings);
    try {
      const shards = await firstValueFrom(new KinesisStream(kinesis, stream).listShards());
      const corrupt = new Map<string, string>();
      const store = new DynamoLeaseStore({
        dynamo: new Dynamo(dynamodb), table: tableNames(app).checkpoints, clientId: 'kinsumer-cli', clientName: 'kinsumer-cli',
        leaseTtlMs, now: Date.now, onCorruptRow: (error: CorruptCheckpointError) => corrupt.set(error.shardId, error.message),
      });
      const rows = await firstValueFrom(store.readMany(shards.map((s) => s.shardId)));
      const statuses = shardStatuses(shards, rows, corrupt, Date.now(), leaseTtlMs);
      if (values.json === true) {
        io.stdout.write(`${JSON.stringify({ stream: stream.streamArn ?? stream.streamName, app, shards: statuses.map(statusJson) }, null, 2)}\n`);
      } else {
        const open = statuses.filter((s) => s.shard.open).length;
        const held = statuses.filter((s) => s.ownerLive).length;
        io.stdout.write(`stream ${stream.streamArn ?? stream.streamName}, app ${app}: ${statuses.length} shards (${open} open), ${held} leased by live clients\n\n`);
        io.stdout.write(statusTable(statuses));
      }
      return EXIT.ok;
    } finally {
      kinesis.destroy();
      dynamodb.destroy();
    }
  },
};
