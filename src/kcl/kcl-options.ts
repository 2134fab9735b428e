// The options importKclCheckpoints() and exportKclCheckpoints() share, and their checks.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { type SchedulerLike, asyncScheduler } from 'rxjs';
import { checkApplicationName } from '../dynamodb/table-names.js';
import { ConfigError } from '../errors/kinsumer-errors.js';
import type { StreamRef } from '../options.js';
import { resolveSource } from '../ports/stream-source.js';

/**
 * How long the tables are watched for a live fleet by default: longer than the KCL's default
 * failover time (10 s), whose workers renew every lease every ~3.3 s, and than kinsumer's default
 * `leaseTtlMs` (15 s).
 */
export const DEFAULT_KCL_WATCH_MS = 15_000;

/** Options of both {@link importKclCheckpoints} and {@link exportKclCheckpoints}. */
export interface KclMoveOptions {
  /** The AWS SDK v3 DynamoDB client of both the KCL's lease table and kinsumer's tables. */
  readonly dynamodb: DynamoDBClient;
  /** The AWS SDK v3 Kinesis client of the stream (its shards are listed; a checkpoint's record is read to tell a KPL aggregate). */
  readonly kinesis: KinesisClient;
  /** The KCL application's lease table (the KCL names it after its `applicationName`). */
  readonly leaseTable: string;
  /** The kinsumer consumer group (`<app>_checkpoints`, `<app>_clients`, `<app>_metadata`). */
  readonly applicationName: string;
  /** The stream's name (a one-stream group). Give this, {@link KclMoveOptions.streamArn} or {@link KclMoveOptions.streams}. */
  readonly streamName?: string;
  /** The stream's ARN (a one-stream group). Give this, {@link KclMoveOptions.streamName} or {@link KclMoveOptions.streams}. */
  readonly streamArn?: string;
  /**
   * A group that reads `streams` (its rows keyed `<account>:<stream>:<creationEpoch>:<shardId>`):
   * these of its streams (names or ARNs), or `'all'` — import: every stream the KCL table has
   * multi-stream leases of (named by name: a stream of another account needs its ARN in a list);
   * export: every stream the group has rows of.
   */
  readonly streams?: readonly string[] | 'all';
  /**
   * How long the rows are watched, on this machine's clock, to tell a live fleet from a stopped
   * one: a row that changes meanwhile has a live writer. Make it longer than the KCL fleet's
   * `failoverTimeMillis` / 3 (its renewal interval). Default 15000. Nothing to watch, no wait.
   */
  readonly watchMs?: number;
  /** Plan only: read everything, write nothing (not even a missing table). Default `false`. */
  readonly dryRun?: boolean;
  /** Write what the safety checks refuse; the plan marks each such line `forced`. Default `false`. */
  readonly force?: boolean;
  /** Called before the watch's wait, with what is watched (a CLI says so); the wait starts when its promise settles. */
  readonly onWatch?: (what: string, watchMs: number) => void | Promise<void>;
  /** The scheduler of the watch's wait (a virtual-time one in tests). Default `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

/** {@link KclMoveOptions}, checked. */
export interface CheckedMoveOptions {
  readonly applicationName: string;
  /** The one stream; `undefined` with `streams`. */
  readonly stream: StreamRef | undefined;
  readonly streams: readonly string[] | 'all' | undefined;
  readonly leaseTable: string;
  readonly watchMs: number;
  readonly dryRun: boolean;
  readonly force: boolean;
  readonly scheduler: SchedulerLike;
}

const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;
const COMMON = ['dynamodb', 'kinesis', 'leaseTable', 'applicationName', 'streamName', 'streamArn', 'streams', 'watchMs', 'dryRun', 'force', 'onWatch', 'scheduler'];

/** Checks the shared options (and that no unknown one is given); throws {@link ConfigError}. */
export function checkMoveOptions(options: KclMoveOptions, own: readonly string[], operation: string): CheckedMoveOptions {
  if (options === null || typeof options !== 'object') throw new ConfigError('options', 'must be an object');
  for (const key of Object.keys(options)) {
    if (!COMMON.includes(key) && !own.includes(key)) throw new ConfigError(key, `is not an option of ${operation}`);
  }
  for (const [option, kind] of [['dynamodb', 'DynamoDBClient'], ['kinesis', 'KinesisClient']] as const) {
    const client: unknown = options[option];
    if (typeof client !== 'object' || client === null || typeof (client as { send?: unknown }).send !== 'function') {
      throw new ConfigError(option, `is required (an AWS SDK v3 ${kind})`);
    }
  }
  if (typeof options.leaseTable !== 'string' || !TABLE_NAME.test(options.leaseTable)) {
    throw new ConfigError('leaseTable', 'must name a DynamoDB table (3-255 characters of A-Z a-z 0-9 _ . -)');
  }
  const watchMs: unknown = options.watchMs ?? DEFAULT_KCL_WATCH_MS;
  if (typeof watchMs !== 'number' || !Number.isSafeInteger(watchMs) || watchMs < 1) throw new ConfigError('watchMs', 'must be a whole number of milliseconds >= 1');
  for (const flag of ['dryRun', 'force'] as const) {
    if (options[flag] !== undefined && typeof options[flag] !== 'boolean') throw new ConfigError(flag, 'must be a boolean');
  }
  if (options.onWatch !== undefined && typeof options.onWatch !== 'function') throw new ConfigError('onWatch', 'must be a function');
  const scheduler = options.scheduler ?? asyncScheduler;
  if (typeof scheduler.now !== 'function' || typeof scheduler.schedule !== 'function') throw new ConfigError('scheduler', 'must be an RxJS SchedulerLike (now() and schedule())');
  // 'all' stands for the list the tables hold; anything else is checked as the streams option is.
  const { stream, streams } = options.streams === 'all'
    ? { stream: resolveSource({ ...options, streams: ['all'] }).stream, streams: 'all' as const }
    : resolveSource(options);
  if (typeof streams === 'function') throw new ConfigError('streams', 'must be a list of stream names or ARNs, or \'all\'');
  return {
    applicationName: checkApplicationName(options.applicationName),
    stream,
    streams,
    leaseTable: options.leaseTable,
    watchMs,
    dryRun: options.dryRun ?? false,
    force: options.force ?? false,
    scheduler,
  };
}
