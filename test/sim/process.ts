// One simulated process: a real Kinsumer on the in-memory backends, with its own view of the
// clock (skewed, freezable), its ports wrapped for faults, and a handler that acks as the schedule
// says. What it receives, acks and gets accepted by the tables is reported to the checker.
import { BehaviorSubject, EMPTY, type Observable, type Subscription, ignoreElements, mergeMap, tap, throwError, timer } from 'rxjs';
import { Kinsumer } from '../../src/index.js';
import { QUIET } from '../support/memory-group.js';
import type { Registration } from '../../src/ports/coordination.js';
import type { CheckpointWrite, HeldLease, StoredCheckpoint, WritesTransaction } from '../../src/ports/lease-store.js';
import type { IteratorStart, StreamPort } from '../../src/ports/stream.js';
import type { MemoryFanOut } from '../../src/testing/memory-fan-out.js';
import { MemoryMembershipStore, MemoryMetadataStore, type MemoryCoordinationTables } from '../../src/testing/memory-coordination.js';
import { MemoryLeaseStore, type MemoryCheckpointTable } from '../../src/testing/memory-lease-store.js';
import type { MemoryStream } from '../../src/testing/memory-stream.js';
import type { AckOptions, KinsumerRecord } from '../../src/types.js';
import { seededRandom } from '../support/seeded-random.js';
import type { Delivery, InvariantChecker, ObservedCheckpoint, ProcessView } from './checker.js';
import { EFFECTS_TABLE, type EffectsLedger, effectWrites } from './effects-table.js';
import type { CallOrdering } from './handler-rules.js';
import type { MemoryProbe } from './memory-probe.js';
import { dateHeaderStream } from './date-header.js';
import { isPoison } from '../../examples/demo/poison.js';
import { HandlerFailure, operatorPipeline } from './operator-pipeline.js';
import { leakyStream, unfencedStore, unfencedTransactions } from './sabotage.js';
import { type CallerState, type FaultPlan, faultyFanOut, faultyPort } from './faults.js';
import type { HandlerSpec, SimConfig } from './schedule.js';
import { ClientClock, type SimScheduler } from './sim-scheduler.js';
import type { Sabotage } from './world.js';

/** What every process of one world shares. */
/** A poison record a handler call killed its process on. */
export interface PoisonCall {
  readonly id: string;
  readonly shardId: string;
  readonly deliveryCount: number;
  /** Records in the call (1, or a batch's). */
  readonly batch: number;
}

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
  /** Called when a handler killed the process on poison records (the `poison` kind). */
  readonly onPoisoned: (process: SimProcess, records: readonly PoisonCall[], maxDeliveries: number) => void;
  /** The stream's enhanced fan-out, when the group reads with `readMode: 'fan-out'`. */
  readonly fanOut: MemoryFanOut | undefined;
  /** Counts reachable records (the `memory` kind). */
  readonly probe: MemoryProbe | undefined;
  /** The effects table, when records are acked with writes (the `effects` kind). */
  readonly effects: EffectsLedger | undefined;
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
  /** What the checker knows of each record delivered (weakly: the memory probe counts what the library keeps). */
  // Records onFailure dead-lettered with their writes (with effects).
  readonly #deadLetters = new WeakSet<KinsumerRecord>();
  readonly #deliveries = new WeakMap<KinsumerRecord, Delivery>();
  /** With effects: records delivered and not yet committed, by id (the operators commit a batch's writes without record.ack()). */
  readonly #committing = new Map<string, Delivery>();
  /** Tokens of transactions seen applied: a re-send's success (DynamoDB's idempotent replay) writes nothing. */
  readonly #appliedTokens = new Set<string>();
  #calm = false;
  #drainCalled = false;
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
    // Two clocks, as on a host (design §8.3): the wall clock (`now()`: skewed, stepped) is only
    // written; every expiry is a difference on the monotonic one, the shared timeline.
    const wallClock = { wallNow: () => clock.now(), elapsedNow: () => scheduler.now() };
    const common = {
      clientId, leaseTtlMs: t.leaseTtlMs, now: () => clock.now(), elapsedNow: () => scheduler.now(), latencyMs: config.storeLatencyMs, scheduler: clock,
    };
    // A lease captured in a member's life lives as long as that life, as this process's membership reads it.
    const memoryMembership = new MemoryMembershipStore({ ...common, tables: deps.coordination });
    const memoryStore = new MemoryLeaseStore({
      ...common, table: deps.checkpoints, members: memoryMembership, clients: deps.coordination, ...(deps.effects === undefined ? {} : { items: deps.effects.items }),
    });
    const rawStore = deps.sabotage === 'ignore-fence' ? unfencedStore(memoryStore, deps.checkpoints, () => clock.now())
      : deps.sabotage === 'unfenced-transaction' ? unfencedTransactions(memoryStore, () => scheduler.now()) : memoryStore;
    const trueNow = () => scheduler.now();
    const store = faultyPort(rawStore, this, faults, random, (op, args, answer, calledAtMs) => this.#storeAnswered(op, args, answer, calledAtMs), trueNow);
    const membership = faultyPort(memoryMembership, this, faults, random, (op, args, answer, calledAtMs) => this.#membershipAnswered(op, answer, calledAtMs), trueNow);
    const metadata = faultyPort(new MemoryMetadataStore({ ...common, tables: deps.coordination }), this, faults, random);
    const rawStream = dateHeaderStream(deps.sabotage === 'drop-record' ? leakyStream(deps.stream, deps.hidden) : deps.stream);
    const firstRead = (shardId: string, start: IteratorStart) => {
      checker.iteratorIssued(shardId, deps.stream.records(shardId).length, scheduler.now(), start.type === 'LATEST');
    };
    const polling = faultyPort(rawStream, this, faults, random, (op, args) => {
      if (op === 'getShardIterator') firstRead(String(args[0]), args[1] as IteratorStart);
    }, trueNow);
    const fanOut = deps.fanOut === undefined ? undefined : faultyFanOut(deps.fanOut, this, faults, random, firstRead);
    const stream: StreamPort = fanOut === undefined ? polling
      : new Proxy(polling, { get: (target, property, receiver): unknown => (property === 'fanOut' ? fanOut : Reflect.get(target, property, receiver)) });
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
      readMode: config.readMode,
      scheduler: clock,
      clock: wallClock,
      // The Kinsumer checks that these are SDK clients; the backend below replaces every use of them.
      kinesis: { send: () => Promise.reject(new Error('unused')) } as never,
      dynamodb: { send: () => Promise.reject(new Error('unused')) } as never,
    }, () => ({ store, membership, metadata, stream, prepare: () => Promise.resolve(), random: jitter }));
    this.kinsumer.events$.subscribe((event) => {
      if (event.type === 'lease-acquired') checker.sessionOpened(this, event.shardId, event.fencingToken, scheduler.now());
      if (TRACE) trace(scheduler.now(), label, event);
    });
    const delivered$ = this.kinsumer.records$.pipe(tap((record) => this.#delivered(record)));
    const handled$: Observable<unknown> = handler.mode === 'records' || handler.mode === 'batches'
      // A batch larger than maxInFlightRecords never fills (the reader waits for acks first), so every
      // one waits its whole maxWaitMs: the README tells users to keep maxSize within it, as here.
      ? delivered$.pipe(operatorPipeline(handler.mode === 'batches' ? { ...handler, maxSize: Math.min(handler.maxSize, t.maxInFlightRecords) } : handler, {
        // Production passes consumer.options.scheduler (asyncScheduler), which schedulerClock times
        // on the monotonic clock: here the client's timers with now() on the true timeline.
        clock: clock.monotonic,
        random: seededRandom(Math.floor(random() * 2 ** 32)),
        calm: () => this.#calm,
        called: (records, attempt) => this.#called(records, attempt, handler.mode === 'batches' ? 'batch' : handler.ordering),
        deadLettered: (record: KinsumerRecord) => this.#deadLetters.add(record),
        ...(handler.poisonPermille === 0 ? {} : {
          kills: (records: readonly KinsumerRecord[]) => {
            const poison = records.filter((record) => isPoison(record.id, handler.poisonPermille));
            if (poison.length === 0) return false;
            this.crash();
            this.deps.onPoisoned(this, poison.map((record) => ({ id: record.id, shardId: record.shardId, deliveryCount: record.deliveryCount, batch: records.length })), handler.maxDeliveries);
            return true;
          },
        }),
        ...(deps.effects === undefined ? {} : { writes: (records: readonly KinsumerRecord[]) => records.flatMap(effectWrites) }),
        settled: (records) => {
          for (const record of records) {
            const delivery = this.#deliveries.get(record);
            if (delivery !== undefined) checker.handlers.settled(delivery, scheduler.now());
          }
        },
      }))
      : delivered$.pipe(mergeMap((record) => this.#handle(record)));
    this.#subscription = handled$.subscribe({ error: (error: unknown) => this.#failed(error) });
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

  /** `drain()`: hands its leases over and takes none from now on (the checker's drain-took counts from here). */
  drain(): Promise<void> {
    this.deps.checker.lives.draining(this, this.deps.scheduler.now());
    this.#drainCalled = true;
    return this.kinsumer.drain();
  }

  /** It drains because drain() was called (not only because its row asks it to). */
  get drainCalled(): boolean {
    return this.#drainCalled;
  }

  /** Graceful stop (the leaving process's `stop()`): it hands its leases over and takes none from now on. */
  stop(): Promise<void> {
    if (this.#status === 'running' || this.#status === 'frozen') this.deps.checker.lives.draining(this, this.deps.scheduler.now());
    if (this.#status === 'running') this.#status = 'stopping';
    this.#stopping ??= this.kinsumer.stop().catch(() => undefined).then(() => {
      if (this.#status === 'stopping') this.#status = 'stopped';
    });
    return this.#stopping;
  }

  /** The schedule calms: the handler acks everything, at once, from now on. */
  calm(): void {
    this.#calm = true;
    this.#handler = { mode: 'sync' };
    for (const ack of [...this.#unacked]) ack();
  }

  /** A record reached this process's pipeline: the checker is told, and (behind an operator) so is every ack. */
  #delivered(record: KinsumerRecord): void {
    const { checker, scheduler, probe } = this.deps;
    const delivery = checker.delivered(this, record.shardId, record.sequenceNumber, scheduler.now(), record.subSequenceNumber);
    this.#deliveries.set(record, delivery);
    probe?.watch(this, record.shardId, record, delivery);
    // With effects, a record counts as acked once a transaction carrying its writes commits.
    if (this.deps.effects !== undefined) {
      this.deps.effects.delivered(record);
      this.#committing.set(record.id, delivery);
    }
    if (this.#startHandler.mode !== 'records' && this.#startHandler.mode !== 'batches') return;
    // The operator acks the record itself: the checker sees the ack as the operator makes it (with
    // writes, once their transaction commits: until then the record counts as not acked).
    const ack = record.ack.bind(record);
    Object.defineProperty(record, 'ack', {
      configurable: true,
      value: (options?: AckOptions) => {
        if (options?.writes === undefined) {
          if (this.#deadLetters.has(record)) checker.fail('effects-once', scheduler.now(), `${record.id}: dead-lettered with writes by onFailure, acked without them (design §9.3)`);
          this.deps.effects?.ackedWithoutWrites(record);
          checker.acked(delivery, scheduler.now());
        }
        ack(options);
      },
    });
  }

  /** An operator calls its handler on `records` (attempt `attempt`); returns what to call when the call ends. */
  #called(records: readonly KinsumerRecord[], attempt: number, ordering: CallOrdering): () => void {
    const { checker, scheduler } = this.deps;
    const deliveries = records.map((record) => this.#deliveries.get(record)).filter((d): d is Delivery => d !== undefined);
    const key = ordering === 'partitionKey' ? (records[0]?.partitionKey ?? '') : '';
    const ended = checker.handlers.called(deliveries, ordering, key, attempt, scheduler.now());
    // The handler holds its records while a call runs (however the operator ends it).
    for (const delivery of deliveries) delivery.heldByHandler = true;
    return () => {
      for (const delivery of deliveries) delivery.heldByHandler = false;
      ended();
    };
  }

  #handle(record: KinsumerRecord): Observable<never> {
    const { scheduler } = this.deps;
    const delivery = this.#deliveries.get(record) as Delivery;
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
      case 'records':
      case 'batches':
        throw new Error('an operator handler is not a direct one');
    }
  }

  #acker(record: KinsumerRecord, delivery: Delivery): () => void {
    // A direct handler holds the record until it acks it (its queue, its timers).
    delivery.heldByHandler = true;
    const { effects } = this.deps;
    const ack = () => {
      if (!this.#unacked.delete(ack)) return;
      delivery.heldByHandler = false;
      if (effects === undefined) {
        this.deps.checker.acked(delivery, this.deps.scheduler.now());
        record.ack();
        return;
      }
      // Acked for the checker once the transaction with its checkpoint commits.
      record.ack({ writes: effectWrites(record) });
    };
    this.#unacked.add(ack);
    return ack;
  }

  #failed(error: unknown): void {
    // processBatches without onFailure errors with its own KinsumerError for records the handler
    // kept reporting failed (§7.2: "errors with its last error"): the handler's doing too.
    const reportedFailed = error instanceof Error && error.name === 'KinsumerError' && error.message.startsWith('reported failed by the batch handler');
    const handlerFailure = error instanceof HandlerFailure || reportedFailed;
    // §9.3: a process whose clientId another process took ends with ClientReplacedError; that is its contract.
    const replaced = error instanceof Error && error.name === 'ClientReplacedError';
    if (!handlerFailure && !replaced) {
      this.deps.checker.libraryError(this.deps.scheduler.now(), `${this.label}: records$ errored: ${describeError(error)}`);
    }
    // The pipeline's end unsubscribed from records$: the Kinsumer is stopping gracefully.
    void this.stop();
    this.#subscription.unsubscribe();
    // A replaced process is not restarted: the process that replaced it is its restart.
    if (!replaced) this.deps.onFailed(this, handlerFailure);
  }

  /** What the clients table answered: accepted heartbeats (their life, when sent), and a drain the row asks for. */
  #membershipAnswered(operation: string, answer: unknown, calledAtMs: number): void {
    if (operation !== 'heartbeat') return;
    const registration = answer as Registration;
    if (!registration.registered) return;
    const { checker, scheduler } = this.deps;
    checker.lives.heartbeat(this, registration.incarnation, calledAtMs, scheduler.now());
    if (registration.drainRequested) checker.lives.draining(this, scheduler.now());
    else if (!this.#drainCalled && this.#status === 'running') checker.lives.draining(this, undefined);
  }

  #storeAnswered(operation: string, args: readonly unknown[], answer: unknown, calledAtMs: number): void {
    const { checker, scheduler, checkpoints } = this.deps;
    const now = scheduler.now();
    if (operation === 'capture') {
      const held = answer as HeldLease | undefined;
      if (held !== undefined) checker.captured(this, held.shardId, held.leaseCounter, now, held.ownerIncarnation, calledAtMs);
      return;
    }
    if (operation === 'commitWithWrites') {
      const transaction = args[2] as WritesTransaction;
      // Only its first success wrote the row (the same token answers success again, even after the lease moved on).
      if (this.#appliedTokens.has(transaction.token)) return;
      this.#appliedTokens.add(transaction.token);
      this.#committed(transaction, now);
    }
    if (operation !== 'commit' && operation !== 'commitWithWrites' && operation !== 'renew' && operation !== 'release') return;
    const lease = args[0] as HeldLease;
    const write = args[1] as CheckpointWrite | undefined;
    if (TRACE) trace(now, this.label, { type: `store ${operation}`, shardId: lease.shardId, write });
    const row = checkpoints.row(lease.shardId);
    checker.wrote(this, lease.shardId, operation === 'commitWithWrites' ? 'commit' : operation, lease.leaseCounter, observedCheckpoint(write?.checkpoint), row?.finished ?? false, now, calledAtMs);
  }

  /** A transaction committed: the records whose writes it carried are acked (the checkpoint it wrote covers them). */
  #committed(transaction: WritesTransaction, now: number): void {
    for (const write of transaction.writes) {
      const id = write.Update?.TableName === EFFECTS_TABLE ? write.Update.Key?.id?.S : undefined;
      const delivery = id === undefined ? undefined : this.#committing.get(id);
      if (id === undefined || delivery === undefined) continue;
      this.#committing.delete(id);
      this.deps.checker.acked(delivery, now);
    }
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
    case 'position': {
      const { sequenceNumber, subSequenceNumber } = checkpoint.position;
      return subSequenceNumber === undefined ? { type: 'position', sequence: BigInt(sequenceNumber) } : { type: 'position', sequence: BigInt(sequenceNumber), sub: subSequenceNumber };
    }
    case 'AT_TIMESTAMP': return { type: 'AT_TIMESTAMP', timestampMs: checkpoint.timestamp.getTime() };
    default: return { type: checkpoint.type };
  }
}

export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  return `${error.name}: ${error.message}${cause instanceof Error ? ` (cause ${cause.name}: ${cause.message})` : ''}`;
}
