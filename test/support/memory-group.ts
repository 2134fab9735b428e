import { BehaviorSubject, type Observable, type OperatorFunction, Subscription, filter, switchMap, take, tap } from 'rxjs';
import { Kinsumer, type KinsumerSettings } from '../../src/index.js';
import type { KinsumerPorts } from '../../src/ports/backend.js';
import type { KinsumerEvent, KinsumerRecord } from '../../src/types.js';
import { MemoryCoordinationTables, MemoryMembershipStore, MemoryMetadataStore } from '../../src/testing/memory-coordination.js';
import { MemoryItemTables } from '../../src/testing/memory-items.js';
import { MemoryCheckpointTable, MemoryLeaseStore } from '../../src/testing/memory-lease-store.js';
import { MemoryStream, type MemoryStreamOptions } from '../../src/testing/memory-stream.js';
import { skewedScheduler } from './skewed-scheduler.js';
import { SteppedScheduler } from './stepped-scheduler.js';

/** A logger that drops everything (the default one writes warnings to stderr). */
export const QUIET = { debug() {}, info() {}, warn() {}, error() {} } as const;

/** Small timings, as the tests and the demo use them, and a silent logger (the default one writes warnings to stderr). */
export const FAST = {
  logger: QUIET,
  throttleDelayMs: 200,
  commitFrequencyMs: 200,
  shardCheckFrequencyMs: 500,
  leaderActionFrequencyMs: 1000,
  leaseTtlMs: 3000,
  shutdownTimeoutMs: 5000,
} as const;

/** A client of a {@link MemoryGroup}, with what it received. */
export interface Member {
  readonly id: string;
  readonly kinsumer: Kinsumer;
  readonly events: KinsumerEvent[];
  readonly received: KinsumerRecord[];
  /** What its `records$` errored with, if it did. */
  readonly errors: unknown[];
  /** The error `records$` ended with, if it did. */
  failure: unknown;
  /** The member's subscription to `records$` (unsubscribing it is the last unsubscribe). */
  subscription: Subscription;
  /** Its lease store (call counts, fault injection). */
  readonly store: MemoryLeaseStore;
  /** Its membership store (call counts, fault injection). */
  readonly membership: MemoryMembershipStore;
  /** Its metadata store (call counts, fault injection). */
  readonly metadata: MemoryMetadataStore;
  /** Freezes every call the member makes to the stores and the stream (a paused process); `resume` lets them through. */
  pause(): void;
  resume(): void;
}

/**
 * Several Kinsumer clients on one in-memory stream and one set of in-memory tables, on a
 * {@link SteppedScheduler}: whole-group behaviour (balance, handoff, reshards, zombies) in virtual
 * time, with the real client code and only the AWS adapters replaced.
 */
export class MemoryGroup {
  readonly scheduler = new SteppedScheduler();
  readonly stream: MemoryStream;
  // The table's clock is the shared timeline (DynamoDB's clock, whatever a member's wall clock says).
  readonly checkpoints = new MemoryCheckpointTable({ now: () => this.scheduler.now() });
  /** The tables records' writes go to (`ack({ writes })`), shared by every member. */
  readonly items = new MemoryItemTables();
  readonly coordination = new MemoryCoordinationTables();
  readonly members: Member[] = [];
  private seed = 1;

  /** `streamOptions`: the stream's limits (record size, read budget, retention), as `MemoryStream` takes them. */
  constructor(shardCount: number, readonly options: Partial<KinsumerSettings> = {}, streamOptions: Omit<MemoryStreamOptions, 'shardCount' | 'clock'> = {}) {
    this.stream = new MemoryStream({ ...streamOptions, shardCount, clock: () => this.scheduler.now() });
  }

  /** A deterministic jitter source per client. */
  private random(): () => number {
    let state = this.seed++ * 7919;
    return () => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return state / 2147483648;
    };
  }

  /** Starts a client that acks every record as soon as it is received (unless `ack` says otherwise). */
  join(id: string, options: {
    ack?: (record: KinsumerRecord) => boolean;
    extra?: Partial<KinsumerSettings>;
    /**
     * The member's wall clock is off by this: a number for a constant offset, a function (read at
     * each call) for a clock that steps. Its monotonic clock (`clock.elapsedNow`), its timers and
     * the stream keep the shared time, as `Date.now()` and `setTimeout` do on a host.
     */
    skewMs?: number | (() => number);
    /** Replaces ports with wrappers (a call that never answers, a malformed record). */
    wrap?: (ports: KinsumerPorts) => KinsumerPorts;
    /** Keep an error of `records$` in `failure` (the test looks at it) instead of failing the test run. */
    keepFailure?: boolean;
    /** The application's pipeline after each record is put in `received` (instead of `ack`). */
    pipeline?: OperatorFunction<KinsumerRecord, unknown>;
    /** Runs in the subscriber's error callback (with `keepFailure`), as an application's would. */
    onError?: (error: unknown, kinsumer: Kinsumer) => void;
  } = {}): Member {
    const gate = new BehaviorSubject(true);
    const gated = <T extends object>(target: T): T => new Proxy(target, {
      get(object, property, receiver) {
        const value: unknown = Reflect.get(object, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const result: unknown = (value as (...a: unknown[]) => unknown).apply(object, args);
          if (typeof result !== 'object' || result === null || !('subscribe' in result)) return result;
          return gate.pipe(filter(Boolean), take(1), switchMap(() => result as Observable<unknown>));
        };
      },
    });
    // A skewed member sees the shared virtual time through a wall clock that is off by skewMs.
    const scheduler = options.skewMs === undefined ? this.scheduler : skewedScheduler(this.scheduler, options.skewMs);
    const elapsedNow = () => this.scheduler.now();
    const clock = { wallNow: () => scheduler.now(), elapsedNow };
    const common = { clientId: id, leaseTtlMs: this.options.leaseTtlMs ?? FAST.leaseTtlMs, now: () => scheduler.now(), elapsedNow };
    // The client's name in its row, as the DynamoDB store writes options.clientName.
    const clientName = options.extra?.clientName ?? this.options.clientName;
    const membership = new MemoryMembershipStore({ ...common, tables: this.coordination, ...(clientName === undefined ? {} : { clientName }) });
    // A lease captured in a member's life lives as long as that life, as this member's membership reads it.
    const store = new MemoryLeaseStore({ ...common, table: this.checkpoints, items: this.items, members: membership, clients: this.coordination });
    const metadata = new MemoryMetadataStore({ ...common, tables: this.coordination });
    const kinsumer = new Kinsumer({
      streamName: 'memory', applicationName: 'group', clientId: id, ...FAST, ...this.options, ...options.extra,
      scheduler,
      clock,
      // The Kinsumer checks that these are SDK clients; the deps below replace every use of them.
      kinesis: { send: () => Promise.reject(new Error('unused')) } as never,
      dynamodb: { send: () => Promise.reject(new Error('unused')) } as never,
    }, () => {
      const ports: KinsumerPorts = {
        store: gated(store),
        membership: gated(membership),
        metadata: gated(metadata),
        stream: gated(this.stream),
        prepare: () => Promise.resolve(),
        random: this.random(),
      };
      return options.wrap === undefined ? ports : options.wrap(ports);
    });
    const member: Member = {
      id, kinsumer, store, membership, metadata, events: [], received: [], errors: [], failure: undefined, subscription: Subscription.EMPTY,
      pause: () => gate.next(false),
      resume: () => gate.next(true),
    };
    kinsumer.events$.subscribe((event) => member.events.push(event));
    const acking: OperatorFunction<KinsumerRecord, unknown> = tap((record) => { if (options.ack?.(record) ?? true) record.ack(); });
    member.subscription = kinsumer.records$.pipe(
      tap((record) => { member.received.push(record); }),
      options.pipeline ?? acking,
    ).subscribe({
      error: (error: unknown) => {
        member.failure = error;
        member.errors.push(error);
        options.onError?.(error, kinsumer);
        // Unexpected: rethrown, so RxJS reports it as unhandled and the test run fails as it did before.
        if (options.keepFailure !== true) throw error;
      },
    });
    this.members.push(member);
    return member;
  }

  /** Which client holds each shard now, from the checkpoint rows. */
  owners(): Map<string, string | undefined> {
    return new Map(this.checkpoints.rows().map((row) => [row.shardId, row.ownerId]));
  }

  /** Shards held per client id. */
  counts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const owner of this.owners().values()) if (owner !== undefined) counts.set(owner, (counts.get(owner) ?? 0) + 1);
    return counts;
  }

  /** Stops `member` gracefully, advancing virtual time until its `stop()` resolves (at most `limitMs`). */
  async stop(member: Member, limitMs = 20_000): Promise<void> {
    let stopped = false;
    void member.kinsumer.stop().then(() => { stopped = true; });
    await this.scheduler.until(() => stopped, `${member.id} stops`, limitMs);
  }

  /**
   * Stops every member gracefully (all at once, as a fleet's teardown does), advancing virtual time
   * until every `stop()` resolved: a stop hands its leases to the members that stay, which takes a
   * check or two of theirs (at most `limitMs`).
   */
  async stopAll(limitMs = 60_000): Promise<void> {
    let stopped = 0;
    const members = [...this.members];
    for (const member of members) void member.kinsumer.stop().catch(() => undefined).then(() => { stopped += 1; });
    await this.scheduler.until(() => stopped === members.length, 'every member stops', limitMs);
  }

  /** Every record received by any member, as `data` strings. */
  receivedData(): string[] {
    return this.members.flatMap((m) => m.received.map((r) => new TextDecoder().decode(r.data)));
  }
}
