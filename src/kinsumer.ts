import { EMPTY, Observable, Subject, type Subscription, catchError, firstValueFrom, from, map, mergeMap, race, throwError, timer } from 'rxjs';
import { ServiceConnections } from './connections/service-connections.js';
import { Dynamo } from './dynamodb/dynamo.js';
import { DynamoLeaseStore } from './dynamodb/lease-store.js';
import { DynamoMembershipStore } from './dynamodb/membership-store.js';
import { DynamoMetadataStore } from './dynamodb/metadata-store.js';
import { tableNames } from './dynamodb/table-names.js';
import { checkTables } from './dynamodb/tables.js';
import { stopsTheClient } from './errors/fault-scope.js';
import { KinsumerError, ShutdownTimeoutError } from './errors/kinsumer-errors.js';
import { ClientRuntime, type RuntimeStatus } from './group/client-runtime.js';
import { KinesisStream } from './kinesis/kinesis.js';
import { kinesisStreamSet } from './kinesis/kinesis-source.js';
import { resolveOptions, type KinsumerOptions, type ResolvedOptions } from './options.js';
import { type KinsumerBackend, type KinsumerPorts } from './ports/backend.js';
import { boundPorts } from './ports/bounded-ports.js';
import type { StreamLimits, StreamPort } from './ports/stream.js';
import { prepareReadMode } from './reading/read-mode.js';
import { describeStream } from './reading/stream-limits.js';
import { ClientMetrics } from './telemetry/client-metrics.js';
import { EventLog } from './telemetry/event-log.js';
import { shardStreams, streamName } from './telemetry/names.js';
import { streamStatuses } from './telemetry/stream-status.js';
import { otelApi } from './telemetry/otel-api.js';
import type { KinsumerEvent, KinsumerRecord, KinsumerState, KinsumerStatus, ShardLease } from './types.js';

type State = 'idle' | 'running' | 'stopping' | 'stopped';

/**
 * One member of a consumer group reading one Kinesis stream (or several: `streams`). Shards are leased through DynamoDB;
 * records flow through {@link Kinsumer.records$}; the application acks each record, and each
 * shard's checkpoint follows the acks.
 *
 * Nothing happens until something subscribes to {@link Kinsumer.leases$} or
 * {@link Kinsumer.records$}. The last unsubscribe stops the client gracefully, like {@link Kinsumer.stop}.
 */
export class Kinsumer {
  /** The options with defaults filled in. */
  readonly options: ResolvedOptions;

  /**
   * Each shard lease as it is captured (and, to a late subscriber, the leases held now). Shared by
   * all subscribers; subscribing starts the client. Completes after {@link Kinsumer.stop}; errors
   * with a typed error only on a fault of the whole group (missing table or stream, access denied,
   * bad configuration, `StartTimeoutError`). A fault of one shard ends that lease's `records$` only.
   */
  readonly leases$: Observable<ShardLease>;

  /**
   * All leases' records merged: per shard in sequence order, parents before children. A lease lost
   * to another client, or a fault of one shard (an unknown AWS error, a malformed record, a corrupt
   * checkpoint), ends that shard's part quietly (see `lease-lost` and `error` on
   * {@link Kinsumer.events$}; the shard is taken again later); only a fault of the whole group
   * errors it.
   *
   * Multicast: every subscriber receives every record emitted while it is subscribed, as the same
   * objects. A second subscriber does not share the work, it does all of it again, and either
   * subscriber's `ack()` acks the record for both (the checkpoint moves past it whatever the other
   * did). Subscribe once and fan out inside the pipe (`processRecords` with `concurrency`,
   * `groupBy`); for two independent consumers of the stream, use two `applicationName`s.
   *
   * Do the work inside the pipe (`concatMap`, `mergeMap`, `processRecords`), not in `subscribe()`'s
   * `next`: a throw inside the pipe errors this Observable and stops the client gracefully (acked
   * records committed, leases released), while RxJS rethrows an exception from `next`
   * asynchronously as an unhandled error, which ends a Node process at once — no stop, no final
   * commit, no release; the next owner waits `leaseTtlMs`. Give `subscribe()` an `error` callback.
   */
  readonly records$: Observable<KinsumerRecord>;

  /** What happens inside, as it happens (hot: subscribe before starting to see everything). */
  readonly events$: Observable<KinsumerEvent>;

  private readonly events = new Subject<KinsumerEvent>();
  private state: State = 'idle';
  private runtime: ClientRuntime | undefined;
  private stopping: Promise<void> | undefined;
  private subscribers = 0;
  private paused = false;
  // Only with @opentelemetry/api installed: built when the client starts, closed when it stopped.
  private metrics: ClientMetrics | undefined;
  /** Logs the events; its summaries of failure runs run on timers, ended when the client stopped. */
  private readonly log: EventLog;
  // The stream's summary (status().maxRecordSizeKiB), asked when the client starts.
  private streamLimits: StreamLimits | undefined;
  private describing: Subscription | undefined;
  private ports: KinsumerPorts | undefined;

  /**
   * Checks every option synchronously and throws `ConfigError` naming the first one at fault.
   * Does no I/O: nothing happens until something subscribes.
   *
   * @param options - See {@link KinsumerOptions}.
   * @param deps - Replaces the AWS adapters (the DynamoDB tables and the Kinesis stream behind
   *   `options.dynamodb` and `options.kinesis`) with other ports, such as the in-memory stores of
   *   `kinsumer/testing`, for tests on virtual time. Default: the AWS adapters.
   */
  constructor(options: KinsumerOptions, deps?: KinsumerBackend) {
    this.options = resolveOptions(options);
    this.log = new EventLog(this.options.logger, this.options.scheduler, this.options.clock, this.options.requestTimeoutMs);
    this.events$ = this.events.asObservable();
    const emit = (event: KinsumerEvent) => this.emit(event);
    const bound = { timeoutMs: this.options.requestTimeoutMs, scheduler: this.options.scheduler };
    // The AWS adapters bound each request themselves; any other backend is bounded at its ports.
    const build = (resolved: ResolvedOptions, sink: (event: KinsumerEvent) => void): KinsumerPorts => (
      deps === undefined ? awsDeps(resolved, sink) : boundPorts(deps(resolved, sink), bound));
    this.leases$ = new Observable<ShardLease>((subscriber) => {
      if (this.state === 'stopping' || this.state === 'stopped') {
        subscriber.error(new KinsumerError('this Kinsumer was stopped; create a new one'));
        return undefined;
      }
      if (this.runtime === undefined) {
        this.state = 'running';
        const ports = build(this.options, emit);
        this.ports = ports;
        const { scheduler, logger } = this.options;
        this.describing = describeStream(ports.stream, { scheduler, emit, logger, described: (limits) => { this.streamLimits = limits; } });
        const runtime = new ClientRuntime({ ...ports, options: this.options, emit });
        this.runtime = runtime;
        if (this.paused) runtime.pause();
        const api = otelApi();
        if (api !== undefined) {
          const { stream } = this.options;
          this.metrics = new ClientMetrics(api, this.options.meterProvider, stream === undefined ? undefined : streamName(stream), shardStreams(stream), {
            status: () => this.status(),
            counts: () => runtime.counts(),
          });
        }
      }
      const runtime = this.runtime;
      this.subscribers += 1;
      runtime.audience(this.subscribers);
      const subscription = runtime.leases$.subscribe(subscriber);
      return () => {
        subscription.unsubscribe();
        this.subscribers -= 1;
        runtime.audience(this.subscribers);
        // The last unsubscribe is a graceful stop, the same as stop(); with nobody subscribed, it
        // waits for acks only while they keep coming. Nobody awaits this stop: its
        // ShutdownTimeoutError is an `error` event (runStop), so the rejection is not lost here.
        if (this.subscribers === 0 && this.state === 'running') void this.stop().catch(() => undefined);
      };
    });
    this.records$ = this.leases$.pipe(
      mergeMap((lease) => lease.records$.pipe(
        // A fault of one shard ends that shard's part (reported on events$, the shard taken again
        // later); the others keep flowing. A fault of the whole group also errors leases$.
        catchError((error: unknown) => (stopsTheClient(error) ? throwError(() => error) : EMPTY)),
      )),
    );
  }

  /**
   * Stops gracefully: no new captures; every lease stops reading, waits for its emitted records to
   * be acked (at most three quarters of the shorter of `shutdownTimeoutMs` and `leaseTtlMs`; a
   * `draining` event says what it waits for, a warning follows while it still waits, and a
   * `drain-gave-up` event names the shards released with records unacked, which the next owner
   * gets again), writes its final checkpoint and is released; the client leaves the group. Idempotent. Rejects with `ShutdownTimeoutError` after `shutdownTimeoutMs`
   * (the releases still go on; the error is also an `error` event).
   *
   * Once nobody is subscribed to `records$`/`leases$` any more (the last unsubscribe, or a
   * pipeline that errored), the stop waits for acks only while they keep coming: after
   * `commitFrequencyMs` without one, what is left goes to the next owner at once. To give slow
   * handlers in flight the whole bound, call `stop()` before unsubscribing.
   */
  stop(): Promise<void> {
    this.stopping ??= this.runStop();
    return this.stopping;
  }

  /**
   * A synchronous snapshot for health checks and dashboards: this client's identity and state,
   * whether it leads the group, how many clients the group has, and each shard it holds with its
   * stream, fencing token, stored checkpoint, unacked and pending records, lag behind the tip
   * (`millisBehindLatest`), last record and last checkpoint; and the same summed up per stream.
   */
  status(): KinsumerStatus {
    const runtime = this.runtime?.status();
    const shards = runtime?.shards ?? [];
    return {
      clientId: this.options.clientId,
      clientName: this.options.clientName,
      state: this.publicState(runtime),
      leader: runtime?.leader ?? false,
      members: runtime?.members ?? 0,
      ...(runtime?.assignment === undefined ? {} : { assignment: runtime.assignment }),
      shards,
      streams: streamStatuses(shards),
      connections: this.ports?.connections?.() ?? {},
      ...(runtime?.lastError === undefined ? {} : { lastError: runtime.lastError }),
      ...(runtime?.lastHeartbeatAt === undefined ? {} : { lastHeartbeatAt: runtime.lastHeartbeatAt }),
      ...(this.streamLimits === undefined ? {} : { maxRecordSizeKiB: this.streamLimits.maxRecordSizeKiB }),
    };
  }

  /**
   * Hands every lease over gracefully — each once the member the group gives it to is ready to
   * capture it, so a shard goes unread well under a second — and takes none from now on. The
   * client stays in the group, shown as `draining` (`status()`, `kinsumer status`); resolves once it
   * holds nothing, and {@link Kinsumer.stop} is then immediate. A shard no other member can take
   * (it is alone, or the others drain too) is kept and read meanwhile. For deploys and retiring an
   * instance; `kinsumer drain --client <id>` does the same from outside. Resolves at once before
   * the client started, or once it stopped.
   */
  async drain(): Promise<void> {
    await this.runtime?.drain();
  }

  /**
   * Stops reading on every held shard (no GetRecords, no records emitted) until {@link Kinsumer.resume},
   * for instance while a downstream store is down. Leases are kept and renewed; shards captured
   * meanwhile start paused; records already emitted can still be acked. Idempotent; may be called
   * before the first subscribe.
   */
  pause(): void {
    this.paused = true;
    this.runtime?.pause();
  }

  /** Reading goes on where it stopped, on every held shard. Idempotent. */
  resume(): void {
    this.paused = false;
    this.runtime?.resume();
  }

  private publicState(runtime: RuntimeStatus | undefined): KinsumerState {
    if (runtime?.failed === true) return 'failed';
    if (this.state === 'stopped' || this.state === 'stopping') return this.state;
    if (runtime?.registered !== true) return 'starting';
    if (runtime.unreachable) return 'unreachable';
    if (runtime.draining) return 'draining';
    return this.paused ? 'paused' : 'running';
  }


  private emit(event: KinsumerEvent): void {
    this.log.log(event);
    this.metrics?.observe(event);
    this.events.next(event);
  }

  private async runStop(): Promise<void> {
    const runtime = this.runtime;
    this.state = 'stopping';
    this.describing?.unsubscribe();
    if (runtime === undefined) {
      this.state = 'stopped';
      this.events.complete();
      return;
    }
    const { shutdownTimeoutMs, scheduler } = this.options;
    // race() unsubscribes the loser: the bound's timer must not hold the process open once stopped.
    const outcome = await firstValueFrom(race(
      from(runtime.stop()).pipe(map(() => 'done' as const)),
      timer(shutdownTimeoutMs, scheduler).pipe(map(() => 'timeout' as const)),
    ));
    this.state = 'stopped';
    if (outcome === 'timeout') {
      const error = new ShutdownTimeoutError(shutdownTimeoutMs, runtime.pending().map((shardId) => `release of ${shardId}`));
      // Also an event: a stop started by the last unsubscribe has nobody awaiting its Promise.
      this.emit({ type: 'error', error });
      void runtime.stop().finally(() => this.closed());
      throw error;
    }
    this.closed();
  }

  /** The stop is over (releases included): what was kept open for it is closed. */
  private closed(): void {
    this.metrics?.close();
    this.log.close();
    this.ports?.close?.();
    this.events.complete();
  }
}

/** The production wiring: the user's clients behind the DynamoDB and Kinesis adapters. */
function awsDeps(options: ResolvedOptions, emit: (event: KinsumerEvent) => void): KinsumerPorts {
  // Every request bounded: a hung socket is a transient fault, aborted and retried.
  const bound = { timeoutMs: options.requestTimeoutMs, scheduler: options.scheduler };
  // Each service's calls on kinsumer's own keep-alive connections, or through the client's handler.
  const kinesisConnections = new ServiceConnections('kinesis', options.kinesis);
  const dynamoConnections = new ServiceConnections('dynamodb', options.dynamodb);
  const dynamo = new Dynamo(options.dynamodb, bound, dynamoConnections);
  const tables = tableNames(options.applicationName);
  const stream: StreamPort = options.stream !== undefined
    ? new KinesisStream(options.kinesis, options.stream, { bound, connections: kinesisConnections })
    : kinesisStreamSet(options.kinesis, options.streams ?? [], {
      bound, connections: kinesisConnections, streamCheckFrequencyMs: options.streamCheckFrequencyMs, elapsedNow: () => options.clock.elapsedNow(), logger: options.logger, scheduler: options.scheduler, emit,
    });
  // The wall clock is only written; every expiry the stores judge is a difference of elapsedNow.
  const common = {
    dynamo, clientId: options.clientId, clientName: options.clientName, leaseTtlMs: options.leaseTtlMs,
    now: () => options.clock.wallNow(), elapsedNow: () => options.clock.elapsedNow(),
  };
  // Rows the coordinator reads but cannot decode are reported, never silently skipped.
  const membership = new DynamoMembershipStore({ ...common, table: tables.clients, onCorruptRow: (error) => emit({ type: 'error', error }) });
  let warned = false;
  return {
    // A lease captured in a member's life lives as long as that life, as this client's membership reads it.
    store: new DynamoLeaseStore({
      ...common, table: tables.checkpoints, members: membership, scheduler: options.scheduler, onCorruptRow: (error) => emit({ type: 'error', error, shardId: error.shardId }),
    }),
    membership,
    metadata: new DynamoMetadataStore({ ...common, table: tables.metadata }),
    stream,
    prepare: async () => {
      // Said once, even when the start is tried again.
      for (const connections of warned ? [] : [kinesisConnections, dynamoConnections]) {
        const { warning } = await connections.plan();
        if (warning !== undefined) emit({ type: 'warning', code: 'connection-per-call', service: connections.service, message: warning });
      }
      warned = true;
      await checkTables({ dynamodb: options.dynamodb, applicationName: options.applicationName, create: options.createTables, scheduler: options.scheduler, bound, connections: dynamoConnections });
      // Fails fast with StreamNotFoundError rather than at the first read (with streams: lists them, a missing one is not read).
      await firstValueFrom(stream.listShards());
      await prepareReadMode(options, stream, emit);
    },
    connections: () => {
      const kinesis = kinesisConnections.counts();
      const dynamodb = dynamoConnections.counts();
      return { ...(kinesis === undefined ? {} : { kinesis }), ...(dynamodb === undefined ? {} : { dynamodb }) };
    },
    close: () => {
      kinesisConnections.destroy();
      dynamoConnections.destroy();
    },
  };
}

/**
 * The one-liner: a cold Observable of the stream's records. Each subscription builds its own
 * {@link Kinsumer} and subscribes to its `records$`; unsubscribing stops it gracefully (final
 * commits, releases). For apps that need neither `leases$`, `events$` nor `stop()`.
 *
 * ```ts
 * const kinsumer$ = kinsumer({ streamName, applicationName, kinesis, dynamodb });
 * kinsumer$.pipe(concatMap(async (r) => { await handle(r); r.ack(); })).subscribe();
 * ```
 */
export function kinsumer(options: KinsumerOptions): Observable<KinsumerRecord> {
  // Validate now, so a bad option throws where the Observable is built, not where it is subscribed.
  resolveOptions(options);
  return new Observable<KinsumerRecord>((subscriber) => new Kinsumer(options).records$.subscribe(subscriber));
}
