import {
  type Observable, type Subscription, BehaviorSubject, Subject, concat, defer, filter, from, ignoreElements, map, merge,
  distinctUntilChanged, skip, takeUntil, timer,
} from 'rxjs';
import { type ShardCount, ShardTallies } from '../checkpoint/shard-tally.js';
import { isTransient } from '../errors/aws-error-kind.js';
import { asError } from '../errors/fault-scope.js';
import { KinsumerError, StartTimeoutError } from '../errors/kinsumer-errors.js';
import { retryTransient } from '../errors/retry-backoff.js';
import { LeaseManager } from '../lease/lease-manager.js';
import { type ReadingSwitch, drainBoundMs } from '../lease/lease-session.js';
import type { ResolvedOptions } from '../options.js';
import type { KinsumerPorts } from '../ports/backend.js';
import type { LiveClient } from '../ports/coordination.js';
import { logSilentPeer } from '../telemetry/event-log.js';
import type { KinsumerEvent, ShardLease, ShardStatus } from '../types.js';
import { clientLabel } from './client-label.js';
import { coordinate, leaveGroup } from './coordinator.js';
import { drainingEvent } from './stop-log.js';

/**
 * A peer's row unchanged for this many shard checks is silent: a live peer renews at each of its
 * checks, and this client reads the rows at each of its own, so one check's worth is ordinary.
 */
const SILENT_AFTER_CHECKS = 1.5;

/** Failed start attempts before a `start-failing` warning: past a blip, long before `startTimeoutMs`. */
const START_FAILURES_REPORTED_AFTER = 3;

/** Everything a running client talks to: its ports, plus the options and the event sink. */
export interface ClientDeps extends KinsumerPorts {
  /** The client's resolved options. */
  readonly options: ResolvedOptions;
  /** Reports an event on `Kinsumer.events$`. */
  readonly emit: (event: KinsumerEvent) => void;
}

/** What a running client knows about itself, for `status()`. */
export interface RuntimeStatus {
  /** Its first shard check went through: it is in the group. */
  readonly registered: boolean;
  /** A fault of the whole group (or the start timeout) ended it. */
  readonly failed: boolean;
  readonly leader: boolean;
  readonly members: number;
  readonly assignment: 'sticky' | 'go' | undefined;
  readonly shards: readonly ShardStatus[];
}

/**
 * One started client: prepare, then coordinate and hold leases until stopped or failed.
 * `leases$` replays the leases held now to each new subscriber, then emits new captures;
 * it completes after a stop and errors on a fault that stops the client — or when it cannot join
 * the group within `startTimeoutMs` (`StartTimeoutError`).
 */
export class ClientRuntime {
  readonly leases$: Observable<ShardLease>;
  private readonly manager: LeaseManager;
  private readonly failed = new Subject<never>();
  private readonly halted = new Subject<void>();
  private readonly registered = new BehaviorSubject(false);
  private readonly paused = new BehaviorSubject(false);
  private readonly unwatched = new BehaviorSubject(false);
  private readonly tallies = new ShardTallies();
  private readonly emit: (event: KinsumerEvent) => void;
  private coordination: Subscription | undefined;
  private stopPromise: Promise<void> | undefined;
  private failure: Error | undefined;
  private leader = false;
  private members = 0;
  private assignment: 'sticky' | 'go' | undefined;
  /** The last fault reported while starting: the cause of a StartTimeoutError. */
  private lastStartError: Error | undefined;
  /** Faults reported while starting, and whether `start-failing` said so. */
  private startFailures = 0;
  private startFailingReported = false;
  private startedAtMs = 0;
  /** Who holds each shard, as the clients rows said last, by name and short id (names holders in `waiting` events and the log). */
  private holders: ReadonlyMap<string, string> = new Map();
  /** Peers told of as silent (see {@link ClientRuntime.tellSilentPeers}), until their row changes again. */
  private silentTold = new Set<string>();

  constructor(private readonly deps: ClientDeps) {
    this.emit = (event) => {
      this.observe(event);
      deps.emit(event);
      this.reportStartFailing();
    };
    const reading: ReadingSwitch = {
      paused: () => this.paused.value,
      resumed$: this.paused.pipe(skip(1), filter((paused) => !paused), map(() => undefined)),
    };
    this.manager = new LeaseManager({
      store: deps.store,
      stream: deps.stream,
      options: deps.options,
      emit: this.emit,
      fail: (error, shardId) => this.fail(error, shardId),
      reading,
      unwatched$: this.unwatched.pipe(distinctUntilChanged()),
      tally: (shardId) => this.tallies.of(shardId),
      holderOf: (shardId) => this.holders.get(shardId),
      ...(deps.random === undefined ? {} : { random: deps.random }),
    });
    this.leases$ = merge(
      defer(() => concat(from(this.manager.active()), this.manager.captured$)),
      this.failed,
    );
    this.start();
  }

  private start(): void {
    const { deps, emit } = this;
    const { options } = deps;
    this.startedAtMs = options.clock.elapsedNow();
    this.coordination = defer(() => from(deps.prepare())).pipe(
      // A throttled or failed DescribeTable / ListShards at start is a transient fault like any
      // other: retried with backoff until startTimeoutMs (found by the chaos run).
      retryTransient({ operation: 'prepare', scheduler: options.scheduler, emit, isRetriable: retriableAtStart }),
      map(() => undefined),
      (prepared$) => concat(prepared$.pipe(ignoreElements()), coordinate({
        membership: deps.membership,
        metadata: deps.metadata,
        store: deps.store,
        stream: deps.stream,
        options,
        emit,
        held: () => this.manager.held(),
        members: (count) => { this.members = count; },
        // A holder whose row expired is still the one its leases name, until someone takes them.
        clients: (clients) => {
          this.holders = new Map([...this.holders, ...holdings(clients)]);
          this.tellSilentPeers(clients);
        },
        // The clients table answered: started. A duplicate clientId is judged by its own bound (ConfigError).
        heartbeated: () => { if (!this.registered.value) this.registered.next(true); },
        want: (wanted) => {
          // The first check that went through: this client is in the group.
          if (!this.registered.value) this.registered.next(true);
          this.manager.want(wanted);
        },
      })),
      takeUntil(this.halted),
    ).subscribe({ error: (error: unknown) => this.fail(asError(error)) });
    // Unreachable DynamoDB or Kinesis is retried, but not silently forever.
    timer(options.startTimeoutMs, options.scheduler).pipe(
      takeUntil(this.registered.pipe(filter(Boolean))),
      takeUntil(this.halted),
    ).subscribe(() => this.fail(new StartTimeoutError(options.startTimeoutMs, this.lastStartError === undefined ? {} : { cause: this.lastStartError })));
  }

  // What status() needs from the events: leadership, and the last fault while starting.
  private observe(event: KinsumerEvent): void {
    if (event.type === 'leader-acquired' || event.type === 'leader-lost') this.leader = event.type === 'leader-acquired';
    else if (event.type === 'rebalance') this.assignment = event.strategy;
    else if ((event.type === 'retrying' || event.type === 'error') && !this.registered.value) {
      this.lastStartError = event.error;
      this.startFailures += 1;
    }
  }

  // Once, after the first few failed attempts: a start that keeps failing says so long before
  // startTimeoutMs, with the error whose cause chain names the root cause.
  private reportStartFailing(): void {
    const error = this.lastStartError;
    if (this.startFailingReported || this.startFailures < START_FAILURES_REPORTED_AFTER || error === undefined) return;
    if (this.registered.value || this.failure !== undefined) return;
    this.startFailingReported = true;
    const { startTimeoutMs, clock } = this.deps.options;
    const giveUpInMs = Math.max(0, Math.round(startTimeoutMs - (clock.elapsedNow() - this.startedAtMs)));
    this.emit({ type: 'start-failing', attempts: this.startFailures, error, giveUpInMs });
  }

  // A peer that holds shards and has not renewed its row for longer than a shard check is either
  // slow or gone without stop() (a crash): this client may be about to take its shards over, at
  // their expiry. Said once per silence, at info: the group recovers by itself, and a live peer's
  // next renewal ends it.
  private tellSilentPeers(clients: readonly LiveClient[]): void {
    const { clientId, shardCheckFrequencyMs, leaseTtlMs, logger } = this.deps.options;
    const silent = clients.filter((c) => c.id !== clientId && (c.shardIds?.length ?? 0) > 0 && c.unchangedForMs >= SILENT_AFTER_CHECKS * shardCheckFrequencyMs);
    const ids = new Set(silent.map((c) => c.id));
    this.silentTold = new Set([...this.silentTold].filter((id) => ids.has(id)));
    for (const peer of silent) {
      if (this.silentTold.has(peer.id)) continue;
      this.silentTold.add(peer.id);
      logSilentPeer(logger, {
        holder: clientLabel(peer.id, peer.name),
        shardIds: peer.shardIds ?? [],
        silentMs: peer.unchangedForMs,
        expiresInMs: Math.max(0, leaseTtlMs - peer.unchangedForMs),
      });
    }
  }

  /** Stops reading on every held shard, and on each shard captured later, until {@link resume}; leases are kept. */
  pause(): void {
    if (!this.paused.value) this.paused.next(true);
  }

  /** Reading goes on where it stopped. */
  resume(): void {
    if (this.paused.value) this.paused.next(false);
  }

  /**
   * How many subscribers `records$` and `leases$` have now. With none, nobody is left to ack what
   * was emitted: a stop then waits for acks only while they keep coming.
   */
  audience(subscribers: number): void {
    this.unwatched.next(subscribers === 0);
  }

  /** For `status()`. */
  status(): RuntimeStatus {
    const stopped = this.stopPromise !== undefined;
    return {
      registered: this.registered.value,
      failed: this.failure !== undefined,
      leader: this.leader && !stopped,
      members: this.members,
      assignment: this.assignment,
      shards: this.manager.statuses(),
    };
  }

  /** Records delivered and acked per shard held so far (the metrics' counters). */
  counts(): ShardCount[] {
    return this.tallies.counts();
  }

  /** Shards still held (for a timeout message). */
  pending(): string[] {
    return this.manager.pending();
  }

  /**
   * Stops coordinating, ends every lease, leaves the group. Idempotent (the first call decides).
   * `drain`: wait for emitted records to be acked (at most the drain bound; with nobody subscribed,
   * only while acks keep coming) before the final commits; `false`: not at all (the subscribers
   * already have the client's fatal error).
   */
  stop(drain = true): Promise<void> {
    this.stopPromise ??= this.runStop(drain);
    return this.stopPromise;
  }

  private async runStop(drain: boolean): Promise<void> {
    this.halted.next();
    this.coordination?.unsubscribe();
    const { options } = this.deps;
    const drainMs = drain ? drainBoundMs(options) : 0;
    const quietMs = this.unwatched.value ? options.commitFrequencyMs : undefined;
    const draining = drainingEvent(this.manager.statuses(), { drainMs, ...(quietMs === undefined ? {} : { quietMs }) });
    if (draining !== undefined) this.emit(draining);
    // A drain still going after a commit interval most likely waits for records nobody acks: said at
    // warn, so the default logger shows it then, not only when the drain gives up.
    const stillWaiting = drainMs > 0 && quietMs === undefined && Object.keys(draining?.unacked ?? {}).length > 0
      ? timer(options.commitFrequencyMs, options.scheduler).subscribe(() => this.warnStillDraining(drainMs - options.commitFrequencyMs))
      : undefined;
    await this.manager.stop(drainMs);
    stillWaiting?.unsubscribe();
    // `leases$` merges in `failed`, which only ever errors: without this, leases$ (and records$)
    // would never complete after a graceful stop, and `lastValueFrom(records$)` would hang.
    this.failed.complete();
    // A client that never reached the clients table (a failed start) wrote no row, took no lock
    // and held no shard: there is no group to leave, and trying would only report the same fault again.
    if (this.registered.value) await leaveGroup({ ...this.deps, emit: this.emit });
  }

  private warnStillDraining(leftMs: number): void {
    const unacked = Object.fromEntries(this.manager.statuses().filter((s) => s.inFlight > 0).map((s) => [s.shardId, s.inFlight] as const));
    const count = Object.values(unacked).reduce((sum, n) => sum + n, 0);
    if (count === 0) return;
    this.deps.options.logger.warn({ unacked, leftMs }, `kinsumer: stop() still waits for ${count} unacked record${count === 1 ? '' : 's'}, `
      + `up to ${leftMs} ms more; then it releases without them and the next owner gets them again`);
  }

  private fail(error: Error, shardId?: string): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    this.emit(shardId === undefined ? { type: 'error', error } : { type: 'error', error, shardId });
    this.deps.options.logger.error({ err: error }, 'kinsumer: stopping after a fatal error');
    this.failed.error(error);
    // Release what can be released; the subscriber has the error, so nobody acks what is in flight.
    void this.stop(false);
  }
}

/** Shard id → the client whose row says it holds it (the lowest id, when two rows say so), by name and short id. */
function holdings(clients: readonly LiveClient[]): Map<string, string> {
  const holders = new Map<string, string>();
  for (const client of [...clients].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    for (const shardId of client.shardIds ?? []) if (!holders.has(shardId)) holders.set(shardId, clientLabel(client.id, client.name));
  }
  return holders;
}

/** The table check wraps a transient DescribeTable failure in a retriable KinsumerError; the stream check throws the SDK's error. */
function retriableAtStart(error: unknown): boolean {
  return error instanceof KinsumerError ? error.retriable : isTransient(error);
}
