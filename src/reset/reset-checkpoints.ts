// resetCheckpoints(): the operator's reset as a function (the CLI's `reset` calls it). Moves the
// checkpoints of a stream's shards to LATEST, TRIM_HORIZON or a time; every reset is a fence (the
// owner is removed and the lease counter moves), so no former owner can write over it.
//
// Who is a live owner is judged as the consumers judge it, by local observation: a one-shot call
// has no history, so when (and only when) an unforced reset finds leased rows, it watches them for
// one lease TTL on this machine's monotonic clock (differences only, never against the owners' LastUpdate):
// a row that changed has a live owner and blocks the reset; one that stood still belongs to a
// stopped or crashed consumer. Stopped consumers release their leases, so the usual reset (after
// stopping the consumers) does not wait.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { firstValueFrom, lastValueFrom, timer } from 'rxjs';
import { millisFromNanos } from '../dynamodb/codec.js';
import { Dynamo } from '../dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../dynamodb/lease-store.js';
import { DynamoMembershipStore } from '../dynamodb/membership-store.js';
import { checkApplicationName, tableNames } from '../dynamodb/table-names.js';
import { ConfigError, type CorruptCheckpointError, LeaseHeldError } from '../errors/kinsumer-errors.js';
import { KinesisStream } from '../kinesis/kinesis.js';
import { DEFAULTS, type StreamRef } from '../options.js';
import { parseShardKey } from '../ports/stream-key.js';
import { resolveSource } from '../ports/stream-source.js';
import { HOST_CLOCK } from '../ports/clock.js';
import type { CheckpointRow, StoredCheckpoint } from '../ports/lease-store.js';
import { startingPositionOf } from '../reading/start-position.js';
import { checkGroupKind, clearRow, listedKeys, named, rowsOf } from './stream-rows.js';
import type { InitialPosition, StartingPosition } from '../types.js';

/** Options of {@link resetCheckpoints}. */
export interface ResetCheckpointsOptions {
  /** The AWS SDK v3 DynamoDB client of the application's tables. */
  readonly dynamodb: DynamoDBClient;
  /** The AWS SDK v3 Kinesis client of the stream (its shards are listed, nothing is read). */
  readonly kinesis: KinesisClient;
  /** The consumer group whose checkpoints move (`<app>_checkpoints`). */
  readonly applicationName: string;
  /** The stream's name. Give this, {@link ResetCheckpointsOptions.streamArn} or {@link ResetCheckpointsOptions.streams}. */
  readonly streamName?: string;
  /** The stream's ARN. Give this, {@link ResetCheckpointsOptions.streamName} or {@link ResetCheckpointsOptions.streams}. */
  readonly streamArn?: string;
  /**
   * A group that reads `streams`: the streams (names or ARNs) whose shards are reset (their keys,
   * `<account>:<stream>:<creationEpoch>:<shardId>`) — one of them, or several.
   */
  readonly streams?: readonly string[];
  /**
   * Where the shards' next owners start reading: `'TRIM_HORIZON'`, `'LATEST'`, or `{ timestamp }`
   * (the first record that arrived at or after it; not in the future). Required unless `clear`.
   */
  readonly to?: InitialPosition;
  /**
   * With `streams`, instead of `to`: delete every checkpoint row of those streams, in every
   * incarnation (a stream deleted and created again leaves its old rows): a stream dropped from
   * the list leaves its rows, kept in case it comes back; this is how they go. The stream need not
   * exist. A stream still listed starts again from `initialPosition`. Default `false`.
   */
  readonly clear?: boolean;
  /** Only these shards (with `streams`: keys, or a shard's own id when one stream is given). Default: every shard the stream lists. */
  readonly shardIds?: readonly string[];
  /**
   * Reset shards whose lease a live client holds too (it loses the lease and reads again from the
   * new checkpoint). Without it, a live lease on any of the shards makes the call change nothing;
   * to tell live owners from dead ones, leased shards are then watched for `leaseTtlMs` first.
   * Default `false`.
   */
  readonly force?: boolean;
  /**
   * The application's `leaseTtlMs`: a leased row seen unchanged for this long has no live owner.
   * An unforced reset that finds leased shards waits this long before it decides. Default 15000.
   */
  readonly leaseTtlMs?: number;
  /** Called when an unforced reset is about to watch leased shards for `watchMs` (a CLI says so). */
  readonly onWatch?: (shardIds: readonly string[], watchMs: number) => void;
}

/** What {@link resetCheckpoints} did to one shard. */
export interface ShardReset {
  /** The shard. */
  readonly shardId: string;
  /**
   * `'reset'`: its checkpoint moved, its owner (if any) was removed and its lease counter moved.
   * `'held'`: not reset, a live client holds the lease (and `force` was not given).
   * `'captured'`: not reset, a client captured it between the check and the write.
   * `'skipped'`: not reset, because another shard was `'held'` (an unforced reset is all or nothing).
   * `'cleared'`: (`clear`) its row was deleted.
   */
  readonly outcome: 'reset' | 'held' | 'captured' | 'skipped' | 'cleared';
  /** Its checkpoint before, as a new owner would have started from it; `undefined` for none. */
  readonly previous: StartingPosition | undefined;
  /**
   * The client that held the lease: live (its row changed while it was watched) when `outcome` is
   * `'held'`; with `force`, whoever the row named, live or not (a forced reset does not wait to find
   * out), and revoked when `outcome` is `'reset'`.
   */
  readonly liveOwner?: {
    /** The owner's `clientId`. */
    readonly clientId: string;
    /** The owner's `clientName`, when the row has one. */
    readonly clientName?: string;
    /** The owner's last renewal (its `LastUpdate`, written on its own clock: for humans). */
    readonly renewedAt?: Date;
  };
  /** The shard was closed and fully consumed: it stays finished and is not read again. */
  readonly finished: boolean;
  /** Its row could not be read (why, in words); a reset overwrites the unreadable checkpoint. */
  readonly corrupt?: string;
}

/** The result of {@link resetCheckpoints}: one entry per shard, in the order of the stream's shard list. */
export interface ResetCheckpointsResult {
  /** `true` when every shard was reset. */
  readonly done: boolean;
  /** What happened to each shard. */
  readonly shards: readonly ShardReset[];
}

/** The client id the reset's lease store uses; it never captures, so no row ever names it as owner. */
const RESET_CLIENT_ID = 'kinsumer-reset';

/** Watched a little longer than the TTL, so a timer that fires a hair early does not take a dead owner for live. */
const WATCH_MARGIN_MS = 100;

const KNOWN_OPTIONS: ReadonlySet<string> = new Set([
  'dynamodb', 'kinesis', 'applicationName', 'streamName', 'streamArn', 'streams', 'to', 'clear', 'shardIds', 'force', 'leaseTtlMs', 'onWatch',
]);

/**
 * Moves the checkpoints of a stream's shards (all, or `shardIds`) to `to`, what `kinsumer reset`
 * does. Each reset is a fence: the shard's owner is removed and its lease counter moves, so a
 * consumer that held the lease — live, or paused past its TTL — can never write over the reset;
 * the shard's next owner starts at `to`. A finished shard stays finished.
 *
 * Without `force`, nothing is changed while a live client holds any of the shards (they come back
 * as `'held'`, the others as `'skipped'`): stop the consumers first, or wait until their leases
 * expire. A live owner is one that renews: its clients row heartbeats (or, for a lease that lives
 * by its own row, that row changes); when shards are leased, the call watches the owners for
 * `leaseTtlMs` before it decides (no clock is compared with the owners'). A reset tells the owner
 * of each lease it takes through its clients row (`Revoked`), so a zombie that wakes drops it. With `force`, owners lose
 * their leases (`lease-lost` on their `events$`) and nothing waits.
 *
 * ```ts
 * const result = await resetCheckpoints({ dynamodb, kinesis, applicationName: 'app', streamName: 'events', to: 'TRIM_HORIZON' });
 * if (!result.done) console.log(result.shards.filter((s) => s.outcome !== 'reset'));
 * ```
 *
 * @throws ConfigError for a bad option, or a shard id the stream does not list.
 * @throws StreamNotFoundError, TableNotFoundError, or the AWS error (as `cause` of a `KinsumerError`
 *   or as is) when a call fails; shards reset before the failure stay reset.
 */
export async function resetCheckpoints(options: ResetCheckpointsOptions): Promise<ResetCheckpointsResult> {
  const checked = checkOptions(options);
  const { to, force, leaseTtlMs } = checked;
  const dynamo = new Dynamo(options.dynamodb);
  const tables = tableNames(checked.applicationName);
  await checkGroupKind(dynamo, tables.metadata, checked.streams !== undefined);
  const targets = await targetsOf(options.kinesis, dynamo, tables.checkpoints, checked);

  const corrupt = new Map<string, CorruptCheckpointError>();
  const clock = { now: () => HOST_CLOCK.wallNow(), elapsedNow: () => HOST_CLOCK.elapsedNow() };
  // The owners' clients rows, read with the lease rows: a lease captured in a member's life lives
  // as long as that life heartbeats (docs/architecture.md, "Liveness"). This reader never registers.
  const members = new DynamoMembershipStore({ dynamo, table: tables.clients, clientId: RESET_CLIENT_ID, clientName: RESET_CLIENT_ID, leaseTtlMs, ...clock });
  const store = new DynamoLeaseStore({
    dynamo, table: tables.checkpoints, members,
    clientId: RESET_CLIENT_ID, clientName: RESET_CLIENT_ID, leaseTtlMs, ...clock,
    onCorruptRow: (error) => corrupt.set(error.shardId, error),
  });
  const read = async () => {
    const rows = await firstValueFrom(store.readMany(targets));
    await firstValueFrom(members.liveClients());
    return new Map(rows.map((row) => [row.shardId, row]));
  };
  let rows = await read();
  const leased = targets.filter((id) => rows.get(id)?.ownerId !== undefined);
  if (!force && leased.length > 0) {
    // No history: watch the leased rows for one TTL. The store remembers what it read and when.
    options.onWatch?.(leased, leaseTtlMs + WATCH_MARGIN_MS);
    await firstValueFrom(timer(leaseTtlMs + WATCH_MARGIN_MS));
    rows = await read();
  }
  const live = new Set(force ? leased : targets.filter((id) => !store.available(id, rows.get(id))));
  const describe = (shardId: string, outcome: ShardReset['outcome']): ShardReset => {
    const row = rows.get(shardId);
    const problem = corrupt.get(shardId)?.message;
    return {
      shardId,
      outcome,
      previous: row?.checkpoint === undefined ? undefined : startingPositionOf(row.checkpoint),
      ...(row !== undefined && live.has(shardId) ? { liveOwner: liveOwner(row) } : {}),
      finished: row?.finished ?? false,
      ...(problem === undefined ? {} : { corrupt: problem }),
    };
  };
  if (live.size > 0 && !force) {
    return { done: false, shards: targets.map((id) => describe(id, live.has(id) ? 'held' : 'skipped')) };
  }
  const shards: ShardReset[] = [];
  for (const shardId of targets) {
    const outcome = to === undefined ? await clearOne(dynamo, tables.checkpoints, shardId, force) : await resetOne(store, shardId, to, force, corrupt.has(shardId));
    shards.push(describe(shardId, outcome));
  }
  return { done: shards.every((s) => s.outcome === 'reset' || s.outcome === 'cleared'), shards };
}

/** The shards to reset: the listed ones (of the stream, or keys of `streams`), or with `clear` every row of `streams`. */
async function targetsOf(kinesis: KinesisClient, dynamo: Dynamo, table: string, checked: CheckedOptions): Promise<string[]> {
  const { streams, shardIds } = checked;
  if (streams !== undefined && checked.to === undefined) return (await rowsOf(dynamo, table, streams)).filter((key) => shardIds === undefined || shardIds.includes(key));
  const stream = checked.stream === undefined ? undefined : new KinesisStream(kinesis, checked.stream);
  const listed = stream === undefined ? await listedKeys(kinesis, streams ?? []) : (await firstValueFrom(stream.listShards())).map((s) => s.shardId);
  // With one stream of a streams group, a shard may be named by its own id.
  const [only] = streams?.length === 1 ? streams : [];
  const keyOf = (id: string) => (only === undefined ? id : listed.find((key) => key === id || (named(only, key) && parseShardKey(key)?.shardId === id)) ?? id);
  const wanted = shardIds?.map(keyOf);
  const unknown = wanted?.filter((id) => !listed.includes(id)) ?? [];
  if (unknown.length > 0) throw new ConfigError('shardIds', `not a shard of ${stream === undefined ? `streams ${(streams ?? []).join(', ')}` : `stream ${stream.streamLabel}`}: ${unknown.join(', ')}`);
  return wanted === undefined ? listed : listed.filter((id) => wanted.includes(id));
}

async function clearOne(dynamo: Dynamo, table: string, shardId: string, force: boolean): Promise<ShardReset['outcome']> {
  for (let attempt = 1; ; attempt += 1) {
    if (await clearRow(dynamo, table, shardId, force)) return 'cleared';
    if (!force || attempt >= FORCED_ATTEMPTS) return 'captured';
  }
}

/** Forced, a row that changed between the reset's read and its write is read and fenced again. */
const FORCED_ATTEMPTS = 3;

async function resetOne(store: DynamoLeaseStore, shardId: string, to: StoredCheckpoint, force: boolean, corrupt: boolean): Promise<ShardReset['outcome']> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await lastValueFrom(store.resetCheckpoint(shardId, to, { force }), { defaultValue: undefined });
      return 'reset';
    } catch (error) {
      if (!(error instanceof LeaseHeldError)) throw error;
      // A client captured it after the check (or, unforced, the corrupt row's owner could not be judged).
      if (!force || attempt >= FORCED_ATTEMPTS) return corrupt && !force ? 'held' : 'captured';
    }
  }
}

interface CheckedOptions {
  readonly applicationName: string;
  /** The one stream; `undefined` with `streams`. */
  readonly stream: StreamRef | undefined;
  readonly streams: readonly string[] | undefined;
  /** `undefined`: clear the rows. */
  readonly to: StoredCheckpoint | undefined;
  readonly shardIds: readonly string[] | undefined;
  readonly force: boolean;
  readonly leaseTtlMs: number;
}

function checkOptions(options: ResetCheckpointsOptions): CheckedOptions {
  if (options === null || typeof options !== 'object') throw new ConfigError('options', 'must be an object');
  for (const key of Object.keys(options)) {
    if (!KNOWN_OPTIONS.has(key)) throw new ConfigError(key, 'is not a resetCheckpoints option');
  }
  for (const [option, kind] of [['dynamodb', 'DynamoDBClient'], ['kinesis', 'KinesisClient']] as const) {
    const client: unknown = options[option];
    if (typeof client !== 'object' || client === null || typeof (client as { send?: unknown }).send !== 'function') {
      throw new ConfigError(option, `is required (an AWS SDK v3 ${kind})`);
    }
  }
  if (options.onWatch !== undefined && typeof options.onWatch !== 'function') throw new ConfigError('onWatch', 'must be a function');
  const force: unknown = options.force ?? false;
  if (typeof force !== 'boolean') throw new ConfigError('force', 'must be a boolean');
  const leaseTtlMs: unknown = options.leaseTtlMs ?? DEFAULTS.leaseTtlMs;
  if (typeof leaseTtlMs !== 'number' || !Number.isFinite(leaseTtlMs) || leaseTtlMs <= 0) {
    throw new ConfigError('leaseTtlMs', 'must be a positive finite number of milliseconds');
  }
  const { stream, streams } = resolveSource(options);
  if (typeof streams === 'function') throw new ConfigError('streams', 'must be a list of stream names or ARNs');
  const clear: unknown = options.clear ?? false;
  if (typeof clear !== 'boolean') throw new ConfigError('clear', 'must be a boolean');
  if (clear && streams === undefined) throw new ConfigError('clear', 'is for a group that reads streams: give streams (a one-stream group resets, it does not clear)');
  if (clear && options.to !== undefined) throw new ConfigError('to', 'give to or clear, not both');
  return {
    applicationName: checkApplicationName(options.applicationName),
    stream,
    streams,
    to: clear ? undefined : resetTarget(options.to, Date.now()),
    shardIds: checkShardIds(options.shardIds),
    force,
    leaseTtlMs,
  };
}

function resetTarget(to: unknown, nowMs: number): StoredCheckpoint {
  if (to === 'LATEST' || to === 'TRIM_HORIZON') return { type: to };
  const rule = "must be 'TRIM_HORIZON', 'LATEST' or { timestamp: Date }";
  if (typeof to !== 'object' || to === null || !('timestamp' in to)) throw new ConfigError('to', rule);
  const { timestamp } = to;
  if (!(timestamp instanceof Date) || !Number.isFinite(timestamp.getTime())) throw new ConfigError('to', `${rule}; timestamp must be a valid Date`);
  // Kinesis refuses an AT_TIMESTAMP iterator beyond its clock: the shard could not be read.
  if (timestamp.getTime() > nowMs) throw new ConfigError('to', `timestamp ${timestamp.toISOString()} is in the future`);
  return { type: 'AT_TIMESTAMP', timestamp };
}

function checkShardIds(value: unknown): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0 || !value.every((id) => typeof id === 'string' && id !== '')) {
    throw new ConfigError('shardIds', 'must be a non-empty array of shard ids');
  }
  return [...new Set(value as string[])];
}

function liveOwner(row: CheckpointRow): NonNullable<ShardReset['liveOwner']> {
  return {
    clientId: row.ownerId ?? '',
    ...(row.ownerName === undefined ? {} : { clientName: row.ownerName }),
    ...(row.lastUpdateNs === undefined ? {} : { renewedAt: new Date(millisFromNanos(row.lastUpdateNs)) }),
  };
}
