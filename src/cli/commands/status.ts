// `kinsumer status`: the group at a glance — its members (clients table) and leader, and each shard
// of the stream with its owner, checkpoint, lag and last progress. Read-only (see status-read.ts
// for what it reads); `--watch` reads again every `--interval` seconds.
import { setTimeout as sleep } from 'node:timers/promises';
import { millisFromNanos } from '../../dynamodb/codec.js';
import { Dynamo } from '../../dynamodb/dynamo.js';
import { KinesisStream } from '../../kinesis/kinesis.js';
import { kinesisStreamSet } from '../../kinesis/kinesis-source.js';
import { DEFAULTS } from '../../options.js';
import type { Leader } from '../../ports/coordination.js';
import type { CheckpointRow } from '../../ports/lease-store.js';
import type { ShardInfo } from '../../ports/stream.js';
import { clientSettings, dynamodbClient, kinesisClient } from '../clients.js';
import { type CliIo, EXIT, type Command, UsageError } from '../command.js';
import { STREAMS_HELP, STREAMS_OPTION, applicationOption, groupStreamsOption, integerOption, textOption } from '../common-options.js';
import { type CheckpointJson, checkpointJson } from '../format.js';
import { wrapText } from '../wrap.js';
import { type CheckpointLag, type ClientRow, type GroupSnapshot, readGroup } from './status-read.js';
import { streamSections, streamShardJson } from './status-streams.js';
import { STATUS_WIDTH, behindOf, membersTable, membersView, shardsView, statusHeader, statusTable, watchLine } from './status-view.js';

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
  /** When the checkpoint last moved (`CheckpointUpdate`), and how long ago; `undefined`: never, or a row written by the Go kinsumer. */
  readonly advancedMs?: number | undefined;
  readonly advancedAgeMs?: number | undefined;
  /** The checkpointed record read back (its arrival, the read's MillisBehindLatest), or why it could not be. */
  readonly lag?: CheckpointLag | { readonly error: string } | undefined;
}

/** The status of every shard, in ListShards order. Pure: rows and clock in. */
export function shardStatuses(
  shards: readonly ShardInfo[], rows: readonly CheckpointRow[], corrupt: ReadonlyMap<string, string>, nowMs: number, leaseTtlMs: number,
  lags: ReadonlyMap<string, CheckpointLag | { readonly error: string }> = new Map(),
  clients: readonly ClientRow[] = [],
): ShardStatus[] {
  const byShard = new Map(rows.map((row) => [row.shardId, row]));
  const byClient = new Map(clients.map((client) => [client.id, client]));
  return shards.map((shard) => {
    const row = byShard.get(shard.shardId);
    const lastUpdateMs = row?.lastUpdateNs === undefined ? undefined : millisFromNanos(row.lastUpdateNs);
    const ageMs = lastUpdateMs === undefined ? undefined : nowMs - lastUpdateMs;
    // An estimate for humans: the row's age by this machine's clock. A one-shot command has no
    // history to judge by observation as consumers do (src/lease/row-observer.ts), and status decides
    // nothing; with clocks that disagree, an owner may show as expired while it is live.
    // A lease captured in a member's life lives by that member's clients row (docs/liveness.md).
    const life = row?.ownerIncarnation === undefined || row.ownerId === undefined ? undefined : byClient.get(row.ownerId);
    const lifeAgeMs = life === undefined || life.incarnation !== row?.ownerIncarnation ? undefined : nowMs - millisFromNanos(life.lastUpdateNs);
    const ownerLive = row?.ownerIncarnation === undefined
      ? row?.ownerId !== undefined && ageMs !== undefined && ageMs < leaseTtlMs
      : lifeAgeMs !== undefined && lifeAgeMs < leaseTtlMs;
    const advancedMs = row?.checkpointUpdateNs === undefined ? undefined : millisFromNanos(row.checkpointUpdateNs);
    return {
      shard, row, ownerLive, lastUpdateMs, ageMs, corrupt: corrupt.get(shard.shardId),
      advancedMs, advancedAgeMs: advancedMs === undefined ? undefined : nowMs - advancedMs, lag: lags.get(shard.shardId),
    };
  });
}

/** One member of the group, from its clients row. */
export interface MemberStatus {
  readonly id: string;
  readonly name: string | undefined;
  readonly lastHeartbeatMs: number;
  /** How long ago it heartbeated, by this machine's clock (an estimate, as for owners). */
  readonly ageMs: number;
  /** It heartbeated within the lease TTL. */
  readonly live: boolean;
  /** Shards whose checkpoint row names it as a live owner. */
  readonly shards: number;
  /** It holds the leader lock. */
  readonly leader: boolean;
  /** Its process's instance id; `undefined` for a Go kinsumer client (its row has none). */
  readonly instanceId: string | undefined;
  /** The library that wrote its row (`kinsumer-ts/<version>`); `undefined` for a Go kinsumer client. */
  readonly library: string | undefined;
  /** It drains (drain(), or `kinsumer drain`): it hands its leases over and takes none. */
  readonly draining?: boolean;
}

/** The members, by id. Pure. */
export function memberStatuses(
  clients: readonly ClientRow[], shards: readonly ShardStatus[], leader: Leader | undefined, nowMs: number, leaseTtlMs: number,
): MemberStatus[] {
  return clients.map((client) => {
    const lastHeartbeatMs = millisFromNanos(client.lastUpdateNs);
    const ageMs = nowMs - lastHeartbeatMs;
    return {
      id: client.id,
      name: client.name,
      lastHeartbeatMs,
      ageMs,
      live: ageMs < leaseTtlMs,
      shards: shards.filter((s) => s.ownerLive && s.row?.ownerId === client.id).length,
      leader: leader?.id === client.id,
      instanceId: client.instanceId,
      library: client.library,
      ...(client.draining === true || client.drainRequested === true ? { draining: true } : {}),
    };
  });
}

/** One shard in `status --json`: plain JSON values, `null` for "none". */
export interface ShardStatusJson {
  /** The shard (with `--streams`, its key `<account>:<stream>:<creationEpoch>:<shardId>`). */
  readonly shardId: string;
  /** With `--streams`: the shard's stream. */
  readonly streamName?: string;
  readonly parentShardIds: readonly string[];
  /** `false` once the shard was closed by a split or merge. */
  readonly open: boolean;
  /** The lease holder; `live` is `false` once it was not renewed for the lease TTL. */
  readonly owner: { readonly id: string; readonly name: string | null; readonly live: boolean } | null;
  /** The stored checkpoint, sequence numbers in full. */
  readonly checkpoint: CheckpointJson | null;
  readonly finished: boolean;
  /** The row's last capture, commit, renewal or release (ISO 8601), and how long ago it was. */
  readonly lastUpdate: string | null;
  readonly lastUpdateAgeMs: number | null;
  /** When the checkpoint last moved (ISO 8601), and how long ago: the shard's last progress. */
  readonly checkpointAdvanced: string | null;
  readonly checkpointAdvancedAgeMs: number | null;
  /**
   * The checkpointed record read back: when it arrived in the stream, how old it is, and how far
   * that read was behind the tip (`MillisBehindLatest`). `null` without a stored position.
   */
  readonly lag: {
    readonly checkpointArrivedAt: string | null;
    readonly checkpointRecordAgeMs: number | null;
    /** `null` also where the server cannot tell: it said 0 though a record follows the checkpoint (kinesalite always says 0). */
    readonly millisBehindLatest: number | null;
    /** Whether a record follows the checkpointed one; read only when the server said 0 behind (`null` otherwise). */
    readonly recordAfterCheckpoint: boolean | null;
  } | null;
  /** Why the lag could not be read (the reads of the other shards go on). */
  readonly lagError: string | null;
  readonly leaseCounter: number | null;
  readonly lastOwnerId: string | null;
  readonly corrupt: string | null;
}

/** One member in `status --json`. */
export interface MemberStatusJson {
  readonly id: string;
  readonly name: string | null;
  /** Its last heartbeat (ISO 8601, its own clock) and how long ago that was by this machine's. */
  readonly lastHeartbeat: string;
  readonly heartbeatAgeMs: number;
  readonly live: boolean;
  readonly shards: number;
  readonly leader: boolean;
  readonly instanceId: string | null;
  /** The library that wrote its row; `null` for a Go kinsumer client. */
  readonly library: string | null;
}

/** `status --json`. */
export interface StatusJson {
  /** `--stream`: the stream. */
  readonly stream?: string;
  /** `--streams`: the group's streams, as given. */
  readonly streams?: readonly string[];
  readonly app: string;
  /** When it was read (this machine's clock). */
  readonly at: string;
  /** The holder of the leader lock; `live` is `false` once the lock was not renewed for the lease TTL. */
  readonly leader: { readonly id: string; readonly name: string | null; readonly live: boolean } | null;
  readonly members: readonly MemberStatusJson[];
  /** The assignment the group follows: `go` while a live member is a Go kinsumer client, else `sticky`. */
  readonly assignment: 'sticky' | 'go';
  readonly shards: readonly ShardStatusJson[];
  /** Clients rows that could not be read. */
  readonly corruptMembers: readonly { readonly id: string; readonly problem: string }[];
}

export function statusJson(status: ShardStatus, nowMs?: number): ShardStatusJson {
  const { shard, row, lag } = status;
  const read = lag === undefined || 'error' in lag ? undefined : lag;
  return {
    shardId: shard.shardId,
    parentShardIds: shard.parentShardIds,
    open: shard.open,
    owner: row?.ownerId === undefined ? null : { id: row.ownerId, name: row.ownerName ?? null, live: status.ownerLive },
    checkpoint: checkpointJson(row?.checkpoint),
    finished: row?.finished ?? false,
    lastUpdate: status.lastUpdateMs === undefined ? null : new Date(status.lastUpdateMs).toISOString(),
    lastUpdateAgeMs: status.ageMs ?? null,
    checkpointAdvanced: status.advancedMs === undefined ? null : new Date(status.advancedMs).toISOString(),
    checkpointAdvancedAgeMs: status.advancedAgeMs ?? null,
    lag: read === undefined ? null : {
      checkpointArrivedAt: read.arrivedAt?.toISOString() ?? null,
      checkpointRecordAgeMs: read.arrivedAt === undefined || nowMs === undefined ? null : nowMs - read.arrivedAt.getTime(),
      millisBehindLatest: behindOf(read).kind === 'unknown' ? null : read.millisBehindLatest ?? null,
      recordAfterCheckpoint: read.recordAfter ?? null,
    },
    lagError: lag !== undefined && 'error' in lag ? lag.error : null,
    leaseCounter: row?.leaseCounter ?? null,
    lastOwnerId: row?.lastOwnerId ?? null,
    corrupt: status.corrupt ?? null,
  };
}

function memberJson(member: MemberStatus): MemberStatusJson {
  return {
    id: member.id,
    name: member.name ?? null,
    lastHeartbeat: new Date(member.lastHeartbeatMs).toISOString(),
    heartbeatAgeMs: member.ageMs,
    live: member.live,
    shards: member.shards,
    leader: member.leader,
    instanceId: member.instanceId ?? null,
    library: member.library ?? null,
  };
}

/**
 * The assignment the group follows, as its members decide it: the Go kinsumer's while any live
 * member's row lacks the library marker (a Go client), else the sticky one. Judged here by row age. Pure.
 */
export function groupAssignment(members: readonly Pick<MemberStatus, 'live' | 'library'>[]): 'sticky' | 'go' {
  return members.some((m) => m.live && m.library === undefined) ? 'go' : 'sticky';
}

/** How one refresh is shown. */
export interface StatusView {
  readonly stream: string;
  /** `--streams`: the streams of a group that reads several, as given (`stream` then labels them all). */
  readonly streams?: readonly string[] | undefined;
  readonly app: string;
  readonly leaseTtlMs: number;
  readonly json: boolean;
  readonly pretty: boolean;
  /** Every column, client ids in full, as wide as it takes; else 80 columns. */
  readonly wide: boolean;
  /** With `--watch`: the interval, for the line that says when this was read. */
  readonly watchIntervalMs?: number | undefined;
}

/** One refresh of `status`, as text or as JSON. Pure. */
export function renderStatus(snapshot: GroupSnapshot, view: StatusView): string {
  const { nowMs, leader } = snapshot;
  const shards = shardStatuses(snapshot.shards, snapshot.rows, snapshot.corrupt, nowMs, view.leaseTtlMs, snapshot.lags, snapshot.clients);
  const members = memberStatuses(snapshot.clients, shards, leader, nowMs, view.leaseTtlMs);
  const assignment = groupAssignment(members);
  // The lock's age by this machine's clock, as for owners: an estimate for humans.
  const leaderLive = leader !== undefined && nowMs - millisFromNanos(leader.lastUpdateNs) < view.leaseTtlMs;
  if (view.json) {
    const many = view.streams;
    const json: StatusJson = {
      ...(many === undefined ? { stream: view.stream } : { streams: many }),
      app: view.app,
      at: new Date(nowMs).toISOString(),
      leader: leader === undefined ? null : { id: leader.id, name: leader.name ?? null, live: leaderLive },
      members: members.map(memberJson),
      assignment,
      shards: shards.map((s) => (many === undefined ? statusJson(s, nowMs) : streamShardJson(statusJson(s, nowMs)))),
      corruptMembers: snapshot.corruptClients,
    };
    return `${view.pretty ? JSON.stringify(json, null, 2) : JSON.stringify(json)}\n`;
  }
  const [shardsPart, membersPart] = statusHeader({
    stream: view.stream, app: view.app, shards, members, assignment, many: view.streams !== undefined,
    leader: leader === undefined ? undefined : { text: leader.name ?? leader.id, live: leaderLive },
  });
  const text = (line: string) => (view.wide ? [line] : wrapText(line, STATUS_WIDTH, '  '));
  const lines = [
    ...(view.watchIntervalMs === undefined ? [] : [watchLine(nowMs, view.watchIntervalMs)]),
    ...(view.wide || shardsPart.length + 1 + membersPart.length <= STATUS_WIDTH
      ? [`${shardsPart} ${membersPart}`]
      : [...wrapText(shardsPart, STATUS_WIDTH, '  '), ...wrapText(`  ${membersPart}`, STATUS_WIDTH)]),
    '',
    (view.wide ? membersTable(members) : membersView(members)).trimEnd(),
    ...snapshot.corruptClients.flatMap((c) => text(`clients row ${c.id} is corrupt: ${c.problem}`)),
    '',
    ...(view.streams === undefined
      ? [(view.wide ? statusTable(shards, nowMs) : shardsView(shards, nowMs, view.leaseTtlMs)).trimEnd()]
      : streamSections(view.streams, shards, view, nowMs).map((section) => section.trimEnd()).join('\n\n').split('\n')),
  ];
  return `${lines.join('\n')}\n`;
}

/** Clears a terminal and puts the cursor home: `--watch` redraws in place. */
export const CLEAR_SCREEN = '\u001b[H\u001b[2J';

export const statusCommand: Command = {
  name: 'status',
  summary: 'show the group: its members and leader, and each shard with its owner, checkpoint, lag and last progress',
  usage: 'kinsumer status --stream <name|arn> --app <name> [--wide | --json] [--watch [--interval S]] [--lease-ttl-ms N]',
  options: {
    ...STREAMS_OPTION,
    wide: { type: 'boolean' },
    json: { type: 'boolean' },
    watch: { type: 'boolean' },
    interval: { type: 'string' },
    'lease-ttl-ms': { type: 'string' },
  },
  optionHelp: {
    streams: STREAMS_HELP,
    wide: 'every column (parents, finished, client ids in full, the checkpoint of a finished shard), as wide as it takes; the default view fits 80 columns',
    json: 'print JSON ({ stream (or streams), app, at, leader, members, shards }, sequence numbers in full) instead of tables',
    watch: 'read again every --interval seconds until Ctrl-C: redrawn in place on a terminal, a new block (a JSON line with --json) each time otherwise',
    interval: 'seconds between two reads with --watch (default 2; decimals allowed, at least 0.1)',
    'lease-ttl-ms': `the application's leaseTtlMs: owners and members not heard from for this long show as expired (default ${DEFAULTS.leaseTtlMs})`,
  },
  required: ['stream|streams', 'app'],
  async run(values, io) {
    const app = applicationOption(values);
    const group = groupStreamsOption(values);
    const leaseTtlMs = integerOption(values, 'lease-ttl-ms', DEFAULTS.leaseTtlMs);
    const watch = values.watch === true;
    const intervalMs = intervalOption(values);
    const json = values.json === true;
    const tty = io.stdout.isTTY === true;
    const settings = clientSettings(values);
    const kinesis = kinesisClient(settings);
    const dynamodb = dynamodbClient(settings);
    const wide = values.wide === true;
    if (wide && json) throw new UsageError('give --wide or --json, not both');
    const label = group.stream === undefined ? group.streams.join(', ') : group.stream.streamArn ?? group.stream.streamName;
    const view: StatusView = { stream: label, streams: group.streams, app, leaseTtlMs, json, pretty: !watch, wide, watchIntervalMs: watch ? intervalMs : undefined };
    // One port for every refresh: a stream set looks again at which stream each name is once a minute.
    const port = group.stream === undefined ? kinesisStreamSet(kinesis, group.streams) : new KinesisStream(kinesis, group.stream);
    const refresh = async () => renderStatus(await readGroup({ stream: port, dynamo: new Dynamo(dynamodb), app, leaseTtlMs }), view);
    try {
      // The first read decides: a missing table or stream is an error, not something to watch.
      const first = await refresh();
      if (!watch) {
        io.stdout.write(first);
        return EXIT.ok;
      }
      // A terminal is redrawn in place; a pipe gets one block after another (blank-line separated; JSON one per line).
      await watchLoop(io, first, refresh, intervalMs, tty && !json ? { redraw: true } : { redraw: false, separator: json ? '' : '\n' });
      return EXIT.ok;
    } finally {
      kinesis.destroy();
      dynamodb.destroy();
    }
  },
};

// Until the command's signal aborts (Ctrl-C, SIGTERM, a closed pipe). A failed read later on is
// printed and read again at the next tick: a watch outlives a throttled call.
async function watchLoop(
  io: CliIo, first: string, refresh: () => Promise<string>, intervalMs: number, output: { readonly redraw: true } | { readonly redraw: false; readonly separator: string },
): Promise<void> {
  let block = first;
  for (let n = 0; ; n += 1) {
    if (output.redraw) io.stdout.write(`${CLEAR_SCREEN}${block}`);
    else io.stdout.write(`${n === 0 ? '' : output.separator}${block}`);
    try {
      await sleep(intervalMs, undefined, { signal: io.signal });
    } catch {
      return;
    }
    try {
      block = await refresh();
    } catch (error) {
      if (io.signal.aborted) return;
      block = `kinsumer status: ${error instanceof Error ? error.message : String(error)} (reading again in ${intervalMs / 1000}s)\n`;
    }
  }
}

function intervalOption(values: Parameters<Command['run']>[0]): number {
  const text = textOption(values, 'interval');
  if (text === undefined) return 2000;
  const seconds = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(seconds >= 0.1)) throw new UsageError(`--interval must be a number of seconds, at least 0.1, not '${text}'`);
  return Math.round(seconds * 1000);
}
