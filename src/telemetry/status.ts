// What `consumer.status()` reports: the client, its held shards, its streams and connections.
// Types only; kept beside the telemetry that fills them, re-exported by types.ts.
import type { ConnectionsStatus } from '../connections/own-connections.js';
import type { CheckpointPosition } from '../types.js';
import type { StreamStatus } from './stream-status.js';

/**
 * Where a client is in its life, as {@link KinsumerStatus.state} reports it:
 * `starting` (not subscribed yet, or checking its tables and stream and joining the group),
 * `running` (in the group, reading), `paused` (in the group, holding its leases, reading nothing:
 * see `pause()`), `draining` (handing its leases over, taking none: `drain()`, `kinsumer drain`),
 * `unreachable` (no heartbeat accepted for two thirds of `leaseTtlMs`: it emits nothing, see
 * `lastError`), `stopping` (giving its leases back), `stopped`, or `failed` (a fault of the whole
 * group, `StartTimeoutError` or `ClientReplacedError` ended it; `records$` errored with it).
 */
export type KinsumerState = 'starting' | 'running' | 'paused' | 'draining' | 'unreachable' | 'stopping' | 'stopped' | 'failed';

/** One held shard in {@link KinsumerStatus.shards}. */
export interface ShardStatus {
  /** The shard. */
  readonly shardId: string;
  /** The name of the shard's stream. */
  readonly streamName: string;
  /** The lease's `fencingToken` (see `ShardLease`). */
  readonly fencingToken: number;
  /**
   * The checkpoint stored for the shard: where a new owner would resume. `undefined` while none
   * is stored as a record's position (never consumed, or a start such as `TRIM_HORIZON`).
   */
  readonly checkpoint: CheckpointPosition | undefined;
  /** Records emitted and not acked yet. */
  readonly inFlight: number;
  /** Records emitted and not yet under the checkpoint (unacked, or acked behind an unacked one); reading pauses at `maxInFlightRecords`. */
  readonly pending: number;
  /** How far the last read was behind the tip of the shard, as Kinesis said; `undefined` before the first read. */
  readonly millisBehindLatest: number | undefined;
  /** When the last record of the shard was emitted to the application (this client's clock). */
  readonly lastRecordAt?: Date;
  /** When a checkpoint of the shard was last written by this client (this client's clock). */
  readonly lastCheckpointAt?: Date;
  /** Set when the shard is held and not read: `'data-lost'` (`onDataLoss: 'stop-shard'`, see the `data-lost` event). */
  readonly stopped?: 'data-lost';
}

/** What `consumer.status()` returns: a synchronous snapshot, cheap enough for every health probe. */
export interface KinsumerStatus {
  /** This client's id (the `clientId` option, or the UUID generated for it). */
  readonly clientId: string;
  /** This client's name (the `clientName` option, or the host name). */
  readonly clientName: string;
  /** Where the client is in its life. */
  readonly state: KinsumerState;
  /** `true` while this client holds the group's leader lock (it refreshes the shard list). */
  readonly leader: boolean;
  /** Live clients in the group, this one included, as of the last shard check; 0 before the first. */
  readonly members: number;
  /**
   * The assignment the group follows, as of the last shard check: `'go'` while a Go kinsumer
   * client is a live member (a rolling migration), else `'sticky'`; absent before the first check.
   */
  readonly assignment?: 'sticky' | 'go';
  /** The shards this client holds, by shard id. */
  readonly shards: readonly ShardStatus[];
  /**
   * Connections this client's own calls opened, per service: kinsumer's own keep-alive ones (a
   * bounded number, never one per call), used when the client's request handler is one of the SDK's
   * with no connection settings of the application's (`new KinesisClient({})`'s included). Absent
   * before the first call, and when the calls go through a handler the application configured (an
   * agent, a proxy): those connections are the handler's. Fan-out subscriptions are not counted:
   * each keeps an HTTP/2 session of the Kinesis client's own handler while it lasts.
   */
  readonly connections: ConnectionsStatus;
  /** Per stream of the shards it holds (one entry in a one-stream group that holds any). */
  readonly streams: readonly StreamStatus[];
  /** The last fault reported on `events$` (an `error` or `retrying` event's error, and when): why `state` may not be `running`. */
  readonly lastError?: {
    /** The error. */
    readonly error: Error;
    /** When (this client's clock). */
    readonly at: Date;
  };
  /** When this client's last heartbeat the clients table accepted was sent (this client's clock); absent before the first. */
  readonly lastHeartbeatAt?: Date;
  /**
   * The stream's largest record in KiB (DescribeStreamSummary's `MaxRecordSizeInKiB`: 1024 to
   * 10240), in a one-stream group; absent until the client asked, when it may not, and in a group
   * that reads `streams`.
   */
  readonly maxRecordSizeKiB?: number;
}
