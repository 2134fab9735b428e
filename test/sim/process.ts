// One simulated process: a real Kinsumer on the in-memory backends, with its own view of the
// clock (skewed, freezable), its ports wrapped for faults, and a handler that acks as the schedule
// says. What it receives, acks and gets accepted by the tables is reported to the checker.
import { BehaviorSubject, EMPTY, type Observable, type Subscription, ignoreElements, mergeMap, tap, throwError, timer } from 'rxjs';
import { Kinsumer } from '../../src/index.js';
import { QUIET } from '../support/memory-group.js';
import type { CheckpointWrite, HeldLease, StoredCheckpoint } from '../../src/ports/lease-store.js';
import { MemoryMembershipStore, MemoryMetadataStore, type MemoryCoordinationTables } from '../../src/testing/memory-coordination.js';
import { MemoryLeaseStore, type MemoryCheckpointTable } from '../../src/testing/memory-lease-store.js';
import type { MemoryStream } from '../../src/testing/memory-stream.js';
import type { KinsumerRecord } from '../../src/types.js';
import { seededRandom } from '../support/seeded-random.js';
import type { Delivery, InvariantChecker, ObservedCheckpoint, ProcessView } from './checker.js';
import { leakyStream, unfencedStore } from './sabotage.js';
import { type CallerState, type FaultPlan, faultyPort } from './faults.js';
import type { HandlerSpec, SimConfig } from './schedule.js';
import { ClientClock, type SimScheduler } from './sim-scheduler.js';
import type { Sabotage } from './world.js';

/** What every process of one world shares. */
export interface ProcessDeps {
  readonly scheduler: SimScheduler;
  readonly stream: MemoryStream;
  readonly checkpoints: MemoryCheckpointTable;
  readonly coordination: MemoryCoordinationTables;
  readonly checker: InvariantChecker;
  readonly faults: FaultPlan;
  readonly config: SimConfig;
  readonly random: () => number;
  /** An AT_TIMESTAMP group's start. */
  readonly startTimestampMs: number;
  /** Break a port on purpose (the simulation's own tests). */
  readonly sabotage?: Sabotage | undefined;
  /** Which record the 'drop-record' sabotage hides. */
  readonly hidden: (seq: string) => boolean;
  /** Another live process has the same clientId. */
  readonly hasTwin: (process: SimProcess) => boolean;
  /** Called when the process's pipeline ended with an error (its handler's or the library's). */
  readonly onFailed: (process: SimProcess, handlerFailure: boolean) => void;
}

/** The error a failing handler throws into its pipeline. */
class HandlerFailure extends Error {
  constructor() {
    super('handler failed (simulated)');
    this.name = 'HandlerFailure';
  }
}

type Status = ReturnType<ProcessView['status']>;

/** A Kinsumer process of the simulated fleet. */
export class SimProcess implements ProcessView, CallerState {
  readonly clock: ClientClock;
  readonly skewMs: number;
  readonly sending$ = new BehaviorSubject(true);
  readonly kinsumer: Kinsumer;
  /** Stored records delivered and not acked yet: the calm phase acks them all. */
  readonly #unacked = new Set<() => void>();
  readonly #shardBusyUntil = new Map<string, number>();
  #status: Status = 'running';
  #thawTo: Status = 'running';
  #handler: HandlerSpec;
  readonly #startHandler: HandlerSpec;
  #received = 0;
  #stopping: Promise<void> | undefined;
  readonly #subscription: Subscription;

  constructor(
    readonly label: string,
    readonly clientId: string,
    skewMs: number,
    handler: HandlerSpec,
    private readonly deps: ProcessDeps,
  ) {
    const { scheduler, config, checker, faults, random } = deps;
    const t = config.timings;
    this.#handler = handler;
    this.#startHandler = handler;
    this.skewMs = skewMs;
    this.clock = new ClientClock(scheduler, skewMs);
    const clock = this.clock;
    const common = { clientId, leaseTtlMs: t.leaseTtlMs, now: () => clock.now(), latencyMs: config.storeLatencyMs, scheduler: clock };
    const memoryStore = new MemoryLeaseStore({ ...common, table: deps.checkpoints });
    const rawStore = deps.sabotage === 'ignore-fence' ? unfencedStore(memoryStore, deps.checkpoints, () => clock.now()) : memoryStore;
    const trueNow = () => scheduler.now();
    const store = faultyPort(rawStore, this, faults, random, (op, args, answer, calledAtMs) => this.#storeAnswered(op, args, answer, calledAtMs), trueNow);
    const membership = faultyPort(new MemoryMembershipStore({ ...common, tables: deps.coordination }), this, faults, random);
    const metadata = faultyPort(new MemoryMetadataStore({ ...common, tables: deps.coordination }), this, faults, random);
    const rawStream = deps.sabotage === 'drop-record' ? leakyStream(deps.stream, deps.hidden) : deps.stream;
    const stream = faultyPort(rawStream, this, faults, random, (op, args) => {
      if (op === 'getShardIterator') checker.iteratorIssued(String(args[0]), deps.stream.records(String(args[0])).length);
    }, trueNow);
    const jitter = seededRandom(Math.floor(random() * 2 ** 32));
    this.kinsumer = new Kinsumer({
      streamName: 'simulated', applicationName: 'sim', clientId, logger: QUIET,
      throttleDelayMs: t.throttleDelayMs,
      commitFrequencyMs: t.commitFrequencyMs,
      shardCheckFrequencyMs: t.shardCheckFrequencyMs,
      leaderActionFrequencyMs: t.leaderActionFrequencyMs,
      leaseTtlMs: t.leaseTtlMs,
      shutdownTimeoutMs: t.shutdownTimeoutMs,
      maxInFlightRecords: t.maxInFlightRecords,
      initialPosition: config.start === 'AT_TIMESTAMP' ? { timestamp: new Date(deps.startTimestampMs) } : config.start,
      scheduler: clock,
      // The Kinsumer checks that these are SDK clients; the backend below replaces every use of them.
      kinesis: { send: () => Promise.reject(new Error('unused')) } as never,
      dynamodb: { send: () => Promise.reject(new Error('unused')) } as never,
    }, () => ({ store, membership, metadata, stream, prepare: () => Promise.resolve(), random: jitter }));
    this.kinsumer.events$.subscribe((event) => {
      if (event.type === 'lease-acquired') checker.sessionOpened(this, event.shardId, event.fencingToken, scheduler.now());
      if (TRACE) trace(scheduler.now(), label, event);
    });
    this.#subscription = this.kinsumer.records$.pipe(mergeMap((record) => this.#handle(record))).subscribe({
      error: (error: unknown) => this.#failed(error),
    });
  }

  /** The handler it was started with. */
  get handlerSpec(): HandlerSpec {
    return this.#startHandler;
  }

  get crashed(): boolean {
    return this.#status === 'crashed';
  }

  status(): Status {
    return this.#status;
  }

  /** Alive: it may still hold leases and write (frozen processes included). */
  get alive(): boolean {
    return this.#status === 'running' || this.#status === 'stopping' || this.#status === 'frozen';
  }

  /** SIGSTOP: no timer runs, no call goes out, until {@link thaw}. */
  freeze(): void {
    if (this.#status !== 'running' && this.#status !== 'stopping') return;
    this.#thawTo = this.#status;
    this.#status = 'frozen';
    this.clock.freeze();
    this.sending$.next(false);
  }

  thaw(): void {
    if (this.#status !== 'frozen') return;
    this.#status = this.#thawTo;
    this.clock.thaw();
    this.sending$.next(true);
  }

  /** SIGKILL, or a host gone: frozen for good. */
  crash(): void {
    if (!this.alive) return;
    this.#status = 'crashed';
    this.clock.kill();
    this.sending$.next(false);
  }

  /** Graceful stop (the leaving process's `stop()`). */
  stop(): Promise<void> {
    if (this.#status === 'running') this.#status = 'stopping';
    this.#stopping ??= this.kinsumer.stop().catch(() => undefined).then(() => {
      if (this.#status === 'stopping') this.#status = 'stopped';
    });
    return this.#stopping;
  }

  /** The schedule calms: the handler acks everything, at once, from now on. */
  calm(): void {
    this.#handler = { mode: 'sync' };
    for (const ack of [...this.#unacked]) ack();
  }

  #handle(record: KinsumerRecord): Observable<never> {
    const { checker, scheduler } = this.deps;
    const delivery = checker.delivered(this, record.shardId, record.sequenceNumber, scheduler.now());
    const ack = this.#acker(record, delivery);
    const handler = this.#handler;
    const nth = this.#received;
    this.#received += 1;
    switch (handler.mode) {
      case 'sync':
        ack();
        return EMPTY;
      case 'slow': {
        // One at a time per shard, as concatMap would: each waits for the one before it.
        const now = scheduler.now();
        const due = Math.max(now, this.#shardBusyUntil.get(record.shardId) ?? now) + handler.delayMs;
        this.#shardBusyUntil.set(record.shardId, due);
        return timer(due - now, this.clock).pipe(tap(ack), ignoreElements());
      }
      case 'ooo':
        return timer(Math.floor(this.deps.random() * handler.maxDelayMs), this.clock).pipe(tap(ack), ignoreElements());
      case 'never':
        if (nth !== handler.nth) ack();
        return EMPTY;
      case 'fail':
        if (nth === handler.nth) return throwError(() => new HandlerFailure());
        ack();
        return EMPTY;
    }
  }

  #acker(record: KinsumerRecord, delivery: Delivery): () => void {
    const ack = () => {
      if (!this.#unacked.delete(ack)) return;
      this.deps.checker.acked(delivery, this.deps.scheduler.now());
      record.ack();
    };
    this.#unacked.add(ack);
    return ack;
  }

  #failed(error: unknown): void {
    const handlerFailure = error instanceof HandlerFailure;
    // §7.1: the newer of two processes with one clientId gives up with ConfigError; that is its contract.
    const duplicate = error instanceof Error && error.name === 'ConfigError' && this.deps.hasTwin(this);
    if (!handlerFailure && !duplicate) {
      this.deps.checker.libraryError(this.deps.scheduler.now(), `${this.label}: records$ errored: ${describeError(error)}`);
    }
    // The pipeline's end unsubscribed from records$: the Kinsumer is stopping gracefully.
    void this.stop();
    this.#subscription.unsubscribe();
    this.deps.onFailed(this, handlerFailure);
  }

  #storeAnswered(operation: string, args: readonly unknown[], answer: unknown, calledAtMs: number): void {
    const { checker, scheduler, checkpoints } = this.deps;
    const now = scheduler.now();
    if (operation === 'capture') {
      const held = answer as HeldLease | undefined;
      if (held !== undefined) checker.captured(this, held.shardId, held.leaseCounter, now);
      return;
    }
    if (operation !== 'commit' && operation !== 'renew' && operation !== 'release') return;
    const lease = args[0] as HeldLease;
    const write = args[1] as CheckpointWrite | undefined;
    if (TRACE) trace(now, this.label, { type: `store ${operation}`, shardId: lease.shardId, write });
    const row = checkpoints.row(lease.shardId);
    checker.wrote(this, lease.shardId, operation, lease.leaseCounter, observedCheckpoint(write?.checkpoint), row?.finished ?? false, now, calledAtMs);
  }
}

// SIM_TRACE=1 prints every event and accepted write of every process, on virtual time: what a
// failing seed's replay needs to be read.
const TRACE = process.env.SIM_TRACE === '1';
function trace(nowMs: number, label: string, what: object): void {
  process.stderr.write(`${(nowMs / 1000).toFixed(3)} ${label} ${JSON.stringify(what, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}\n`);
}

/** A StoredCheckpoint as the checker sees it. */
export function observedCheckpoint(checkpoint: StoredCheckpoint | undefined): ObservedCheckpoint {
  if (checkpoint === undefined) return undefined;
  switch (checkpoint.type) {
    case 'position': return { type: 'position', sequence: BigInt(checkpoint.position.sequenceNumber) };
    case 'AT_TIMESTAMP': return { type: 'AT_TIMESTAMP', timestampMs: checkpoint.timestamp.getTime() };
    default: return { type: checkpoint.type };
  }
}

export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  return `${error.name}: ${error.message}${cause instanceof Error ? ` (cause ${cause.name}: ${cause.message})` : ''}`;
}
