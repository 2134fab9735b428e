// The simulated world of one run: the stream, the three tables, the producer, the operator and the
// fleet of processes, all on one virtual timeline. It applies the schedule's commands and, once
// they are done, calms everything down and lets the group recover before the final checks.
import type { Observable } from 'rxjs';
import { MemoryCoordinationTables } from '../../src/testing/memory-coordination.js';
import { MemoryFanOut } from '../../src/testing/memory-fan-out.js';
import { MemoryCheckpointTable } from '../../src/testing/memory-lease-store.js';
import { MemoryStream } from '../../src/testing/memory-stream.js';
import { seededRandom } from '../support/seeded-random.js';
import { type CheckerSettings, InvariantChecker, START_BOUND_MS } from './checker.js';
import { EffectsLedger } from './effects-table.js';
import { FaultPlan } from './faults.js';
import { MemoryProbe } from './memory-probe.js';
import { SimOperator } from './operator.js';
import { type PoisonCall, SimProcess } from './process.js';
import { Producer } from './producer.js';
import { CLIENT_POOL, KINDS_OF_ISSUE_24, type Command, type FaultKind, type HandlerSpec, type SimConfig } from './schedule.js';
import { SimScheduler } from './sim-scheduler.js';

/** Virtual time of the group's start (any fixed date: runs must not depend on the wall clock). */
export const START_MS = 1_764_000_000_000;
/** The stream exists this long before the start, so records can arrive before an AT_TIMESTAMP start. */
const PRELUDE_MS = 61_000;
const PRODUCER_TICK_MS = 100;
/** A supervisor's restart of a process poison killed (a pod's). */
const POISON_RESTART_MS = 100;
/** The longest backoff of a retried call (DEFAULT_BACKOFF.maxMs): a fault just before calm may delay a renewal this long. */
const MAX_BACKOFF_MS = 10_000;
/** The longest the calm phase waits for a slow group to read everything. */
const MAX_CALM_MS = 3_600_000;

/** Ways to break the world on purpose, to prove the checker fails a broken group. */
export type Sabotage = 'drop-record' | 'ignore-fence' | 'unfenced-transaction';

export interface WorldOptions {
  readonly kinds: ReadonlySet<FaultKind>;
  readonly sabotage?: Sabotage;
}

/**
 * Once calm and every member has watched the others for a while (its checks aimed at their
 * heartbeats), how long after a crashed member's last heartbeat's send its shards may still lack
 * another owner: the TTL, the reader's residual uncertainty (a bisection target and the reads'
 * latency), the check at the expiry (a scan, the end of the life, the shard list), the capture's
 * first attempt (within half a poll) and its round trip. Docs: docs/liveness.md.
 */
export function failoverBoundMs(config: SimConfig): number {
  const t = config.timings;
  return t.leaseTtlMs + t.throttleDelayMs + 8 * config.storeLatencyMs + 250;
}

/** How long the calm group is left alone before the timed crash (the `failover` kind): long enough for aimed checks to learn the heartbeats. */
const FAILOVER_WARMUP_TTLS = 5;

/**
 * How long a readable shard may stay without a live owner once the schedule has calmed: an owner
 * that crashed just before expires after one TTL; its client row too, and the survivors' next
 * check (at most one shard check) reassigns; a capture poll follows. A new child shard waits for
 * the leader's list refresh; a hand-off for the drain; a renewal delayed by a fault's backoff for
 * the longest backoff. Generous on purpose: this bounds a hand-off, it does not time it.
 */
export function ownershipBoundMs(config: SimConfig): number {
  const t = config.timings;
  const drainMs = 0.75 * Math.min(t.shutdownTimeoutMs, t.leaseTtlMs);
  return 2 * t.leaseTtlMs + 2 * t.shardCheckFrequencyMs + t.leaderActionFrequencyMs + 4 * t.throttleDelayMs + drainMs + MAX_BACKOFF_MS;
}

/** The group, its stream, its tables and the checker watching them. */
export class World {
  readonly scheduler = new SimScheduler(START_MS - PRELUDE_MS);
  readonly stream: MemoryStream;
  // DynamoDB's clock, as its answers' Date header tells it: the true timeline, in whole seconds.
  readonly checkpoints = new MemoryCheckpointTable({ now: () => Math.floor(this.scheduler.now() / 1000) * 1000 });
  readonly coordination = new MemoryCoordinationTables();
  readonly checker: InvariantChecker;
  readonly faults: FaultPlan;
  readonly producer: Producer;
  /** Enhanced fan-out of the stream, when the group reads with it. */
  readonly fanOut: MemoryFanOut | undefined;
  /** Counts the records processes keep reachable (the `memory` kind). */
  readonly probe: MemoryProbe | undefined;
  /** The effects table, when this run's records are acked with writes (the `effects` kind). */
  readonly effects: EffectsLedger | undefined;
  readonly processes: SimProcess[] = [];
  readonly random: () => number;
  /** What each command did, resolved against the world (`12.300 s: c1#1 freezes for 1300 ms`). */
  readonly log: string[] = [];
  readonly #incarnations = new Map<number, number>();
  readonly #resetShards = new Set<string>();
  /** Poison records' handler calls (each killed its process), by record id. */
  readonly #poisonCalls = new Map<string, { readonly shardId: string; readonly calls: number; readonly maxDeliveries: number }>();
  readonly #operator: SimOperator;
  readonly #startTimestampMs: number;
  #producing = true;
  #calmed = false;
  #dropped: string | undefined;

  constructor(readonly config: SimConfig, readonly options: WorldOptions) {
    this.random = seededRandom(config.rngSeed);
    const t = config.timings;
    const now = () => this.scheduler.now();
    this.stream = new MemoryStream({ shardCount: config.shards, clock: now });
    this.faults = new FaultPlan(this.random, now);
    this.#startTimestampMs = START_MS - config.startAgoMs;
    const settings: CheckerSettings = {
      startMs: START_MS,
      leaseTtlMs: t.leaseTtlMs,
      renewIntervalMs: Math.max(1, Math.floor(t.leaseTtlMs / 3)),
      maxInFlightRecords: t.maxInFlightRecords,
      start: config.start,
      startTimestampMs: this.#startTimestampMs,
      ownershipBoundMs: ownershipBoundMs(config),
      startBoundMs: START_BOUND_MS,
      ...(options.kinds.has('failover') ? { failoverBoundMs: failoverBoundMs(config) } : {}),
    };
    this.checker = new InvariantChecker(settings);
    for (const shardId of this.stream.shardIds()) this.checker.shardCreated(shardId, []);
    this.probe = options.kinds.has('memory') ? new MemoryProbe(this.checker, t.maxInFlightRecords) : undefined;
    this.producer = new Producer(this.stream, this.checker, config, this.random, now, this.probe);
    this.fanOut = config.readMode === 'fan-out' ? new MemoryFanOut(this.stream, { scheduler: this.scheduler }) : undefined;
    // With every kind, half the runs ack with writes (the others keep plain acks under every
    // trouble); with a chosen set that holds it, all. Its own draw: the world's stays as it was.
    // (Every kind of issue 24, when effects came: a kind added since leaves the draw as it was.)
    const everyKind = KINDS_OF_ISSUE_24.every((kind) => options.kinds.has(kind));
    const effects = options.kinds.has('effects') && (!everyKind || seededRandom(config.rngSeed ^ 0x24e7)() < 0.5);
    this.effects = effects ? new EffectsLedger() : undefined;
    this.#operator = new SimOperator({
      scheduler: this.scheduler, stream: this.stream, checkpoints: this.checkpoints, coordination: this.coordination, checker: this.checker, producer: this.producer,
      effects: this.effects, leaseTtlMs: t.leaseTtlMs, resetShards: this.#resetShards, calmed: () => this.#calmed, note: (text) => this.#note(text),
    });
  }

  /** Operator resets refused because a lease was held (as the CLI refuses). */
  get refusedResets(): number {
    return this.#operator.refusedResets;
  }

  /** Records before the start (some before an AT_TIMESTAMP start), the initial clients, the producer. */
  async start(): Promise<void> {
    const { config } = this;
    const early = Math.floor(config.preRecords / 2);
    this.produce(early);
    await this.scheduler.runUntil(Math.max(this.scheduler.now() + 1, this.#startTimestampMs + 1));
    this.produce(config.preRecords - early);
    await this.scheduler.runUntil(START_MS);
    for (let i = 0; i < config.clients; i += 1) this.#startProcess(i, config.handlers[i] ?? { mode: 'sync' });
    const tick = () => {
      if (!this.#producing) return;
      const expected = (config.recordsPerSecond * PRODUCER_TICK_MS) / 1000;
      const count = Math.floor(expected) + (this.random() < expected % 1 ? 1 : 0);
      if (count > 0) this.produce(count);
    };
    this.scheduler.schedule(function () {
      tick();
      this.schedule(undefined, PRODUCER_TICK_MS);
    }, PRODUCER_TICK_MS);
  }

  /** Moves virtual time on, checking ownership (and timed failovers) after every step once calm. */
  advance(ms: number): Promise<void> {
    return this.scheduler.runUntil(this.scheduler.now() + ms, () => {
      this.checker.checkOwnership(this.scheduler.now());
      this.checker.checkFailover(this.scheduler.now());
    });
  }

  async apply(command: Command): Promise<void> {
    const ttl = this.config.timings.leaseTtlMs;
    switch (command.type) {
      case 'produce':
        this.produce(command.count);
        return;
      case 'join':
        this.#join(command.client, command.handler);
        return;
      case 'leave': {
        const process = this.#pick(command.client, (p) => p.status() === 'running');
        this.#note(process === undefined ? 'leave: no running process' : `${process.label} stops`);
        void process?.stop();
        return;
      }
      case 'crash': {
        const process = this.#pick(command.client, (p) => p.alive);
        this.#note(process === undefined ? 'crash: no live process' : `${process.label} crashes`);
        process?.crash();
        return;
      }
      case 'pause': {
        const process = this.#pick(command.client, (p) => p.status() === 'running' || p.status() === 'stopping');
        const ms = (command.tenths * ttl) / 10;
        this.#note(process === undefined ? 'pause: no running process' : `${process.label} freezes for ${ms} ms`);
        if (process === undefined) return;
        process.freeze();
        this.scheduler.schedule(() => process.thaw(), ms);
        return;
      }
      case 'reset':
        await this.#operator.reset(command.shard, command.to, command.agoTenths, command.force);
        return;
      case 'reset-finished':
        this.#operator.resetFinishedParent(command.shard, command.force);
        return;
      case 'split': {
        const open = this.stream.openShardIds();
        const parent = open[command.shard % open.length];
        if (parent === undefined || this.stream.shardIds().length > 200) return;
        const children = this.stream.split(parent);
        for (const child of children) this.checker.shardCreated(child, [parent]);
        this.#note(`${parent} splits into ${children.join(', ')}`);
        return;
      }
      case 'merge':
        this.#merge(command.shard);
        return;
      case 'faults':
      case 'hangs':
        this.faults.open(command.client === 'all' ? 'all' : `c${command.client}`, command.type === 'faults' ? 'fault' : 'hang', command.percent, (command.tenths * ttl) / 10);
        return;
      case 'step': {
        const process = this.#pick(command.client, (p) => p.alive);
        this.#note(process === undefined ? 'step: no live process' : `${process.label}'s wall clock jumps ${command.stepMs > 0 ? '+' : ''}${command.stepMs / 1000} s`);
        process?.clock.step(command.stepMs);
        return;
      }
      case 'quiet':
        this.#quiet(command.shard, command.seconds * 1000, command.handoff);
        return;
      case 'measure':
        await this.measure();
        return;
      case 'restart':
        this.#restartSameId(command.client, command.alive);
        return;
      case 'drain':
        this.#drain(command.client, command.via, (command.tenths * ttl) / 10);
        return;
    }
  }

  /** A process started with the clientId of a running one (static membership): the old one still running, or killed first. */
  #restartSameId(index: number, alive: boolean): void {
    const old = this.#pick(index, (p) => p.status() === 'running');
    this.#note(old === undefined ? 'restart: no running process' : `${old.label} ${alive ? 'is replaced while it runs' : 'is killed and restarted'} with its clientId`);
    if (old === undefined) return;
    if (!alive) old.crash();
    this.#startProcess(Number(old.clientId.slice(1)), old.handlerSpec);
  }

  /**
   * A running process drains: `drain()` (stopped `ms` later), or `kinsumer drain` (its row marked,
   * the mark removed `ms` later, as `--undo` does).
   */
  #drain(index: number, via: 'api' | 'cli', ms: number): void {
    const process = this.#pick(index, (p) => p.status() === 'running');
    this.#note(process === undefined ? 'drain: no running process' : `${process.label} drains (${via === 'api' ? `drain(), stop() ${ms} ms later` : `kinsumer drain, --undo ${ms} ms later`})`);
    if (process === undefined) return;
    if (via === 'api') {
      void process.drain();
      this.scheduler.schedule(() => { if (!this.#calmed) void process.stop(); }, ms);
      return;
    }
    this.coordination.updateClient(process.clientId, (row) => ({ ...row, drainRequested: true }));
    this.scheduler.schedule(() => this.#undrain(process.clientId), ms);
  }

  #undrain(clientId: string): void {
    this.coordination.updateClient(clientId, (row) => ({ ...row, drainRequested: false }));
  }

  /** The memory kind: counts the records each process keeps reachable, after a garbage collection. */
  async measure(): Promise<void> {
    await this.probe?.measure(this.scheduler.now());
  }

  /** Milliseconds until every quiet shard may get records again (the schedule waits for that before it calms). */
  quietLeftMs(): number {
    return this.producer.quietLeftMs();
  }

  /**
   * The schedule is over: faults stop, frozen processes resume (crashed ones stay dead),
   * handlers ack everything, at least one process runs. Then the group has until the
   * ownership bound to own every shard, and a while longer to read everything.
   */
  async calm(): Promise<void> {
    this.#note('the schedule calms');
    this.#calmed = true;
    this.producer.clearQuiet();
    this.faults.clear();
    for (const process of this.processes) process.thaw();
    for (const process of this.processes) if (process.alive) process.calm();
    // Drains end: the rows' requests are withdrawn, and a process that drain() called stops.
    for (const row of this.coordination.clients()) if (row.drainRequested === true) this.#undrain(row.id);
    for (const process of this.processes) if (process.drainCalled && process.status() === 'running') void process.stop();
    if (!this.processes.some((p) => p.status() === 'running')) {
      const free = Array.from({ length: CLIENT_POOL }, (_, i) => i).find((i) => !this.#aliveOf(i).length) ?? 0;
      this.#startProcess(free, { mode: 'sync' });
    }
    let calmedAt = this.scheduler.now();
    this.checker.calm(calmedAt);
    if (this.options.kinds.has('failover')) calmedAt = await this.#timedCrash(calmedAt);
    const ttl = this.config.timings.leaseTtlMs;
    const bound = ownershipBoundMs(this.config);
    // Read until nothing is owed; a slow group (small maxInFlightRecords, fast producer) may take
    // long, so only a stall (nothing owed got acked for two bounds) or an hour ends the wait early.
    // Progress is any ack, not only of an owed record: a group may have to read records the
    // checker does not count as owed (a LATEST group's child shard read from its start) before it
    // reaches the owed ones (simulator seed 1463 ended a slow group's catch-up as a "stall").
    let owed = Number.POSITIVE_INFINITY;
    let acks = -1;
    let progressAt = calmedAt;
    for (;;) {
      await this.advance(ttl);
      const now = this.scheduler.now();
      this.checker.checkProgress(now);
      const elapsed = now - calmedAt;
      // The producer goes on while the group recovers, then stops so the group can finish reading.
      if (elapsed >= bound) this.#producing = false;
      if (elapsed < bound + ttl) continue;
      const left = [...this.checker.missing().values()].reduce((sum, seqs) => sum + seqs.length, 0);
      if (left < owed || this.checker.stats.acks > acks) {
        owed = Math.min(owed, left);
        acks = this.checker.stats.acks;
        progressAt = now;
      }
      // A stall ends the wait once read-stall (two bounds without an ack on a shard) had its chance.
      if (left === 0 || now - progressAt > 2 * bound + ttl || elapsed > MAX_CALM_MS) break;
    }
    this.checker.checkBalance(this.scheduler.now(), this.processes.filter((p) => p.status() === 'running'));
    this.checker.checkNothingLost(this.scheduler.now());
    for (const finding of this.effects?.check(this.checkpoints) ?? []) this.checker.fail('effects-once', this.scheduler.now(), finding.message);
    this.#checkPoison();
  }

  /** poison-bound: handler calls on each poison record, against the largest maxDeliveries of the handlers it killed. */
  #checkPoison(): void {
    for (const [id, { shardId, calls, maxDeliveries }] of this.#poisonCalls) {
      if (calls > maxDeliveries && !this.#resetShards.has(shardId)) {
        this.checker.fail('poison-bound', this.scheduler.now(), `${shardId}: poison record ${id} killed ${calls} processes, more than maxDeliveries (${maxDeliveries})`);
      }
    }
  }

  /** A handler killed `process` on poison `records`: its supervisor starts it again with the same clientId and handler. */
  #poisoned(client: number, process: SimProcess, records: readonly PoisonCall[], maxDeliveries: number): void {
    this.#note(`${process.label} dies on poison ${records.map((r) => `${r.id} (deliveryCount ${r.deliveryCount}${r.batch === 1 ? '' : `, in a batch of ${r.batch}`})`).join(', ')}`);
    for (const { id, shardId } of records) {
      const seen = this.#poisonCalls.get(id);
      this.#poisonCalls.set(id, { shardId, calls: (seen?.calls ?? 0) + 1, maxDeliveries: Math.max(seen?.maxDeliveries ?? 0, maxDeliveries) });
    }
    this.#restartLater(client, process, false, process.handlerSpec);
  }

  /**
   * The `failover` kind: the calm group is left alone for a while, then the running process holding
   * the most leases crashes (when another one runs), and the checker times its failover. Returns
   * the moment the calm phase counts from.
   */
  async #timedCrash(calmedAt: number): Promise<number> {
    await this.advance(FAILOVER_WARMUP_TTLS * this.config.timings.leaseTtlMs);
    const running = this.processes.filter((p) => p.status() === 'running');
    if (running.length < 2) return calmedAt;
    const owners = new Map<string, number>();
    for (const row of this.checkpoints.rows()) if (row.ownerId !== undefined) owners.set(row.ownerId, (owners.get(row.ownerId) ?? 0) + 1);
    const victim = [...running].sort((a, b) => (owners.get(b.clientId) ?? 0) - (owners.get(a.clientId) ?? 0) || (a.label < b.label ? -1 : 1))[0];
    if (victim === undefined || (owners.get(victim.clientId) ?? 0) === 0) return calmedAt;
    this.#note(`${victim.label} crashes (timed failover)`);
    this.checker.crashTimed(victim, this.scheduler.now());
    victim.crash();
    return this.scheduler.now();
  }

  /** Puts `count` records (see producer.ts). */
  produce(count: number): void {
    this.producer.produce(count);
  }

  /**
   * A shard gets no record for `ms`; with `handoff`, halfway through its owner is restarted
   * gracefully (a deploy): `stop()`, then a new process with the same clientId and handler.
   */
  #quiet(index: number, ms: number, handoff: boolean): void {
    const open = this.stream.openShardIds();
    const shardId = open[index % Math.max(1, open.length)];
    if (shardId === undefined) return;
    this.producer.quiet(shardId, this.scheduler.now() + ms);
    this.#note(`${shardId} gets no record for ${ms / 1000} s${handoff ? ', its owner restarts gracefully halfway' : ''}`);
    // Then records come again, on that shard first.
    this.scheduler.schedule(() => {
      if (!this.#calmed) this.producer.produceTo(shardId, 3);
    }, ms);
    if (!handoff) return;
    this.scheduler.schedule(() => {
      if (this.#calmed) return;
      const ownerId = this.checkpoints.row(shardId)?.ownerId;
      const owner = this.processes.find((p) => p.clientId === ownerId && p.status() === 'running');
      this.#note(owner === undefined ? `${shardId}: no running owner to restart` : `${owner.label} (owner of quiet ${shardId}) restarts gracefully`);
      if (owner === undefined) return;
      const client = Number(owner.clientId.slice(1));
      void owner.stop().then(() => {
        if (!this.#calmed && (this.options.kinds.has('dup-id') || this.#aliveOf(client).length === 0)) this.#startProcess(client, owner.handlerSpec);
      });
    }, ms / 2);
  }

  /** The one record the 'drop-record' sabotage hides from every reader. */
  dropped(seq: string): boolean {
    if (this.options.sabotage !== 'drop-record') return false;
    this.#dropped ??= seq;
    return this.#dropped === seq;
  }

  #note(text: string): void {
    this.log.push(`${((this.scheduler.now() - START_MS) / 1000).toFixed(3)} s: ${text}`);
  }

  #join(client: number, handler: HandlerSpec): void {
    const duplicates = this.options.kinds.has('dup-id');
    // Without duplicates, a join of a live id goes to the next id with no live process.
    const id = duplicates ? client : Array.from({ length: CLIENT_POOL }, (_, k) => (client + k) % CLIENT_POOL).find((i) => this.#aliveOf(i).length === 0);
    if (id !== undefined) this.#startProcess(id, handler);
  }

  #startProcess(client: number, handler: HandlerSpec): SimProcess {
    const incarnation = (this.#incarnations.get(client) ?? 0) + 1;
    this.#incarnations.set(client, incarnation);
    const process = new SimProcess(`c${client}#${incarnation}`, `c${client}`, this.config.skewsMs[client] ?? 0, handler, {
      scheduler: this.scheduler,
      stream: this.stream,
      checkpoints: this.checkpoints,
      coordination: this.coordination,
      checker: this.checker,
      faults: this.faults,
      config: this.config,
      random: seededRandom(Math.floor(this.random() * 2 ** 32)),
      startTimestampMs: this.#startTimestampMs,
      sabotage: this.options.sabotage,
      hidden: (seq) => this.dropped(seq),
      hasTwin: (process) => this.processes.some((p) => p !== process && p.clientId === process.clientId && p.alive),
      onFailed: (failed, byHandler) => this.#restartLater(client, failed, byHandler),
      onPoisoned: (poisoned, records, maxDeliveries) => this.#poisoned(client, poisoned, records, maxDeliveries),
      fanOut: this.fanOut,
      probe: this.probe,
      effects: this.effects,
    });
    this.processes.push(process);
    this.#note(`${process.label} starts${process.skewMs === 0 ? '' : ` (clock ${process.skewMs > 0 ? '+' : ''}${process.skewMs / 1000} s)`}`);
    return process;
  }

  /** A failed process's supervisor starts a new one with the same clientId, once the old one is gone (unless duplicates are allowed). */
  #restartLater(client: number, failed: SimProcess, byHandler: boolean, restartWith: HandlerSpec = { mode: 'sync' }): void {
    const t = this.config.timings;
    const handler = failed.handlerSpec;
    // A process poison killed is started again at once (restartWith: its own handler, which kills it again).
    const delayMs = restartWith.mode !== 'sync' ? POISON_RESTART_MS : byHandler && handler.mode === 'fail' ? (handler.restartTenths * t.leaseTtlMs) / 10 : t.leaseTtlMs;
    const attempt = (): boolean => {
      if (!this.options.kinds.has('dup-id') && this.#aliveOf(client).length > 0) return false;
      this.#startProcess(client, restartWith);
      return true;
    };
    this.scheduler.schedule(function () {
      if (!attempt()) this.schedule(undefined, PRODUCER_TICK_MS);
    }, delayMs);
  }

  #aliveOf(client: number): SimProcess[] {
    return this.processes.filter((p) => p.clientId === `c${client}` && p.alive);
  }

  /** The `index`-th (modulo) of the processes that match, in label order. */
  #pick(index: number, matches: (process: SimProcess) => boolean): SimProcess | undefined {
    const candidates = this.processes.filter(matches).sort((a, b) => (a.label < b.label ? -1 : 1));
    return candidates[index % Math.max(1, candidates.length)];
  }

  #merge(index: number): void {
    const shards = syncValue(this.stream.listShards()).filter((s) => s.open);
    const a = shards[index % Math.max(1, shards.length)];
    if (a === undefined) return;
    const b = shards.find((s) => BigInt(s.startingHashKey) === BigInt(a.endingHashKey) + 1n)
      ?? shards.find((s) => BigInt(s.endingHashKey) + 1n === BigInt(a.startingHashKey));
    if (b === undefined || this.stream.shardIds().length > 200) return;
    const child = this.stream.merge(a.shardId, b.shardId);
    this.checker.shardCreated(child, [a.shardId, b.shardId]);
    this.#note(`${a.shardId} and ${b.shardId} merge into ${child}`);
  }
}

/** The value of an Observable that answers synchronously (the in-memory stream's). */
function syncValue<T>(source: Observable<T>): T {
  let value: T | undefined;
  source.subscribe({ next: (v) => { value = v; } });
  if (value === undefined) throw new Error('expected a synchronous answer');
  return value;
}
