import {
  type MonoTypeOperatorFunction, type Observable, BehaviorSubject, EMPTY, Subject, catchError, concat, concatMap, defer, distinctUntilChanged,
  exhaustMap, finalize, forkJoin, ignoreElements, map, merge, of, repeat, skip, switchMap, tap, timer,
} from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { asError, stopsTheClient } from '../errors/fault-scope.js';
import type { ResolvedOptions } from '../options.js';
import type { CachedShard, LiveClient, MembershipStore, MetadataStore } from '../ports/coordination.js';
import type { CheckpointRow, LeaseStore } from '../ports/lease-store.js';
import type { StreamPort } from '../ports/stream.js';
import type { KinsumerEvent } from '../types.js';
import { assignShards, assignmentChanges } from './assignment.js';
import { type WatchedBeat, nextCheckInMs } from './check-plan.js';
import { goAssignment } from './go-assignment.js';
import {
  type AssignmentStrategy, assignerFor, assignmentInput, cachedShardList, goPlan, goShare, rowsToRead, sameShardList, successorWatch, withGoHoldings,
} from './group-view.js';
import { sharesToHandOver } from './hand-over.js';
import { renewIntervalMs } from './heartbeat.js';

/** What the coordinator reads and writes. */
export interface CoordinatorDeps {
  readonly membership: MembershipStore;
  readonly metadata: MetadataStore;
  readonly store: LeaseStore;
  readonly stream: StreamPort;
  readonly options: ResolvedOptions;
  readonly emit: (event: KinsumerEvent) => void;
  /** The shards this client holds now. */
  readonly held: () => readonly string[];
  /** Receives, after every check, the shards this client should hold (id → parent ids). */
  readonly want: (wanted: ReadonlyMap<string, readonly string[]>) => void;
  /** Receives, after every check, how many live clients the group has, this one included (`status()`). */
  readonly members?: (count: number) => void;
  /**
   * Receives, after every check, the live clients as read, each with what it holds (for a Go
   * kinsumer client, what the Go rule gives it): who holds a shard this client waits for.
   */
  readonly clients?: (clients: readonly LiveClient[]) => void;
  /** Receives, after every check, whether a live member judges leases by their own rows (a Go kinsumer, an older kinsumer-ts). */
  readonly perLeaseRenewal?: (perLease: boolean) => void;
  /**
   * Whether this client drains (it takes nothing and hands each lease over once its successor
   * wants it), and whether it stops (then what nobody can take is released as well, and
   * everything once `boundReached`).
   */
  readonly draining?: () => { readonly stopping: boolean; readonly boundReached: boolean } | undefined;
  /** Emits when a check is due at once (the client began to drain). */
  readonly wake$?: Observable<void>;
}

/** How often a member reads the group epoch: a departure (or a drain) is seen within this. */
export function epochPollMs(options: Pick<ResolvedOptions, 'throttleDelayMs'>): number {
  return Math.max(options.throttleDelayMs, 1000);
}

/** How often the leader reaps client rows gone for 48 h: rarely, it is housekeeping. */
const REAP_EVERY_MS = 10 * 60 * 1000;

/** What a check found, besides what it hands on. */
interface Found {
  readonly clients: readonly LiveClient[];
  readonly shards: readonly CachedShard[];
}

/**
 * Group coordination of one client, while subscribed: about every `shardCheckFrequencyMs` (each
 * check aimed at the next heartbeat of a member it would take over from, to learn its heartbeat
 * times: check-plan.ts) it reads the live clients and the shard list, ends the lives it found
 * expired (their leases may then be captured), evaluates the shared assignment and hands this
 * client's part to `want`; the live client with the lowest id takes the leader lock and refreshes
 * the shard list every `leaderActionFrequencyMs`, so only one process calls ListShards. While a Go
 * kinsumer client is live (a clients row without this library's marker), the assignment is the Go
 * kinsumer's round robin, which that client computes too; the sticky one again once none is. It
 * reads the group epoch every {@link epochPollMs}: a member that drains or leaves bumps it, and a
 * bump brings a check at once. A draining client takes nothing, and gives each lease up once the
 * member that gets it without it wants it (hand-over.ts), checking every `throttleDelayMs` while it
 * holds any. Each change of this client's shards or of the rule is a `rebalance` event (with the
 * `strategy`), and a change of rule is logged. Never emits; errors only on a fault that stops the
 * client (missing table or stream, access denied) — everything else is reported and retried at
 * the next tick. The heartbeat is not here: heartbeat.ts renews the client's row.
 */
export function coordinate(deps: CoordinatorDeps): Observable<never> {
  const { options, emit } = deps;
  const leading$ = new BehaviorSubject(false);
  let lastWanted = '';
  /** The rule the last check applied (`undefined` before the first). */
  let lastStrategy: AssignmentStrategy | undefined;
  /** A client whose row this client has seen unchanged this long has likely missed a heartbeat. */
  const suspectAfterMs = options.shardCheckFrequencyMs / 2;
  /** Lease rows of holders whose leases live by their own rows, which this client would take over: read at every check. */
  let watchedRows: readonly string[] = [];
  /** The shard list as the last check read it (a hand-over check reads only the clients). */
  let lastShards: readonly CachedShard[] | undefined;

  // A check at the moment the next other client's row expires (a crashed client's shards are
  // reassigned then), and the next periodic one, aimed (check-plan.ts).
  const expiryWake$ = new Subject<number>();
  const nextCheck$ = new Subject<number>();

  const check$ = defer(() => {
    const handingOver = deps.draining?.() !== undefined && deps.held().length > 0 && lastShards !== undefined;
    return deps.membership.liveClients().pipe(
      // Lives found expired are ended before anyone may take their leases (their rows say so, conditioned on the read).
      concatMap((clients) => deps.membership.endExpired().pipe(map(() => clients))),
      tap((clients) => {
        // Re-armed at every check (the next check replaces it): it only fires when a row expires
        // before the next check, wherever the aimed check falls.
        const delayMs = nextExpiryMs(clients, options.clientId);
        if (delayMs !== undefined) expiryWake$.next(delayMs);
      }),
      concatMap((clients) => (handingOver ? of(undefined) : lead(clients)).pipe(map(() => clients))),
      concatMap((clients) => (handingOver && lastShards !== undefined ? of(lastShards) : shardList()).pipe(map((shards): Found => ({ clients, shards })))),
      concatMap((found) => assign(found)),
    );
  });

  // Reads the rows the assignment needs, then applies it.
  function assign({ clients, shards }: Found): Observable<void> {
    lastShards = shards;
    const draining = deps.draining?.();
    const go = goPlan(options.clientId, clients, shards);
    const holders = go === undefined ? clients : withGoHoldings(clients, go);
    const legacy = holders.filter((c) => c.incarnation === undefined);
    const needed = rowsToRead(shards, legacy, { selfId: options.clientId, suspectAfterMs });
    return readRows([...new Set([...needed, ...watchedRows])].sort()).pipe(map((rows) => {
      const takers = [...new Set([...clients.filter((c) => c.draining !== true).map((c) => c.id), ...(draining === undefined ? [options.clientId] : [])])]
        .filter((id) => id !== options.clientId || draining === undefined);
      const input = assignmentInput(options.clientId, clients, shards, rows, takers);
      const assigner = assignerFor(go, input, shards);
      const successors = successorWatch(options.clientId, holders, assigner);
      watchedRows = [...successors].filter(([owner]) => legacy.some((c) => c.id === owner)).flatMap(([, shardIds]) => shardIds).sort();
      const strategy: AssignmentStrategy = go === undefined ? 'sticky' : 'go';
      if (strategy !== lastStrategy && (strategy === 'go' || lastStrategy !== undefined)) logSwitch(strategy, go?.goMembers ?? []);
      const mine = draining !== undefined ? [] : go === undefined
        ? [...assignShards(input)].filter(([, clientId]) => clientId === options.clientId).map(([shardId]) => shardId)
        : goShare(go, options.clientId, input);
      const parents = new Map(shards.map((s) => [s.shardId, s.parentShardIds] as const));
      const members = new Set([...clients.map((c) => c.id), options.clientId]).size;
      report(mine, strategy, members);
      deps.members?.(members);
      deps.clients?.(holders);
      deps.perLeaseRenewal?.(clients.some((c) => c.id !== options.clientId && c.incarnation === undefined));
      if (draining === undefined) {
        deps.want(new Map(mine.map((shardId) => [shardId, parents.get(shardId) ?? []] as const)));
      } else {
        const byShard = go === undefined ? assignShards(input) : goAssignment({ clients: takers, shardIds: shards.filter((s) => !s.finished).map((s) => s.shardId) });
        const giveUp = new Set(sharesToHandOver({
          held: deps.held(), stopping: draining.stopping, boundReached: draining.boundReached,
          successorOf: (shardId) => clients.find((c) => c.id === byShard.get(shardId)),
        }));
        deps.want(new Map(deps.held().filter((shardId) => !giveUp.has(shardId)).map((shardId) => [shardId, parents.get(shardId) ?? []] as const)));
      }
      // The next check: every throttleDelayMs while handing leases over, else aimed at a heartbeat.
      const periodMs = renewIntervalMs(options);
      const watched: WatchedBeat[] = clients.filter((c) => successors.has(c.id) && c.nextBeatInMs !== undefined)
        .map((c) => ({ nextBeatInMs: c.nextBeatInMs ?? 0, uncertaintyMs: c.beatUncertaintyMs ?? Number.POSITIVE_INFINITY, periodMs }));
      nextCheck$.next(deps.draining?.() !== undefined && deps.held().length > 0 ? options.throttleDelayMs : nextCheckInMs(options.shardCheckFrequencyMs, watched));
    }));
  }

  function report(mine: readonly string[], strategy: AssignmentStrategy, members: number): void {
    const key = mine.join(',');
    if (key === lastWanted && strategy === lastStrategy) return;
    const changes = assignmentChanges(new Map(mine.map((shardId) => [shardId, options.clientId])), options.clientId, deps.held());
    emit({ type: 'rebalance', clients: members, assigned: [...mine], acquire: changes.acquire, release: changes.release, strategy });
    lastWanted = key;
    lastStrategy = strategy;
  }

  function logSwitch(strategy: AssignmentStrategy, goMembers: readonly string[]): void {
    if (strategy === 'go') {
      options.logger.info({ strategy, goMembers }, 'kinsumer: Go kinsumer clients are live in the group: assigning shards as the Go kinsumer does (shard list position modulo the sorted live clients)');
    } else {
      options.logger.info({ strategy }, 'kinsumer: no Go kinsumer client is live any more: back to the sticky, balanced assignment');
    }
  }

  // Leadership follows the sorted membership: the lowest live id is the only candidate. The next
  // one watches the lock as soon as the leader's row stands still, so the lock expires for it in
  // step with that row rather than one TTL after it became the lowest. A draining member leads nothing.
  function lead(clients: readonly LiveClient[]): Observable<unknown> {
    const candidates = [...new Set([...clients.filter((c) => c.draining !== true).map((c) => c.id), ...(deps.draining?.() === undefined ? [options.clientId] : [])])].sort();
    const [lowest, next] = candidates;
    if (lowest === options.clientId) {
      return deps.metadata.acquireLeadership().pipe(tap((held) => leading$.next(held)));
    }
    if (leading$.value) return deps.metadata.stepDown().pipe(tap(() => leading$.next(false)));
    const leader = clients.find((c) => c.id === lowest);
    if (next === options.clientId && leader !== undefined && leader.unchangedForMs >= suspectAfterMs) return deps.metadata.leader();
    return of(undefined);
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
      if (options.clock.elapsedNow() - lastReapMs < REAP_EVERY_MS) return EMPTY;
      lastReapMs = options.clock.elapsedNow();
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

  // A member that drains or leaves bumps the group epoch (leaveGroup, the runtime's drain): polled
  // every epochPollMs, the bump brings a check at once, so its successors get ready to take its
  // shards over within a poll, not at their next periodic check. Eventually consistent and not
  // retried by the SDK: a throttled read slows the poll down (doubling, up to the larger of the
  // poll and shardCheckFrequencyMs), never the lease writes.
  const pollMs = epochPollMs(options);
  let epochSeen: number | undefined;
  let epochFailures = 0;
  const epochDelayMs = (): number => Math.min(Math.max(pollMs, options.shardCheckFrequencyMs), pollMs * 2 ** Math.min(epochFailures, 30));
  const departureWake$ = new Subject<void>();
  const epoch$ = defer(() => timer(epochDelayMs(), options.scheduler)).pipe(
    concatMap(() => deps.metadata.groupEpoch().pipe(
      tap({
        next: (epoch) => {
          epochFailures = 0;
          if (epochSeen !== undefined && epoch > epochSeen) departureWake$.next();
          epochSeen = Math.max(epoch, epochSeen ?? epoch);
        },
        error: () => { epochFailures += 1; },
      }),
      ignoreElements(),
      tolerate('group epoch read', epochDelayMs),
    )),
    repeat(),
  );

  // A reason to check (the plan, a row's expiry, a departure) that comes while a check runs is
  // not dropped: that check may have read the clients table just before, so another one follows it.
  // A check that failed planned nothing: the next one comes at the regular pace.
  let checkAgain = false;
  const checks$ = merge(
    nextCheck$.pipe(switchMap((delayMs) => timer(delayMs, options.scheduler))),
    expiryWake$.pipe(switchMap((delayMs) => timer(delayMs, options.scheduler))),
    departureWake$,
    deps.wake$ ?? EMPTY,
    // Last: the first check may answer at once, and what it plans must find the sources above listening.
    of(0),
  ).pipe(
    tap(() => { checkAgain = true; }),
    exhaustMap(() => defer(() => {
      checkAgain = false;
      let planned = false;
      const planning = nextCheck$.subscribe(() => { planned = true; });
      return check$.pipe(
        ignoreElements(),
        tolerate('coordination check', options.shardCheckFrequencyMs),
        finalize(() => {
          planning.unsubscribe();
          if (!planned) nextCheck$.next(options.shardCheckFrequencyMs);
        }),
      );
    }).pipe(repeat({ delay: () => (checkAgain ? of(undefined) : EMPTY) }))),
  );

  // A failed tick is tried again at the next one. A transient fault is reported as `retrying`
  // (with the run of failures so far), like every other retried call; anything else as `error`.
  function tolerate(what: string, periodMs: number | (() => number)): MonoTypeOperatorFunction<never> {
    let attempt = 0;
    return (source) => source.pipe(
      tap({ complete: () => { attempt = 0; } }),
      catchError((error: unknown) => {
        if (stopsTheClient(error)) throw error;
        const err = asError(error);
        if (classifyAwsError(error) === 'transient') {
          attempt += 1;
          emit({ type: 'retrying', operation: what, attempt, delayMs: typeof periodMs === 'number' ? periodMs : periodMs(), error: err });
        } else {
          emit({ type: 'error', error: err });
        }
        // Said already by the event above (summed up with the run of failures it belongs to).
        deps.options.logger.debug({ err }, `kinsumer: ${what} failed; retrying at the next tick`);
        return EMPTY;
      }),
    );
  }

  // The checks last: the first one may answer at once, and what it changes (leadership) must find the others listening.
  return merge(epoch$, transitions$, leader$, checks$).pipe(ignoreElements());
}

/**
 * Leaves the group (after every lease is released): deletes this client's row, gives up the
 * leader lock if held (not when another process of the clientId took this one's place: the lock
 * names the clientId, which is now the other's), then bumps the group epoch, so the others check
 * at their next poll of it. Best effort (errors are reported, not thrown): a crashed client's row
 * expires anyway, and without the bump the others notice at their next check.
 */
export function leaveGroup(deps: Pick<CoordinatorDeps, 'membership' | 'metadata' | 'emit'>, options: { readonly replaced?: boolean } = {}): Promise<void> {
  const reported = <T>(fallback: T) => catchError((error: unknown) => {
    deps.emit({ type: 'error', error: asError(error) });
    return of(fallback);
  });
  return new Promise((resolve) => {
    // The bump comes last: a check it triggers must find this client's row gone.
    concat(
      forkJoin([deps.membership.deregister().pipe(reported(undefined)), options.replaced === true ? of(false) : deps.metadata.stepDown().pipe(reported(false))]),
      deps.metadata.bumpGroupEpoch().pipe(reported(undefined)),
    ).subscribe({ complete: resolve, error: () => resolve() });
  });
}

/**
 * Milliseconds until the first other live client's row expires for this client if it stays as
 * seen (just after, so the row counts as gone when the check reads it), or `undefined` when there
 * is no other client. Counted on this client's clock.
 */
export function nextExpiryMs(clients: readonly LiveClient[], me: string): number | undefined {
  const others = clients.filter((c) => c.id !== me);
  if (others.length === 0) return undefined;
  return Math.max(1, Math.ceil(Math.min(...others.map((c) => c.expiresInMs))) + 1);
}
