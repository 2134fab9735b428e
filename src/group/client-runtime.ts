import {
  type Observable, type Subscription, BehaviorSubject, Subject, concat, defer, filter, firstValueFrom, from, ignoreElements, map, merge,
  distinctUntilChanged, of, race, skip, take, takeUntil, timer,
} from 'rxjs';
import { type ShardCount, ShardTallies } from '../checkpoint/shard-tally.js';
import { isTransient } from '../errors/aws-error-kind.js';
import { asError } from '../errors/fault-scope.js';
import { keepable } from '../errors/kept-error.js';
import { ClientReplacedError, KinsumerError, LeaseLostError, StartTimeoutError } from '../errors/kinsumer-errors.js';
import { retryTransient } from '../errors/retry-backoff.js';
import { LeaseManager } from '../lease/lease-manager.js';
import { type ReadingSwitch, drainBoundMs } from '../lease/lease-session.js';
import type { ResolvedOptions } from '../options.js';
import type { KinsumerPorts } from '../ports/backend.js';
import type { KinsumerEvent, KinsumerStatus, ShardLease, ShardStatus } from '../types.js';
import { coordinate, epochPollMs, leaveGroup } from './coordinator.js';
import { type Accepted, HeartbeatLiveness, heartbeats, renewIntervalMs } from './heartbeat.js';
import { PeerWatch } from './peer-watch.js';
import { drainingEvent } from './stop-log.js';

/** The last fault a client reported, and when. */
type ReportedFault = NonNullable<KinsumerStatus['lastError']>;

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
  /** Its first heartbeat went through: it is in the group. */
  readonly registered: boolean;
  /** A fault of the whole group (or the start timeout, or a process that took its place) ended it. */
  readonly failed: boolean;
  /** No heartbeat accepted for two renewal intervals: its leases emit nothing, the group may end it. */
  readonly unreachable: boolean;
  /** It drains (drain(), `kinsumer drain`, or a stop handing its leases over). */
  readonly draining: boolean;
  readonly leader: boolean;
  readonly members: number;
  readonly assignment: 'sticky' | 'go' | undefined;
  readonly shards: readonly ShardStatus[];
  readonly lastError: ReportedFault | undefined;
  /** When its last accepted heartbeat was sent (wall clock). */
  readonly lastHeartbeatAt: Date | undefined;
}

/**
 * One started client: prepare, register (its first heartbeat), then heartbeat, coordinate and hold
 * leases until stopped or failed. `leases$` replays the leases held now to each new subscriber,
 * then emits new captures; it completes after a stop and errors on a fault that stops the client —
 * or when it cannot join the group within `startTimeoutMs` (`StartTimeoutError`), or another
 * process took its clientId's place (`ClientReplacedError`).
 */
export class ClientRuntime {
  readonly leases$: Observable<ShardLease>;
  private readonly manager: LeaseManager;
  private readonly liveness = new HeartbeatLiveness();
  private readonly peers: PeerWatch;
  private readonly failed = new Subject<never>();
  private readonly halted = new Subject<void>();
  private readonly beatsHalted = new Subject<void>();
  private readonly registered = new BehaviorSubject(false);
  private readonly paused = new BehaviorSubject(false);
  private readonly unwatched = new BehaviorSubject(false);
  /** What the row says changed (a capture, a release, a want, a drain): a heartbeat follows. */
  private readonly rowChanged = new Subject<void>();
  private readonly checkNow = new Subject<void>();
  private readonly drained = new Subject<void>();
  private readonly tallies = new ShardTallies();
  private readonly emit: (event: KinsumerEvent) => void;
  private coordination: Subscription | undefined;
  private beats: Subscription | undefined;
  private stopPromise: Promise<void> | undefined;
  private failure: Error | undefined;
  private replaced = false;
  private leader = false;
  private members = 0;
  private assignment: 'sticky' | 'go' | undefined;
  /** The last fault reported while starting: the cause of a StartTimeoutError. */
  private lastStartError: Error | undefined;
  private lastError: ReportedFault | undefined;
  /** Faults reported while starting, and whether `start-failing` said so. */
  private startFailures = 0;
  private startFailingReported = false;
  private startedAtMs = 0;
  /** Shards the clients row listed when this process took the clientId's place: kept in its row until captured. */
  private claims = new Set<string>();
  /** Why it drains: drain() was called, the row asks for it (`kinsumer drain`), it stops (with the hand-over's end, monotonic ms). */
  private drainCalled = false;
  private drainRequested = false;
  private stopDeadlineMs: number | undefined;
  /** When the stop began (monotonic ms), and how long each lease may wait for acks from then on. */
  private stopDrain: { readonly sinceMs: number; readonly drainMs: number } | undefined;
  /** The drain was announced (the group epoch bumped once its row said so). */
  private announced = false;

  constructor(private readonly deps: ClientDeps) {
    this.peers = new PeerWatch(deps.options);
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
      holderOf: (shardId) => this.peers.holderOf(shardId),
      liveness: this.liveness,
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
    this.beats = defer(() => from(deps.prepare())).pipe(
      // A throttled or failed DescribeTable / ListShards at start is a transient fault like any
      // other: retried with backoff until startTimeoutMs (found by the chaos run).
      retryTransient({ operation: 'prepare', scheduler: options.scheduler, emit, isRetriable: retriableAtStart }),
      ignoreElements(),
      (prepared$) => concat(prepared$, heartbeats({
        membership: deps.membership,
        options,
        emit,
        beat: () => ({ held: this.rowHeld(), wants: this.manager.wants(), draining: this.draining() !== undefined }),
        changed$: this.rowChanged,
        accepted: (accepted) => this.accepted(accepted),
        replaced: (by) => {
          this.replaced = true;
          this.beatsHalted.next();
          this.fail(new ClientReplacedError(options.clientId, by));
        },
      })),
      takeUntil(this.beatsHalted),
    ).subscribe({ error: (error: unknown) => this.fail(asError(error)) });
    // Unreachable DynamoDB or Kinesis is retried, but not silently forever.
    timer(options.startTimeoutMs, options.scheduler).pipe(
      takeUntil(this.registered.pipe(filter(Boolean))),
      takeUntil(this.halted),
    ).subscribe(() => this.fail(new StartTimeoutError(options.startTimeoutMs, this.lastStartError === undefined ? {} : { cause: this.lastStartError })));
    // Leases come and go: the row says what is held and wanted now.
    merge(this.manager.captured$, this.manager.ended$).pipe(takeUntil(this.beatsHalted)).subscribe(() => this.rowChanged.next());
    this.manager.ended$.subscribe(() => this.checkDrained());
  }

  /** A heartbeat was accepted: the leases are confirmed; what the row said back is acted on. */
  private accepted({ registration, sentAtMs }: Accepted): void {
    const { options } = this.deps;
    const first = !this.registered.value;
    if (registration.newLife && !first) {
      // The group ended the last life (this client missed heartbeats for a TTL): its leases are taken.
      this.manager.revoke((shardId) => new LeaseLostError(shardId, { cause: new KinsumerError(`${options.clientId}'s life in the group ended: it missed heartbeats for leaseTtlMs`) }));
    }
    if (registration.revoked.length > 0) {
      this.manager.revoke((shardId) => new LeaseLostError(shardId, { cause: new KinsumerError(`an operator's reset took the lease on ${shardId}`), revoked: true }), registration.revoked);
    }
    if (first) this.claims = new Set(registration.claimed ?? []);
    this.liveness.confirm(sentAtMs, options.clock.wallNow() - (options.clock.elapsedNow() - sentAtMs));
    if (registration.drainRequested !== this.drainRequested) {
      this.drainRequested = registration.drainRequested;
      this.drainChanged();
    }
    if (this.draining() !== undefined && !this.announced) {
      // Its row says it drains now: the others check at their next poll of the epoch.
      this.announced = true;
      this.deps.metadata.bumpGroupEpoch().subscribe({ error: (error: unknown) => this.emit({ type: 'error', error: asError(error) }) });
    }
    if (first) {
      this.registered.next(true);
      this.coordinate();
    }
  }

  private coordinate(): void {
    const { deps, emit } = this;
    this.coordination = coordinate({
      membership: deps.membership,
      metadata: deps.metadata,
      store: deps.store,
      stream: deps.stream,
      options: deps.options,
      emit,
      held: () => this.manager.held(),
      members: (count) => { this.members = count; },
      // A holder whose row expired is still the one its leases name, until someone takes them.
      clients: (clients) => this.peers.seen(clients),
      perLeaseRenewal: (perLease) => this.liveness.setPerLeaseRenewal(perLease),
      draining: () => this.draining(),
      wake$: this.checkNow,
      want: (wanted) => {
        this.manager.want(wanted, this.stopDrainLeftMs());
        const held = new Set(this.manager.held());
        this.claims = new Set([...this.claims].filter((shardId) => wanted.has(shardId) && !held.has(shardId)));
        this.rowChanged.next();
        this.checkDrained();
      },
    }).pipe(takeUntil(this.halted)).subscribe({ error: (error: unknown) => this.fail(asError(error)) });
  }

  /** What the clients row lists as held: the leases, and what this process claimed of the row it took over. */
  private rowHeld(): string[] {
    return [...new Set([...this.manager.held(), ...this.claims])].sort();
  }

  /** While stopping: how long a lease given up now may still wait for acks (the stop's drain bound, less what passed). */
  private stopDrainLeftMs(): number | undefined {
    if (this.stopDrain === undefined) return undefined;
    return Math.max(0, this.stopDrain.drainMs - (this.deps.options.clock.elapsedNow() - this.stopDrain.sinceMs));
  }

  /** `undefined` while the client takes shards; else whether it stops, and whether the stop's hand-over ran out. */
  private draining(): { readonly stopping: boolean; readonly boundReached: boolean } | undefined {
    const stopping = this.stopDeadlineMs !== undefined;
    if (!stopping && !this.drainCalled && !this.drainRequested) return undefined;
    return { stopping, boundReached: stopping && this.deps.options.clock.elapsedNow() >= (this.stopDeadlineMs ?? 0) };
  }

  private drainChanged(): void {
    if (this.draining() === undefined) {
      this.manager.resumeTaking();
      this.announced = false;
    } else {
      this.manager.stopTaking();
      this.claims.clear();
    }
    this.rowChanged.next();
    this.checkNow.next();
  }

  private checkDrained(): void {
    if (this.draining() !== undefined && this.manager.pending().length === 0) this.drained.next();
  }

  /**
   * Hands every lease over (each once the member that gets it wants it), captures nothing, and
   * resolves once nothing is held: the member stays registered, shown as draining. A shard no
   * other member can take is kept (and read) meanwhile.
   */
  drain(): Promise<void> {
    if (!this.drainCalled) {
      this.drainCalled = true;
      this.drainChanged();
    }
    return this.whenDrained();
  }

  private whenDrained(): Promise<void> {
    return firstValueFrom(race(this.drained$(), this.failed, this.halted), { defaultValue: undefined }).then(() => undefined, () => undefined);
  }

  /** Emits once nothing is held (at once when nothing is). */
  private drained$(): Observable<unknown> {
    return defer(() => (this.manager.pending().length === 0 ? of(undefined) : this.drained.pipe(filter(() => this.manager.pending().length === 0), take(1))));
  }

  // What status() needs from the events: leadership, the last fault, and the last fault while starting.
  private observe(event: KinsumerEvent): void {
    if (event.type === 'leader-acquired' || event.type === 'leader-lost') this.leader = event.type === 'leader-acquired';
    else if (event.type === 'rebalance') this.assignment = event.strategy;
    if (event.type === 'retrying' || event.type === 'error') {
      // Kept until the next fault: as text, not with the frames it was thrown in (errors/kept-error.ts).
      this.lastError = { error: keepable(event.error), at: new Date(this.deps.options.clock.wallNow()) };
      if (!this.registered.value) {
        this.lastStartError = event.error;
        this.startFailures += 1;
      }
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
    const { clock } = this.deps.options;
    const confirmedAtMs = this.liveness.confirmedAtMs();
    const confirmedAtWallMs = this.liveness.confirmedAtWallMs();
    return {
      registered: this.registered.value,
      failed: this.failure !== undefined,
      unreachable: this.registered.value && (confirmedAtMs === undefined || clock.elapsedNow() - confirmedAtMs >= 2 * renewIntervalMs(this.deps.options)),
      draining: this.draining() !== undefined,
      leader: this.leader && !stopped,
      members: this.members,
      assignment: this.assignment,
      shards: this.manager.statuses(),
      lastError: this.lastError,
      lastHeartbeatAt: confirmedAtWallMs === undefined ? undefined : new Date(confirmedAtWallMs),
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
   * Hands the leases over (as {@link drain} does, for a bounded time), then ends every lease still
   * held, stops coordinating and heartbeating, and leaves the group. Idempotent (the first call
   * decides). `drain`: wait for emitted records to be acked (at most the drain bound; with nobody
   * subscribed, only while acks keep coming) before the final commits; `false`: neither the
   * hand-over nor the wait (the subscribers already have the client's fatal error).
   */
  stop(drain = true): Promise<void> {
    this.stopPromise ??= this.runStop(drain);
    return this.stopPromise;
  }

  private async runStop(drain: boolean): Promise<void> {
    const { options } = this.deps;
    const drainMs = drain ? drainBoundMs(options) : 0;
    const quietMs = this.unwatched.value ? options.commitFrequencyMs : undefined;
    this.stopDrain = { sinceMs: options.clock.elapsedNow(), drainMs };
    const draining = drainingEvent(this.manager.statuses(), { drainMs, ...(quietMs === undefined ? {} : { quietMs }) });
    if (draining !== undefined) this.emit(draining);
    // A drain still going after a commit interval most likely waits for records nobody acks: said at
    // warn, so the default logger shows it then, not only when the drain gives up.
    const stillWaiting = drainMs > 0 && quietMs === undefined && Object.keys(draining?.unacked ?? {}).length > 0
      ? timer(options.commitFrequencyMs, options.scheduler).subscribe(() => this.warnStillDraining(drainMs - options.commitFrequencyMs))
      : undefined;
    if (drain && this.registered.value && this.failure === undefined && this.manager.pending().length > 0) {
      // Each lease goes to the member that gets it without this one, once it is ready: within
      // about an epoch poll and a check, bounded (a quarter of the shutdown bound at most) so a
      // stop never waits for a successor for long; each given up waits for its acks as a stop's do.
      const boundMs = Math.min(epochPollMs(options) + options.shardCheckFrequencyMs + 4 * options.throttleDelayMs, Math.floor(options.shutdownTimeoutMs / 4));
      this.stopDeadlineMs = options.clock.elapsedNow() + boundMs;
      const handedOver = firstValueFrom(race(this.drained$(), this.failed, timer(boundMs, options.scheduler)), { defaultValue: undefined }).catch(() => undefined);
      this.drainChanged();
      await handedOver;
    }
    this.halted.next();
    this.coordination?.unsubscribe();
    // The heartbeat goes on until every lease is released: they stay confirmed through their drain.
    await this.manager.stop(this.stopDrainLeftMs() ?? 0);
    stillWaiting?.unsubscribe();
    this.beatsHalted.next();
    this.beats?.unsubscribe();
    // `leases$` merges in `failed`, which only ever errors: without this, leases$ (and records$)
    // would never complete after a graceful stop, and `lastValueFrom(records$)` would hang.
    this.failed.complete();
    // A client that never reached the clients table (a failed start) wrote no row, took no lock
    // and held no shard: there is no group to leave, and trying would only report the same fault again.
    if (this.registered.value) await leaveGroup({ ...this.deps, emit: this.emit }, { replaced: this.replaced });
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

/** The table check wraps a transient DescribeTable failure in a retriable KinsumerError; the stream check throws the SDK's error. */
function retriableAtStart(error: unknown): boolean {
  return error instanceof KinsumerError ? error.retriable : isTransient(error);
}
