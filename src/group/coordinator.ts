import {
  type MonoTypeOperatorFunction, type Observable, BehaviorSubject, EMPTY, catchError, concat, concatMap, defer, distinctUntilChanged, exhaustMap, filter,
  finalize, forkJoin, Subject, ignoreElements, map, merge, of, repeat, skip, switchMap, take, tap, throwError, timer,
} from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { asError, stopsTheClient } from '../errors/fault-scope.js';
import { ConfigError } from '../errors/kinsumer-errors.js';
import type { ResolvedOptions } from '../options.js';
import type { CachedShard, LiveClient, MembershipStore, MetadataStore, Registration } from '../ports/coordination.js';
import type { CheckpointRow, LeaseStore } from '../ports/lease-store.js';
import type { StreamPort } from '../ports/stream.js';
import type { KinsumerEvent } from '../types.js';
import { assignShards, assignmentChanges } from './assignment.js';
import {
  type AssignmentStrategy, assignerFor, assignmentInput, cachedShardList, goPlan, goShare, rowsToRead, sameShardList, successorWatch, withGoHoldings,
} from './group-view.js';

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
  /**
   * Receives, after every check, the live clients as read, each with what it holds (for a Go
   * kinsumer client, what the Go rule gives it): who holds a shard this client waits for.
   */
  readonly clients?: (clients: readonly LiveClient[]) => void;
  /**
   * Called after every heartbeat the clients table answered, registered or not: the client has
   * started (its start bound no longer applies), even while it waits for a duplicate to leave.
   */
  readonly heartbeated?: () => void;
}

/** How often the leader reaps client rows gone for 48 h: rarely, it is housekeeping. */
const REAP_EVERY_MS = 10 * 60 * 1000;

/**
 * Group coordination of one client, while subscribed: every `shardCheckFrequencyMs` it
 * heartbeats, reads the live clients and the shard list, evaluates the shared assignment and
 * hands this client's part to `want`; the live client with the lowest id takes the leader lock
 * and refreshes the shard list every `leaderActionFrequencyMs`, so only one process calls
 * ListShards. While a Go kinsumer client is live (a clients row without this library's marker),
 * the assignment is the Go kinsumer's round robin, which that client computes too; the sticky one
 * again once none is. Every `throttleDelayMs` it reads the group epoch, which a leaving member
 * bumps (see {@link leaveGroup}): a bump brings a check at once, so the departed member's shards
 * are taken over within a poll. Each change of this client's shards or of the rule is a `rebalance` event
 * (with the `strategy`), and a change of rule is logged. While another live process holds this
 * clientId's row, it captures nothing and waits (`duplicate-client`), erroring with `ConfigError`
 * after `startTimeoutMs`. Never emits;
 * errors only on a fault that stops the client (missing table or stream, access denied, that
 * ConfigError) — everything else is reported and retried at the next tick.
 */
export function coordinate(deps: CoordinatorDeps): Observable<never> {
  const { options, emit } = deps;
  const leading$ = new BehaviorSubject(false);
  let lastWanted = '';
  /** The rule the last check applied (`undefined` before the first). */
  let lastStrategy: AssignmentStrategy | undefined;
  /** A client whose row this client has seen unchanged this long has likely missed a heartbeat. */
  const suspectAfterMs = options.shardCheckFrequencyMs / 2;
  /**
   * Since when (this client's clock) another process's row of this clientId has stood in the way,
   * and whether that was reported: as a wait (the row stands still) and as a duplicate (it changes).
   */
  let rival: { readonly sinceMs: number; reported: boolean; announced: boolean } | undefined;
  /**
   * The shards this client would take over if their owner alone died (as of the last check): their
   * rows are read at every check, so that they expire for this client one TTL after their last
   * change, however late the owner is found dead (a crash is then taken over within leaseTtlMs +
   * one check + a capture poll, instead of one check more).
   */
  let watched: readonly string[] = [];

  // A check at the moment the next other client's row expires: a crashed client's shards are
  // reassigned then, not up to shardCheckFrequencyMs later.
  const expiryWake$ = new Subject<number>();
  const member$ = defer(() => {
    rival = undefined;
    return deps.membership.liveClients();
  }).pipe(
    tap((clients) => {
      const delayMs = nextExpiryMs(clients, options.clientId, options.leaseTtlMs);
      if (delayMs !== undefined && delayMs < options.shardCheckFrequencyMs) expiryWake$.next(delayMs);
    }),
    concatMap((clients) => lead(clients).pipe(map(() => clients))),
    concatMap((clients) => shardList().pipe(map((shards) => ({ clients, shards })))),
    map(({ clients, shards }) => ({ clients, shards, go: goPlan(options.clientId, clients, shards) })),
    concatMap(({ clients, shards, go }) => {
      const holders = go === undefined ? clients : withGoHoldings(clients, go);
      const needed = rowsToRead(shards, holders, { selfId: options.clientId, suspectAfterMs });
      return readRows([...new Set([...needed, ...watched])].sort()).pipe(map((rows) => ({ clients, holders, shards, go, rows })));
    }),
    tap(({ clients, holders, shards, go, rows }) => {
      const input = assignmentInput(options.clientId, clients, shards, rows);
      watched = successorWatch(options.clientId, holders, assignerFor(go, input, shards));
      const mine = go === undefined
        ? [...assignShards(input)].filter(([, clientId]) => clientId === options.clientId).map(([shardId]) => shardId)
        : goShare(go, options.clientId, input);
      const strategy: AssignmentStrategy = go === undefined ? 'sticky' : 'go';
      if (strategy !== lastStrategy && (strategy === 'go' || lastStrategy !== undefined)) logSwitch(strategy, go?.goMembers ?? []);
      const parents = new Map(shards.map((s) => [s.shardId, s.parentShardIds] as const));
      const wanted = new Map(mine.map((shardId) => [shardId, parents.get(shardId) ?? []] as const));
      const key = mine.join(',');
      const members = new Set([...clients.map((c) => c.id), options.clientId]).size;
      if (key !== lastWanted || strategy !== lastStrategy) {
        const changes = assignmentChanges(new Map(mine.map((shardId) => [shardId, options.clientId])), options.clientId, deps.held());
        emit({
          type: 'rebalance', clients: members, assigned: mine,
          acquire: changes.acquire, release: changes.release, strategy,
        });
        lastWanted = key;
        lastStrategy = strategy;
      }
      deps.members?.(members);
      deps.clients?.(holders);
      deps.want(wanted);
    }),
  );

  function logSwitch(strategy: AssignmentStrategy, goMembers: readonly string[]): void {
    if (strategy === 'go') {
      options.logger.info({ strategy, goMembers }, 'kinsumer: Go kinsumer clients are live in the group: assigning shards as the Go kinsumer does (shard list position modulo the sorted live clients)');
    } else {
      options.logger.info({ strategy }, 'kinsumer: no Go kinsumer client is live any more: back to the sticky, balanced assignment');
    }
  }
  // The row says what this client holds as soon as that changes (a capture, a release), not only at
  // the next check: the others build their sticky assignment from these lists, and a list one check
  // old can leave a shard unread for an extra check when changes come close together. The writes
  // never overlap: a check waits for a publication in flight, a publication skips during a check.
  /** The list the row shows (the last registered write), `undefined` while this process's row is not written. */
  let published: string | undefined;
  let checking = false;
  const publishing$ = new BehaviorSubject(false);
  const heartbeat$ = (publication: boolean) => defer(() => {
    const held = deps.held();
    return deps.membership.heartbeat(held).pipe(tap((registration) => {
      deps.heartbeated?.();
      if (registration.registered) published = held.join(',');
      else if (!publication) published = undefined;
    }));
  });
  const check$ = publishing$.pipe(
    filter((busy) => !busy),
    take(1),
    concatMap(() => {
      checking = true;
      return heartbeat$(false);
    }),
    concatMap((registration) => (registration.registered ? member$ : waitForRival(registration))),
    ignoreElements(),
    finalize(() => { checking = false; }),
    tolerate('coordination check', options.shardCheckFrequencyMs),
  );
  const publish$ = defer(() => {
    if (checking || published === undefined || deps.held().join(',') === published) return EMPTY;
    publishing$.next(true);
    return heartbeat$(true).pipe(finalize(() => publishing$.next(false)));
  }).pipe(ignoreElements(), tolerate('heartbeat', options.throttleDelayMs));

  // Another process with this clientId heartbeats in its row: take nothing (and give up what is
  // held: this process may be the stale one), lead nothing, and watch the rows of what the other
  // holds, so that if it turns out dead its leases expire for this client in step with its row.
  function waitForRival(registration: Extract<Registration, { registered: false }>): Observable<unknown> {
    const nowMs = options.clock.elapsedNow();
    rival ??= { sinceMs: nowMs, reported: false, announced: false };
    if (registration.heartbeating && !rival.reported) {
      rival.reported = true;
      emit({ type: 'duplicate-client', clientId: options.clientId });
    }
    if (!registration.heartbeating) {
      // Most likely a restart without stop(): the row expires for this client leaseTtlMs after it
      // first saw it so. A check then (not at the next period) registers it, and its leases,
      // read below since then too, are captured within a poll.
      const expiresInMs = rival.sinceMs + options.leaseTtlMs - nowMs;
      expiryWake$.next(Math.max(1, expiresInMs + 1));
      if (!rival.announced) {
        rival.announced = true;
        emit({
          type: 'waiting', reason: 'own-client-row', shardIds: [...(registration.shardIds ?? [])].sort(), holders: [options.clientId],
          boundMs: Math.max(0, expiresInMs), held: deps.held().length,
        });
      }
    }
    if (registration.heartbeating && nowMs - rival.sinceMs >= options.startTimeoutMs) {
      return throwError(() => new ConfigError('clientId', `another live process uses clientId ${options.clientId}: its row in the clients table carries another instance id and keeps changing; two processes cannot share one clientId (this one waited ${options.startTimeoutMs} ms, startTimeoutMs, for it to stop)`));
    }
    if (lastWanted !== '' || deps.held().length > 0) {
      lastWanted = '';
      deps.want(new Map());
    }
    // Not stepDown(): the lock names the clientId, which the other process shares.
    leading$.next(false);
    return readRows(registration.shardIds ?? []);
  }

  // Leadership follows the sorted membership: the lowest live id is the only candidate. The next
  // one watches the lock as soon as the leader's row stands still, so the lock expires for it in
  // step with that row rather than one TTL after it became the lowest.
  function lead(clients: readonly LiveClient[]): Observable<unknown> {
    const [lowest, next] = [...new Set([...clients.map((c) => c.id), options.clientId])].sort();
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

  // A member that leaves bumps the group epoch once its shards are released and its row deleted
  // (leaveGroup): polled every throttleDelayMs, the bump brings a check at once, so its successors
  // take its shards over within a poll, not at their next periodic check. The poll is the most
  // frequent read of the metadata table: on a table with provisioned capacity it is what gets
  // throttled first. A failed read slows the poll down (doubling, up to shardCheckFrequencyMs, the
  // pace at which the periodic check finds a departure anyway); the adapter sends it without the
  // SDK's retries, so it never spends the retry quota the lease writes share.
  let epochSeen: number | undefined;
  let epochFailures = 0;
  const epochDelayMs = (): number => Math.min(Math.max(options.throttleDelayMs, options.shardCheckFrequencyMs), options.throttleDelayMs * 2 ** Math.min(epochFailures, 30));
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

  // A reason to check (the period, a row's expiry, a departure) that comes while a check runs is
  // not dropped: that check may have read the clients table just before, so another one follows it.
  let checkAgain = false;
  const checks$ = merge(
    timer(0, options.shardCheckFrequencyMs, options.scheduler),
    expiryWake$.pipe(switchMap((delayMs) => timer(delayMs, options.scheduler))),
    departureWake$,
  ).pipe(
    tap(() => { checkAgain = true; }),
    exhaustMap(() => defer(() => {
      checkAgain = false;
      return check$;
    }).pipe(repeat({ delay: () => (checkAgain ? of(undefined) : EMPTY) }))),
  );
  const publications$ = timer(options.throttleDelayMs, options.throttleDelayMs, options.scheduler).pipe(exhaustMap(() => publish$));

  // A failed tick is tried again at the next one. A transient fault is reported as `retrying`
  // (with the run of failures so far), like every other retried call; anything else as `error`.
  function tolerate(what: string, periodMs: number | (() => number)): MonoTypeOperatorFunction<never> {
    let attempt = 0;
    return (source) => source.pipe(
      tap({ complete: () => { attempt = 0; } }),
      catchError((error: unknown) => {
        if (stopsTheClient(error) || error instanceof ConfigError) throw error;
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

  return merge(checks$, epoch$, publications$, transitions$, leader$).pipe(ignoreElements());
}

/**
 * Leaves the group (after every lease is released): deletes this client's row, gives up the
 * leader lock if held, then bumps the group epoch, so the others check at their next poll of it and
 * take the released shards over at once. Best effort (errors are reported, not thrown): a crashed
 * client's row expires anyway, and without the bump the others notice at their next check.
 */
export function leaveGroup(deps: Pick<CoordinatorDeps, 'membership' | 'metadata' | 'emit'>): Promise<void> {
  const reported = <T>(fallback: T) => catchError((error: unknown) => {
    deps.emit({ type: 'error', error: asError(error) });
    return of(fallback);
  });
  return new Promise((resolve) => {
    // The bump comes last: a check it triggers must find this client's row gone.
    concat(
      forkJoin([deps.membership.deregister().pipe(reported(undefined)), deps.metadata.stepDown().pipe(reported(false))]),
      deps.metadata.bumpGroupEpoch().pipe(reported(undefined)),
    ).subscribe({ complete: resolve, error: () => resolve() });
  });
}

/**
 * Milliseconds until the first other live client's row expires for this client if it stays as
 * seen (just after, so the row counts as gone when the check reads it), or `undefined` when there
 * is no other client. Counted on this client's clock from when it saw each row change.
 */
export function nextExpiryMs(clients: readonly LiveClient[], me: string, leaseTtlMs: number): number | undefined {
  const others = clients.filter((c) => c.id !== me);
  if (others.length === 0) return undefined;
  return Math.max(1, Math.min(...others.map((c) => leaseTtlMs - c.unchangedForMs)) + 1);
}
