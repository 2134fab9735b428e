import {
  type MonoTypeOperatorFunction, type Observable, BehaviorSubject, EMPTY, catchError, concatMap, defer, distinctUntilChanged, exhaustMap, forkJoin,
  Subject, ignoreElements, map, merge, of, skip, switchMap, tap, timer,
} from 'rxjs';
import { assignShards, assignmentChanges } from './assignment.js';
import { classifyAwsError } from './aws-errors.js';
import type { CachedShard, LiveClient, MembershipStore, MetadataStore } from './coordination-ports.js';
import { asError, stopsTheClient } from './failure.js';
import { assignmentInput, cachedShardList, rowsToRead, sameShardList } from './group-view.js';
import type { ResolvedOptions } from './options.js';
import type { CheckpointRow, LeaseStore, StreamPort } from './ports.js';
import type { KinsumerEvent } from './types.js';

/** What the coordinator reads and writes. */
export interface CoordinatorDeps {
  readonly membership: MembershipStore;
  readonly metadata: MetadataStore;
  readonly store: LeaseStore;
  readonly stream: StreamPort;
  readonly options: ResolvedOptions;
  readonly emit: (event: KinsumerEvent) => void;
  /** The shards this client holds now (reported in its heartbeat). */
  readonly held: () => readonly string[];
  /** Receives, after every check, the shards this client should hold (id → parent ids). */
  readonly want: (wanted: ReadonlyMap<string, readonly string[]>) => void;
  /** Receives, after every check, how many live clients the group has, this one included (`status()`). */
  readonly members?: (count: number) => void;
}

/** How often the leader reaps client rows gone for 48 h: rarely, it is housekeeping. */
const REAP_EVERY_MS = 10 * 60 * 1000;

/**
 * Group coordination of one client, while subscribed: every `shardCheckFrequencyMs` it
 * heartbeats, reads the live clients and the shard list, evaluates the shared assignment and
 * hands this client's part to `want`; the live client with the lowest id takes the leader lock
 * and refreshes the shard list every `leaderActionFrequencyMs`, so only one process calls
 * ListShards. Never emits; errors only on a fault that stops the client (missing table or
 * stream, access denied) — everything else is reported and retried at the next tick.
 */
export function coordinate(deps: CoordinatorDeps): Observable<never> {
  const { options, emit } = deps;
  const leading$ = new BehaviorSubject(false);
  let lastWanted = '';

  // A check at the moment the next other client's row expires: a crashed client's shards are
  // reassigned then, not up to shardCheckFrequencyMs later.
  const expiryWake$ = new Subject<number>();
  const check$ = defer(() => deps.membership.heartbeat(deps.held())).pipe(
    concatMap(() => deps.membership.liveClients()),
    tap((clients) => {
      const delayMs = nextExpiryMs(clients, options.clientId, options.leaseTtlMs, options.scheduler.now());
      if (delayMs !== undefined && delayMs < options.shardCheckFrequencyMs) expiryWake$.next(delayMs);
    }),
    concatMap((clients) => lead(clients).pipe(map(() => clients))),
    concatMap((clients) => shardList().pipe(map((shards) => ({ clients, shards })))),
    concatMap(({ clients, shards }) => readRows(rowsToRead(shards, clients)).pipe(map((rows) => ({ clients, shards, rows })))),
    tap(({ clients, shards, rows }) => {
      const assignment = assignShards(assignmentInput(options.clientId, clients, shards, rows));
      const parents = new Map(shards.map((s) => [s.shardId, s.parentShardIds] as const));
      const wanted = new Map<string, readonly string[]>();
      for (const [shardId, clientId] of assignment) if (clientId === options.clientId) wanted.set(shardId, parents.get(shardId) ?? []);
      const key = [...wanted.keys()].join(',');
      const members = new Set([...clients.map((c) => c.id), options.clientId]).size;
      if (key !== lastWanted) {
        const changes = assignmentChanges(assignment, options.clientId, deps.held());
        emit({ type: 'rebalance', clients: members, assigned: [...wanted.keys()], acquire: changes.acquire, release: changes.release });
        lastWanted = key;
      }
      deps.members?.(members);
      deps.want(wanted);
    }),
    ignoreElements(),
    tolerate('coordination check', options.shardCheckFrequencyMs),
  );

  // Leadership follows the sorted membership: the lowest live id is the only candidate.
  function lead(clients: readonly LiveClient[]): Observable<unknown> {
    const lowest = [...clients.map((c) => c.id), options.clientId].sort()[0];
    if (lowest === options.clientId) {
      return deps.metadata.acquireLeadership().pipe(tap((held) => leading$.next(held)));
    }
    if (!leading$.value) return of(undefined);
    return deps.metadata.stepDown().pipe(tap(() => leading$.next(false)));
  }

  // The cached list; a missing or Go-only cache is rebuilt by whoever finds it (no idle fresh start).
  function shardList(): Observable<readonly CachedShard[]> {
    return deps.metadata.readShardCache().pipe(concatMap((cache) => {
      if (cache?.shards !== undefined && cache.shards.length > 0) return of(cache.shards);
      return refreshShardList(cache?.shards ?? []);
    }));
  }

  function refreshShardList(previous: readonly CachedShard[]): Observable<CachedShard[]> {
    return deps.stream.listShards().pipe(
      concatMap((listed) => {
        const closed = listed.filter((s) => !s.open && !previous.some((p) => p.shardId === s.shardId && p.finished)).map((s) => s.shardId);
        return readRows(closed).pipe(map((rows) => cachedShardList(listed, previous, rows)));
      }),
      concatMap((shards) => (sameShardList(previous, shards) ? of(shards) : deps.metadata.writeShardCache(shards).pipe(map(() => shards)))),
    );
  }

  function readRows(shardIds: readonly string[]): Observable<ReadonlyMap<string, CheckpointRow>> {
    if (shardIds.length === 0) return of(new Map());
    return deps.store.readMany(shardIds).pipe(map((rows) => new Map(rows.map((r) => [r.shardId, r] as const))));
  }

  let lastReapMs = Number.NEGATIVE_INFINITY;
  const leaderActions$ = defer(() => deps.metadata.readShardCache()).pipe(
    concatMap((cache) => refreshShardList(cache?.shards ?? [])),
    concatMap(() => {
      if (options.scheduler.now() - lastReapMs < REAP_EVERY_MS) return EMPTY;
      lastReapMs = options.scheduler.now();
      return deps.membership.reapStale();
    }),
    ignoreElements(),
    tolerate('leader actions', options.leaderActionFrequencyMs),
  );

  const transitions$ = leading$.pipe(
    distinctUntilChanged(),
    // The first value (false) is the starting state, not a loss.
    skip(1),
    tap((leading) => emit({ type: leading ? 'leader-acquired' : 'leader-lost', clientId: options.clientId })),
  );
  const leader$ = leading$.pipe(
    distinctUntilChanged(),
    switchMap((leading) => (leading ? timer(0, options.leaderActionFrequencyMs, options.scheduler).pipe(exhaustMap(() => leaderActions$)) : EMPTY)),
  );

  const checks$ = merge(
    timer(0, options.shardCheckFrequencyMs, options.scheduler),
    expiryWake$.pipe(switchMap((delayMs) => timer(delayMs, options.scheduler))),
  ).pipe(exhaustMap(() => check$));

  // A failed tick is tried again at the next one. A transient fault is reported as `retrying`
  // (with the run of failures so far), like every other retried call; anything else as `error`.
  function tolerate(what: string, periodMs: number): MonoTypeOperatorFunction<never> {
    let attempt = 0;
    return (source) => source.pipe(
      tap({ complete: () => { attempt = 0; } }),
      catchError((error: unknown) => {
        if (stopsTheClient(error)) throw error;
        const err = asError(error);
        if (classifyAwsError(error) === 'transient') {
          attempt += 1;
          emit({ type: 'retrying', operation: what, attempt, delayMs: periodMs, error: err });
        } else {
          emit({ type: 'error', error: err });
        }
        deps.options.logger.warn({ err }, `kinsumer: ${what} failed; retrying at the next tick`);
        return EMPTY;
      }),
    );
  }

  return merge(checks$, transitions$, leader$).pipe(ignoreElements());
}

/**
 * Leaves the group: deletes this client's row and gives up the leader lock if held. Best effort
 * (errors are reported, not thrown): a crashed client's row expires anyway.
 */
export function leaveGroup(deps: Pick<CoordinatorDeps, 'membership' | 'metadata' | 'emit'>): Promise<void> {
  return new Promise((resolve) => {
    forkJoin([
      deps.membership.deregister().pipe(catchError((error: unknown) => { deps.emit({ type: 'error', error: asError(error) }); return of(undefined); })),
      deps.metadata.stepDown().pipe(catchError((error: unknown) => { deps.emit({ type: 'error', error: asError(error) }); return of(false); })),
    ]).subscribe({ complete: resolve, error: () => resolve() });
  });
}

/**
 * Milliseconds from `nowMs` until the first other live client's row expires (just after, so the
 * row is gone when the check reads), or `undefined` when there is no other client.
 */
export function nextExpiryMs(clients: readonly LiveClient[], me: string, leaseTtlMs: number, nowMs: number): number | undefined {
  const others = clients.filter((c) => c.id !== me);
  if (others.length === 0) return undefined;
  const lastMs = Math.min(...others.map((c) => Number(c.lastUpdateNs / 1_000_000n)));
  return Math.max(1, lastMs + leaseTtlMs + 1 - nowMs);
}
