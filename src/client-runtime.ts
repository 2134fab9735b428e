import {
  type Observable, type Subscription, Subject, concat, defer, from, ignoreElements, map, merge,
  takeUntil,
} from 'rxjs';
import { isTransient } from './aws-errors.js';
import { retryTransient } from './backoff.js';
import type { MembershipStore, MetadataStore } from './coordination-ports.js';
import { KinsumerError } from './errors.js';
import { coordinate, leaveGroup } from './coordinator.js';
import { asError } from './failure.js';
import { LeaseManager } from './lease-manager.js';
import type { ResolvedOptions } from './options.js';
import type { LeaseStore, StreamPort } from './ports.js';
import type { KinsumerEvent, ShardLease } from './types.js';

/**
 * The stores and the stream one client runs on: the DynamoDB and Kinesis adapters in production,
 * the in-memory stores of `kinsumer/testing` in tests. What a {@link KinsumerBackend} builds.
 */
export interface KinsumerPorts {
  /** The checkpoints table: shard leases and their checkpoints. */
  readonly store: LeaseStore;
  /** The clients table: heartbeats and the live members of the group. */
  readonly membership: MembershipStore;
  /** The metadata table: the leader lock and the cached shard list. */
  readonly metadata: MetadataStore;
  /** The Kinesis stream the group reads. */
  readonly stream: StreamPort;
  /** Runs once before coordination starts: table and stream checks (or creation). */
  readonly prepare: () => Promise<void>;
  /** Jitter source for retry backoff. Default `Math.random`. */
  readonly random?: () => number;
}

/**
 * The second argument of `new Kinsumer(options, backend)`: builds the {@link KinsumerPorts} a client
 * runs on, in place of the AWS adapters, once the options are resolved (at the first subscribe).
 * Tests pass one that returns `MemoryStream`, `MemoryLeaseStore`, `MemoryMembershipStore` and
 * `MemoryMetadataStore` instances, to run a whole consumer group on virtual time.
 *
 * @param options - The client's resolved options (its id, TTLs, scheduler).
 * @param emit - Reports an event on `Kinsumer.events$` (and to the logger).
 */
export type KinsumerBackend = (options: ResolvedOptions, emit: (event: KinsumerEvent) => void) => KinsumerPorts;

/** Everything a running client talks to: its ports, plus the options and the event sink. */
export interface ClientDeps extends KinsumerPorts {
  /** The client's resolved options. */
  readonly options: ResolvedOptions;
  /** Reports an event on `Kinsumer.events$`. */
  readonly emit: (event: KinsumerEvent) => void;
}

/**
 * One started client: prepare, then coordinate and hold leases until stopped or failed.
 * `leases$` replays the leases held now to each new subscriber, then emits new captures;
 * it completes after a stop and errors on a fault that stops the client.
 */
export class ClientRuntime {
  readonly leases$: Observable<ShardLease>;
  private readonly manager: LeaseManager;
  private readonly failed = new Subject<never>();
  private readonly halted = new Subject<void>();
  private coordination: Subscription | undefined;
  private stopPromise: Promise<void> | undefined;
  private failure: Error | undefined;

  constructor(private readonly deps: ClientDeps) {
    this.manager = new LeaseManager({
      store: deps.store,
      stream: deps.stream,
      options: deps.options,
      emit: deps.emit,
      fail: (error, shardId) => this.fail(error, shardId),
      ...(deps.random === undefined ? {} : { random: deps.random }),
    });
    this.leases$ = merge(
      defer(() => concat(from(this.manager.active()), this.manager.captured$)),
      this.failed,
    );
    this.start();
  }

  private start(): void {
    const { deps } = this;
    this.coordination = defer(() => from(deps.prepare())).pipe(
      // A throttled or failed DescribeTable / ListShards at start is a transient fault like any
      // other: retried with backoff, never the end of the client (found by the chaos run).
      retryTransient({ operation: 'prepare', scheduler: deps.options.scheduler, emit: deps.emit, isRetriable: retriableAtStart }),
      map(() => undefined),
      (prepared$) => concat(prepared$.pipe(ignoreElements()), coordinate({
        membership: deps.membership,
        metadata: deps.metadata,
        store: deps.store,
        stream: deps.stream,
        options: deps.options,
        emit: deps.emit,
        held: () => this.manager.held(),
        want: (wanted) => this.manager.want(wanted),
      })),
      takeUntil(this.halted),
    ).subscribe({ error: (error: unknown) => this.fail(asError(error)) });
  }

  /** Shards still held (for a timeout message). */
  pending(): string[] {
    return this.manager.pending();
  }

  /** Stops coordinating, ends every lease gracefully, leaves the group. Idempotent. */
  stop(): Promise<void> {
    this.stopPromise ??= this.runStop();
    return this.stopPromise;
  }

  private async runStop(): Promise<void> {
    this.halted.next();
    this.coordination?.unsubscribe();
    await this.manager.stop();
    // `leases$` merges in `failed`, which only ever errors: without this, leases$ (and records$)
    // would never complete after a graceful stop, and `lastValueFrom(records$)` would hang.
    this.failed.complete();
    await leaveGroup(this.deps);
  }

  private fail(error: Error, shardId?: string): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    this.deps.emit(shardId === undefined ? { type: 'error', error } : { type: 'error', error, shardId });
    this.deps.options.logger.error({ err: error }, 'kinsumer: stopping after a fatal error');
    this.failed.error(error);
    // Release what can be released; the subscriber already has the error.
    void this.stop();
  }
}

/** The table check wraps a transient DescribeTable failure in a retriable KinsumerError; the stream check throws the SDK's error. */
function retriableAtStart(error: unknown): boolean {
  return error instanceof KinsumerError ? error.retriable : isTransient(error);
}
