import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { asyncScheduler, type SchedulerLike } from 'rxjs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { DEFAULT_STALL_WARNING_MS } from './checkpoint/stall-clock.js';
import { checkApplicationName } from './dynamodb/table-names.js';
import { didYouMean } from './errors/did-you-mean.js';
import { ConfigError } from './errors/kinsumer-errors.js';
import { type Clock, schedulerClock } from './ports/clock.js';
import { resolveSource } from './ports/stream-source.js';
import type { MeterProviderLike, TracerProviderLike } from './telemetry/providers.js';
import { resolveLogger, resolveProvider, resolveStats } from './telemetry/observers.js';
import type { InitialPosition, Logger, StatReceiver } from './types.js';

/**
 * Options of `new Kinsumer(...)` and `kinsumer(...)`: the stream, by `streamName` or by
 * `streamArn`, or the several streams of `streams` (exactly one of the three: giving none or two
 * does not compile), and the {@link KinsumerSettings}. See the README's options table. To type
 * options built in parts, use `Omit<KinsumerSettings, ...> & StreamRef` (or `& StreamsRef`):
 * `Omit` on this union would lose the either/or.
 */
export type KinsumerOptions = (StreamRef | StreamsRef) & KinsumerSettings;

/** Every option of {@link KinsumerOptions} but the stream. */
export interface KinsumerSettings {
  /** Names the consumer group and its tables `<app>_clients`, `<app>_checkpoints`, `<app>_metadata`. */
  readonly applicationName: string;
  /** The application's own AWS SDK v3 Kinesis client. */
  readonly kinesis: KinesisClient;
  /** The application's own AWS SDK v3 DynamoDB client. */
  readonly dynamodb: DynamoDBClient;
  /** Stable id of this process in the group; a restarted process with the same id keeps its place. Default: a random UUID. */
  readonly clientId?: string;
  /** For humans (status, tables). Default: the host name. */
  readonly clientName?: string;
  /** Where shards without a checkpoint start. Default `'TRIM_HORIZON'`. */
  readonly initialPosition?: InitialPosition;
  /** Least time between two GetRecords calls on one shard, and the capture poll interval. Default 250, at least 200. */
  readonly throttleDelayMs?: number;
  /** Most often a shard's checkpoint is written. Default 1000. */
  readonly commitFrequencyMs?: number;
  /** Client heartbeat, membership and assignment refresh. Default 5000. */
  readonly shardCheckFrequencyMs?: number;
  /** The leader's shard-list refresh. Default 10000. */
  readonly leaderActionFrequencyMs?: number;
  /**
   * With `streams` only: how often the leader asks a `streams` function for the list, and checks
   * again which stream each listed name is (a stream deleted and created again is a new stream).
   * Default 60000, at least `leaderActionFrequencyMs`.
   */
  readonly streamCheckFrequencyMs?: number;
  /** A lease or client row not renewed for this long is expired. Default 15000. */
  readonly leaseTtlMs?: number;
  /**
   * Per shard: records emitted and not yet under the checkpoint (unacked, or acked behind an
   * unacked one) before reading pauses. Default 10000.
   */
  readonly maxInFlightRecords?: number;
  // ---- memory in bytes, data loss (design §9.1)
  /**
   * Per client: payload bytes of records fetched and not yet under a checkpoint (a page waiting for
   * room counts from its GetRecords), shared by the client's shards: each fetches while it holds less
   * than its fair share, and each may always hold one record, so a record larger than this is
   * delivered alone. Default 268435456 (256 MiB).
   */
  readonly maxInFlightBytes?: number;
  /**
   * A lease whose stored checkpoint lies behind the stream's trim horizon (the stream no longer keeps
   * the checkpoint's record: checked when the lease starts, docs/data-loss.md) emits `data-lost` and
   * logs an error. `'continue'` reads on from the oldest record kept; `'stop-shard'` ends that
   * shard's records with `DataLostError`, leaves its checkpoint as it is and keeps its lease unread
   * (until a reset, or the client stops). Default `'continue'`.
   */
  readonly onDataLoss?: 'continue' | 'stop-shard';
  /**
   * A shard whose checkpoint has not moved for this long while records are pending is reported
   * (`shard-stalled` event, a warning in the log), and again every time this much longer. Default 60000.
   */
  readonly stallWarningMs?: number;
  /** Bound on `stop()`: drain, final commits, releases. Default 30000. */
  readonly shutdownTimeoutMs?: number;
  /**
   * Bound on every call to AWS: a call unanswered this long is aborted and retried like any
   * transient fault (a `retrying` event). Default 10000.
   */
  readonly requestTimeoutMs?: number;
  /**
   * Bound on starting: a client that cannot check its tables and stream and join the group within
   * this long (DynamoDB or Kinesis unreachable) errors `records$` and `leases$` with
   * `StartTimeoutError` instead of retrying forever; one kept from starting because another live
   * process heartbeats with the same `clientId` errors with `ConfigError` after this long.
   * Default 60000, or twice `leaseTtlMs` when that is longer.
   */
  readonly startTimeoutMs?: number;
  /** `'polling'` (GetRecords, default) or `'fan-out'` (SubscribeToShard, enhanced fan-out). */
  readonly readMode?: 'polling' | 'fan-out';
  /** Name of the registered stream consumer in fan-out mode. Default: the application name. */
  readonly consumerName?: string;
  /** Create missing tables at start instead of failing with `TableNotFoundError`. Default `false`. */
  readonly createTables?: boolean;
  /**
   * A pino-compatible logger. Default: warnings and errors to stderr, one line each (a healthy run
   * prints nothing); pass `{ debug() {}, info() {}, warn() {}, error() {} }` for silence.
   */
  readonly logger?: Logger;
  /** Metrics callbacks. Default: none. */
  readonly stats?: StatReceiver;
  /**
   * Where the OpenTelemetry metrics go (meter scope `kinsumer`), when `@opentelemetry/api` is
   * installed. Default: the global meter provider, as it is when the client starts (the first subscribe).
   */
  readonly meterProvider?: MeterProviderLike;
  /**
   * Where the spans of `processRecords` / `processBatches` handler calls on this client's records
   * go (tracer scope `kinsumer`), when `@opentelemetry/api` is installed. Default: the global tracer provider.
   */
  readonly tracerProvider?: TracerProviderLike;
  /** RxJS scheduler for every timer (tests pass a virtual-time scheduler). Default `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * The wall clock (only written: `LastUpdate`, `CheckpointUpdate`) and the monotonic clock (every
   * expiry and every "for how long") this client reads: a seam for tests that step one host's wall
   * clock. Default: with no `scheduler` option or one of RxJS's own, `wallNow` is `Date.now()` and
   * `elapsedNow` is `performance.timeOrigin + performance.now()`; with another (a virtual-time
   * scheduler), both are its `now()`.
   */
  readonly clock?: Clock;
}

/** The options with every default filled in and every rule checked. */
export interface ResolvedOptions {
  /**
   * The stream, by name or by ARN: whichever of `streamName` and `streamArn` was given;
   * `undefined` in a group that reads `streams`.
   */
  readonly stream: StreamRef | undefined;
  /** The `streams` option (a frozen copy of a list); `undefined` in a one-stream group. */
  readonly streams: StreamList | undefined;
  /** Milliseconds; see {@link KinsumerOptions.streamCheckFrequencyMs}. */
  readonly streamCheckFrequencyMs: number;
  /** See {@link KinsumerOptions.applicationName}. */
  readonly applicationName: string;
  /** See {@link KinsumerOptions.kinesis}. */
  readonly kinesis: KinesisClient;
  /** See {@link KinsumerOptions.dynamodb}. */
  readonly dynamodb: DynamoDBClient;
  /** The given client id, or the random UUID generated for this instance. */
  readonly clientId: string;
  /** The given client name, or the host name. */
  readonly clientName: string;
  /** See {@link KinsumerOptions.initialPosition}; default `'TRIM_HORIZON'`. */
  readonly initialPosition: InitialPosition;
  /** Milliseconds; see {@link KinsumerOptions.throttleDelayMs}. */
  readonly throttleDelayMs: number;
  /** Milliseconds; see {@link KinsumerOptions.commitFrequencyMs}. */
  readonly commitFrequencyMs: number;
  /** Milliseconds; see {@link KinsumerOptions.shardCheckFrequencyMs}. */
  readonly shardCheckFrequencyMs: number;
  /** Milliseconds; see {@link KinsumerOptions.leaderActionFrequencyMs}. */
  readonly leaderActionFrequencyMs: number;
  /** Milliseconds; see {@link KinsumerOptions.leaseTtlMs}. */
  readonly leaseTtlMs: number;
  /** Records per shard; see {@link KinsumerOptions.maxInFlightRecords}. */
  readonly maxInFlightRecords: number;
  /** Payload bytes per client; see {@link KinsumerOptions.maxInFlightBytes}. */
  readonly maxInFlightBytes: number;
  /** See {@link KinsumerOptions.onDataLoss}; default `'continue'`. */
  readonly onDataLoss: 'continue' | 'stop-shard';
  /** Milliseconds; see {@link KinsumerOptions.shutdownTimeoutMs}. */
  readonly shutdownTimeoutMs: number;
  /** Milliseconds; see {@link KinsumerOptions.stallWarningMs}. */
  readonly stallWarningMs: number;
  /** Milliseconds; see {@link KinsumerOptions.requestTimeoutMs}. */
  readonly requestTimeoutMs: number;
  /** Milliseconds; see {@link KinsumerOptions.startTimeoutMs}. */
  readonly startTimeoutMs: number;
  /** See {@link KinsumerOptions.readMode}; default `'polling'`. */
  readonly readMode: 'polling' | 'fan-out';
  /** The given consumer name, or the application name (its first 128 characters). Used in fan-out mode only. */
  readonly consumerName: string;
  /** See {@link KinsumerOptions.createTables}; default `false`. */
  readonly createTables: boolean;
  /** The given logger, or one that writes warnings and errors to stderr. */
  readonly logger: Logger;
  /** The given stats receiver, or `{}` (no callbacks). */
  readonly stats: StatReceiver;
  /** See {@link KinsumerOptions.meterProvider}; `undefined`: the global one. */
  readonly meterProvider: MeterProviderLike | undefined;
  /** See {@link KinsumerOptions.tracerProvider}; `undefined`: the global one. */
  readonly tracerProvider: TracerProviderLike | undefined;
  /** The given scheduler, or RxJS's `asyncScheduler` (real time). */
  readonly scheduler: SchedulerLike;
  /** The given clock, or the default of {@link KinsumerSettings.clock}. */
  readonly clock: Clock;
}

/** The stream, by name or by ARN, never both: requests send it as `StreamName` or `StreamARN`. */
export type StreamRef =
  | {
    /** The stream's name, sent as `StreamName`. */
    readonly streamName: string;
    /** Not with `streamName`: give one of the two. */
    readonly streamArn?: undefined;
    /** Not with `streamName`: a group reads one stream, or `streams`. */
    readonly streams?: undefined;
  }
  | {
    /** The stream's ARN, sent as `StreamARN` (reads a stream of another account). */
    readonly streamArn: string;
    /** Not with `streamArn`: give one of the two. */
    readonly streamName?: undefined;
    /** Not with `streamArn`: a group reads one stream, or `streams`. */
    readonly streams?: undefined;
  };

// ---------------------------------------------------------------- many streams (design §9.2)

/**
 * The streams a group reads: a list of names or ARNs (none twice), or a function the leader calls
 * every `streamCheckFrequencyMs` for the list of now (it may answer an empty list; a failed call
 * keeps the last list and is reported). A stream added at run time, or created again, starts at
 * `initialPosition` (the KCL's default for it is LATEST); one dropped is no longer read, its rows kept.
 */
export type StreamList = readonly string[] | (() => Promise<readonly string[]>);

/**
 * One group over several streams. Its checkpoint rows name each shard
 * `<account>:<stream>:<creationEpoch>:<shardId>` (the AWS KCL's multi-stream lease keys), also
 * with one stream in the list: a one-stream group's rows (plain shard ids, which the Go kinsumer
 * shares) are not read by a `streams` group, nor the other way round.
 */
export interface StreamsRef {
  /** The streams, by name or ARN, or a function that lists them (see {@link StreamList}). */
  readonly streams: StreamList;
  /** Not with `streams`. */
  readonly streamName?: undefined;
  /** Not with `streams`. */
  readonly streamArn?: undefined;
}

function resolveStreamCheck(input: KinsumerOptions, streams: StreamList | undefined, leaderActionFrequencyMs: number): number {
  if (input.streamCheckFrequencyMs !== undefined && streams === undefined) {
    throw new ConfigError('streamCheckFrequencyMs', 'is an option of groups that read streams (not streamName or streamArn)');
  }
  const ms = duration(input, 'streamCheckFrequencyMs', Math.max(DEFAULTS.streamCheckFrequencyMs, leaderActionFrequencyMs));
  if (ms < leaderActionFrequencyMs) throw new ConfigError('streamCheckFrequencyMs', 'must not be shorter than leaderActionFrequencyMs (the list is asked for when the leader lists the shards)');
  return ms;
}

// ----------------------------------------------------------------

/** Defaults of the timing and sizing options (the contract's table). */
export const DEFAULTS = {
  /** Shards without a checkpoint start at the oldest record the stream still keeps. */
  initialPosition: 'TRIM_HORIZON',
  /** 250 ms between two GetRecords on one shard: 4 calls per second, under Kinesis's 5. */
  throttleDelayMs: 250,
  /** A shard's checkpoint is written at most once per second (1000 ms). */
  commitFrequencyMs: 1000,
  /** Heartbeat and assignment refresh every 5000 ms. */
  shardCheckFrequencyMs: 5000,
  /** The leader lists the shards every 10000 ms. */
  leaderActionFrequencyMs: 10000,
  /** With `streams`: the list (and which stream each name is) is checked every 60000 ms. */
  streamCheckFrequencyMs: 60000,
  /** A lease or client row not renewed for 15000 ms is expired (three missed heartbeats). */
  leaseTtlMs: 15000,
  /** Reading a shard pauses at 10000 emitted records not yet under its checkpoint. */
  maxInFlightRecords: 10000,
  /** A client holds at most 256 MiB of payload for records not yet under a checkpoint (and one record more per shard). */
  maxInFlightBytes: 268_435_456,
  /** A shard whose next records expired says so (`data-lost`) and reads on from the oldest record kept. */
  onDataLoss: 'continue',
  /** A checkpoint stuck for 60000 ms with records pending is reported as a stalled shard. */
  stallWarningMs: DEFAULT_STALL_WARNING_MS,
  /** `stop()` gives up after 30000 ms. */
  shutdownTimeoutMs: 30000,
  /** An AWS call unanswered for 10000 ms is aborted and retried. */
  requestTimeoutMs: 10000,
  /** A client that cannot start within 60000 ms (or twice leaseTtlMs, if longer) fails with `StartTimeoutError`. */
  startTimeoutMs: 60000,
  /** GetRecords polling; `'fan-out'` must be asked for. */
  readMode: 'polling',
  /** Missing tables are an error (`TableNotFoundError`), not created. */
  createTables: false,
} as const;

/** Kinesis allows at most 5 GetRecords per second per shard; faster polling only earns throttling. */
export const MIN_THROTTLE_DELAY_MS = 200;

const KNOWN_OPTIONS: ReadonlySet<string> = new Set([
  'streamName', 'streamArn', 'streams', 'streamCheckFrequencyMs', 'applicationName', 'kinesis', 'dynamodb', 'clientId', 'clientName',
  'initialPosition', 'throttleDelayMs', 'commitFrequencyMs', 'shardCheckFrequencyMs',
  'leaderActionFrequencyMs', 'leaseTtlMs', 'maxInFlightRecords', 'shutdownTimeoutMs', 'stallWarningMs', 'readMode',
  'requestTimeoutMs', 'startTimeoutMs', 'maxInFlightBytes', 'onDataLoss',
  'consumerName', 'createTables', 'logger', 'stats', 'meterProvider', 'tracerProvider', 'scheduler', 'clock',
]);

const CONSUMER_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

export { resolveStream } from './ports/stream-source.js';

/**
 * Checks every option and fills in the defaults. Throws {@link ConfigError} naming the first
 * option that breaks a rule. Does no I/O.
 */
export function resolveOptions(input: KinsumerOptions): ResolvedOptions {
  if (input === null || typeof input !== 'object') throw new ConfigError('options', 'must be an object');
  for (const key of Object.keys(input)) {
    if (!KNOWN_OPTIONS.has(key)) throw new ConfigError(key, `is not a kinsumer option${didYouMean(key, KNOWN_OPTIONS)}`);
  }
  const { stream, streams } = resolveSource(input);
  const applicationName = checkApplicationName(input.applicationName);
  const kinesis = requireClient(input, 'kinesis', 'KinesisClient');
  const dynamodb = requireClient(input, 'dynamodb', 'DynamoDBClient');
  const clientId = optionalString(input, 'clientId') ?? randomUUID();
  const clientName = optionalString(input, 'clientName') ?? hostname();
  const initialPosition = resolveInitialPosition(input.initialPosition);

  const throttleDelayMs = duration(input, 'throttleDelayMs', DEFAULTS.throttleDelayMs);
  if (throttleDelayMs < MIN_THROTTLE_DELAY_MS) {
    throw new ConfigError('throttleDelayMs', `must be at least ${MIN_THROTTLE_DELAY_MS} (Kinesis allows 5 GetRecords per second per shard)`);
  }
  const commitFrequencyMs = duration(input, 'commitFrequencyMs', DEFAULTS.commitFrequencyMs);
  const shardCheckFrequencyMs = duration(input, 'shardCheckFrequencyMs', DEFAULTS.shardCheckFrequencyMs);
  const leaderActionFrequencyMs = duration(input, 'leaderActionFrequencyMs', DEFAULTS.leaderActionFrequencyMs);
  if (leaderActionFrequencyMs < shardCheckFrequencyMs) {
    throw new ConfigError('leaderActionFrequencyMs', 'must not be shorter than shardCheckFrequencyMs');
  }
  const streamCheckFrequencyMs = resolveStreamCheck(input, streams, leaderActionFrequencyMs);
  const leaseTtlMs = duration(input, 'leaseTtlMs', DEFAULTS.leaseTtlMs);
  if (leaseTtlMs < 2 * shardCheckFrequencyMs) {
    throw new ConfigError('leaseTtlMs', 'must be at least twice shardCheckFrequencyMs (the heartbeat), so one late heartbeat does not expire a live client');
  }
  if (leaseTtlMs <= commitFrequencyMs) {
    throw new ConfigError('leaseTtlMs', 'must be longer than commitFrequencyMs (commits renew the lease)');
  }
  if (leaseTtlMs <= throttleDelayMs) {
    throw new ConfigError('leaseTtlMs', 'must be longer than throttleDelayMs');
  }
  const maxInFlightRecords = positiveInteger(input, 'maxInFlightRecords', DEFAULTS.maxInFlightRecords);
  const maxInFlightBytes = positiveInteger(input, 'maxInFlightBytes', DEFAULTS.maxInFlightBytes);
  // null is not "unset": only undefined takes the default, as for every other option.
  const onDataLoss: unknown = input.onDataLoss === undefined ? DEFAULTS.onDataLoss : input.onDataLoss;
  if (onDataLoss !== 'continue' && onDataLoss !== 'stop-shard') throw new ConfigError('onDataLoss', "must be 'continue' or 'stop-shard'");
  const shutdownTimeoutMs = duration(input, 'shutdownTimeoutMs', DEFAULTS.shutdownTimeoutMs);
  const stallWarningMs = duration(input, 'stallWarningMs', DEFAULTS.stallWarningMs);
  const requestTimeoutMs = duration(input, 'requestTimeoutMs', DEFAULTS.requestTimeoutMs);
  const startTimeoutMs = duration(input, 'startTimeoutMs', Math.max(DEFAULTS.startTimeoutMs, 2 * leaseTtlMs));

  const readMode = input.readMode ?? DEFAULTS.readMode;
  if (readMode !== 'polling' && readMode !== 'fan-out') {
    throw new ConfigError('readMode', "must be 'polling' or 'fan-out'");
  }
  const consumerName = optionalString(input, 'consumerName') ?? applicationName.slice(0, 128);
  if (!CONSUMER_NAME.test(consumerName)) {
    throw new ConfigError('consumerName', 'must be 1-128 characters of A-Z a-z 0-9 _ . -');
  }
  const createTables = input.createTables ?? DEFAULTS.createTables;
  if (typeof createTables !== 'boolean') throw new ConfigError('createTables', 'must be a boolean');

  return {
    stream, streams, streamCheckFrequencyMs, applicationName, kinesis, dynamodb, clientId, clientName, initialPosition,
    throttleDelayMs, commitFrequencyMs, shardCheckFrequencyMs, leaderActionFrequencyMs, leaseTtlMs,
    maxInFlightRecords, shutdownTimeoutMs, stallWarningMs, requestTimeoutMs, startTimeoutMs, readMode, consumerName, createTables,
    maxInFlightBytes, onDataLoss,
    logger: resolveLogger(input.logger),
    stats: resolveStats(input.stats),
    meterProvider: resolveProvider(input.meterProvider, 'meterProvider', 'getMeter'),
    tracerProvider: resolveProvider(input.tracerProvider, 'tracerProvider', 'getTracer'),
    scheduler: resolveScheduler(input.scheduler),
    clock: resolveClock(input.clock, input.scheduler),
  };
}

function optionalString(input: KinsumerOptions, option: 'clientId' | 'clientName' | 'consumerName'): string | undefined {
  const value: unknown = input[option];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > 1024) {
    throw new ConfigError(option, 'must be a non-empty string of at most 1024 characters');
  }
  return value;
}

function requireClient<K extends 'kinesis' | 'dynamodb'>(input: KinsumerOptions, option: K, kind: string): KinsumerOptions[K] {
  const value: unknown = input[option];
  if (value === undefined || value === null) throw new ConfigError(option, `is required (an AWS SDK v3 ${kind})`);
  if (typeof value !== 'object' || typeof (value as { send?: unknown }).send !== 'function') {
    throw new ConfigError(option, `must be an AWS SDK v3 ${kind} (an object with send())`);
  }
  return value as KinsumerOptions[K];
}

function resolveInitialPosition(value: unknown): InitialPosition {
  if (value === undefined) return DEFAULTS.initialPosition;
  if (value === 'TRIM_HORIZON' || value === 'LATEST') return value;
  if (typeof value === 'object' && value !== null && 'timestamp' in value) {
    const { timestamp } = value;
    if (timestamp instanceof Date && Number.isFinite(timestamp.getTime())) return { timestamp };
    throw new ConfigError('initialPosition', 'timestamp must be a valid Date');
  }
  throw new ConfigError('initialPosition', "must be 'TRIM_HORIZON', 'LATEST' or { timestamp: Date }");
}

type DurationOption = 'streamCheckFrequencyMs' | 'throttleDelayMs' | 'commitFrequencyMs' | 'shardCheckFrequencyMs' | 'leaderActionFrequencyMs' | 'leaseTtlMs' | 'shutdownTimeoutMs'
  | 'stallWarningMs' | 'requestTimeoutMs' | 'startTimeoutMs';

function duration(input: KinsumerOptions, option: DurationOption, fallback: number): number {
  const value: unknown = input[option];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ConfigError(option, 'must be a positive finite number of milliseconds');
  }
  // setTimeout clamps anything above 2^31-1 ms to 1 ms, which would turn "rarely" into "constantly".
  if (value > 2_147_483_647) throw new ConfigError(option, 'must be at most 2147483647 ms (about 24.8 days)');
  return value;
}

function positiveInteger(input: KinsumerOptions, option: 'maxInFlightRecords' | 'maxInFlightBytes', fallback: number): number {
  const value: unknown = input[option];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigError(option, 'must be a positive integer');
  }
  return value;
}

function resolveScheduler(value: unknown): SchedulerLike {
  if (value === undefined) return asyncScheduler;
  if (typeof value !== 'object' || value === null
    || typeof (value as SchedulerLike).schedule !== 'function' || typeof (value as SchedulerLike).now !== 'function') {
    throw new ConfigError('scheduler', 'must be an RxJS SchedulerLike (now() and schedule())');
  }
  return value as SchedulerLike;
}

function resolveClock(value: unknown, scheduler: SchedulerLike | undefined): Clock {
  if (value === undefined) return schedulerClock(scheduler);
  if (typeof value !== 'object' || value === null
    || typeof (value as Clock).wallNow !== 'function' || typeof (value as Clock).elapsedNow !== 'function') {
    throw new ConfigError('clock', 'must be a Clock (wallNow() and elapsedNow())');
  }
  return value as Clock;
}
