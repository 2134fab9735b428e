// MembershipStore and MetadataStore in memory, with the DynamoDB stores' semantics (liveness and
// the leader lock judged by local observation, rows of one clientId kept per instance, conditional
// reaping, the shard cache's ShardIDs, the group epoch), for virtual-time tests of the coordinator
// and for benchmarks that must not measure DynamoDB.
import { randomUUID } from 'node:crypto';
import { type Observable, type SchedulerLike, defer, map, of, throwError, timer } from 'rxjs';
import { nanosFromMillis } from '../dynamodb/codec.js';
import { compareIds } from '../group/compare-ids.js';
import { libraryMarker } from '../group/library-marker.js';
import { arrive, firstLife, refused } from '../group/member-lives.js';
import { MemberObservations } from '../group/member-observations.js';
import { RowObserver, observedExpired } from '../lease/row-observer.js';
import {
  REAP_CLIENTS_AFTER_MS, type CachedShard, type Heartbeat, type Leader, type LiveClient, type MemberLife, type MemberSelf, type MemberView, type MembershipStore,
  type MetadataStore, type Registration, type ShardCache,
} from '../ports/coordination.js';

/** A row of the clients table, as the DynamoDB store would decode it. */
export interface MemoryClientRow {
  /** The client's id (`ID`). */
  readonly id: string;
  /** The client's name (`Name`); `undefined` when absent. */
  readonly name: string | undefined;
  /** Last heartbeat (`LastUpdate`), Unix nanoseconds; `undefined` when absent. */
  readonly lastUpdateNs: bigint | undefined;
  /** `undefined`: no `Shards` attribute (as in a Go kinsumer's row). */
  readonly shardIds: readonly string[] | undefined;
  /** The writing process (`InstanceID`); absent in a Go kinsumer's row. */
  readonly instanceId?: string;
  /** The library marker (`Library`), written by every heartbeat of this library; absent in a Go kinsumer's row. */
  readonly library?: string;
  /** Its life (`Incarnation`); absent in a Go kinsumer's or an older kinsumer-ts's row. */
  readonly incarnation?: number;
  /** Its writer's monotonic age at its last heartbeat (`Uptime`); absent where `incarnation` is. */
  readonly uptimeMs?: number;
  /** The life another member ended (`Ended`). */
  readonly ended?: number;
  /** Shards an operator's reset took from the life, not yet acknowledged (`Revoked`). */
  readonly revoked?: readonly string[];
  /** The member drains (`Draining`). */
  readonly draining?: boolean;
  /** `kinsumer drain` asked it to (`DrainRequested`). */
  readonly drainRequested?: boolean;
  /** Shards it waits to capture (`Wants`). */
  readonly wants?: readonly string[];
}

/** The `Leader` item: `id` is `undefined` after a step-down. */
export interface MemoryLeaderItem {
  /** The lock holder's client id; `undefined` when nobody holds it. */
  readonly id: string | undefined;
  /** The holder's client name; `undefined` when absent. */
  readonly name: string | undefined;
  /** When the lock was last taken or renewed, Unix nanoseconds; `undefined` when absent. */
  readonly lastUpdateNs: bigint | undefined;
}

/** The clients table and the metadata table of one group, shared by the stores of several simulated clients. */
export class MemoryCoordinationTables {
  readonly #clients = new Map<string, MemoryClientRow>();
  #leader: MemoryLeaderItem | undefined;
  #shardCache: ShardCache | undefined;
  #groupEpoch = 0;

  /** A client's row. */
  client(id: string): MemoryClientRow | undefined {
    return this.#clients.get(id);
  }

  /** Every client row, sorted by id. */
  clients(): MemoryClientRow[] {
    return [...this.#clients.values()].sort((a, b) => compareIds(a.id, b.id));
  }

  /** Writes a client row as is (seeding a test, or playing another writer such as a Go client). */
  putClient(row: MemoryClientRow): void {
    this.#clients.set(row.id, row);
  }

  /** Changes a client row in place (an operator's `kinsumer drain`, a reset's `Revoked`); `false` when there is none. */
  updateClient(id: string, change: (row: MemoryClientRow) => MemoryClientRow): boolean {
    const row = this.#clients.get(id);
    if (row === undefined) return false;
    this.#clients.set(id, change(row));
    return true;
  }

  /** Removes a client row, as a reaping leader or an operator would. */
  deleteClient(id: string): void {
    this.#clients.delete(id);
  }

  /** The `Leader` item, if any was ever written. */
  leaderItem(): MemoryLeaderItem | undefined {
    return this.#leader;
  }

  /** Writes the `Leader` item as is (`undefined` deletes it). */
  putLeaderItem(item: MemoryLeaderItem | undefined): void {
    this.#leader = item;
  }

  /** The `ShardCache` item. */
  shardCache(): ShardCache | undefined {
    return this.#shardCache;
  }

  /** Writes the `ShardCache` item as is (`undefined` deletes it); e.g. `{ shardIds, shards: undefined }` plays a Go writer. */
  putShardCache(cache: ShardCache | undefined): void {
    this.#shardCache = cache;
  }

  /** The `GroupEpoch` item's `Epoch` (0 while none was written). */
  groupEpoch(): number {
    return this.#groupEpoch;
  }

  /** Writes the group epoch as is. */
  putGroupEpoch(epoch: number): void {
    this.#groupEpoch = epoch;
  }
}

/** The operations of the in-memory stores, for fault injection and call counts. */
export type MemoryCoordinationOperation =
  | 'heartbeat' | 'liveClients' | 'endExpired' | 'deregister' | 'reapStale'
  | 'acquireLeadership' | 'stepDown' | 'leader' | 'readShardCache' | 'writeShardCache' | 'groupEpoch' | 'bumpGroupEpoch';

/** Options of {@link MemoryMembershipStore} and {@link MemoryMetadataStore}. */
export interface MemoryCoordinationOptions {
  /** The simulated client's id: its clients-table row and its leader-lock claims. */
  readonly clientId: string;
  /** The simulated client's name, written to its row and the leader item. Default: none. */
  readonly clientName?: string;
  /** This process's id, written with its heartbeats. Default: a random UUID (one per store). */
  readonly instanceId?: string;
  /** A client row (or the lock) this client has seen unchanged for this long, on its own clock, counts as gone. */
  readonly leaseTtlMs: number;
  /** Milliseconds since the epoch on the wall clock (e.g. `() => scheduler.now()`), only written (`LastUpdate`). */
  readonly now: () => number;
  /**
   * Milliseconds on a monotonic clock: what this client observes expires by differences of it, so
   * a step of the wall clock (`now`) moves no expiry. Default: `now`.
   */
  readonly elapsedNow?: () => number;
  /** Shared with other clients' stores; default: tables of its own. */
  readonly tables?: MemoryCoordinationTables;
  /** Each call answers after this long on `scheduler` (writes apply then, conditions are checked then). Default 0: synchronously. */
  readonly latencyMs?: number;
  /** The scheduler `latencyMs` runs on (a virtual-time one in tests). Default: RxJS's `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /** Membership only: age in milliseconds at which `reapStale` deletes a row. Default 48 hours (the Go kinsumer's). */
  readonly reapAfterMs?: number;
  /** Membership only: how often members heartbeat (a reader's expectation of the next one). Default: a third of `leaseTtlMs`. */
  readonly renewIntervalMs?: number;
}

/** Call counting, fault injection and latency shared by both stores. */
abstract class MemoryStore<Op extends MemoryCoordinationOperation> {
  /** The tables it reads and writes (shared when given in the options). */
  readonly tables: MemoryCoordinationTables;
  /** Calls made, by operation (each subscription counts, faults included). */
  readonly calls: Partial<Record<Op, number>> = {};
  /** The options it was made with. */
  protected readonly options: MemoryCoordinationOptions;
  readonly #faults: Array<{ readonly error: unknown; readonly operations: readonly Op[] | undefined }> = [];

  constructor(options: MemoryCoordinationOptions) {
    this.options = options;
    this.tables = options.tables ?? new MemoryCoordinationTables();
  }

  /** Makes the next call of one of `operations` (default: any) fail with `error` without touching the tables. Faults queue up in order. */
  failNext(error: unknown, operations?: readonly Op[]): void {
    this.#faults.push({ error, operations });
  }

  /** Counts the call, applies a queued fault, runs `start` (what is read at send time), then answers after the latency with `answer()`. */
  protected call<T>(operation: Op, start: () => () => T): Observable<T> {
    return defer(() => {
      this.calls[operation] = (this.calls[operation] ?? 0) + 1;
      const index = this.#faults.findIndex((f) => f.operations === undefined || f.operations.includes(operation));
      if (index >= 0) {
        const [fault] = this.#faults.splice(index, 1);
        return throwError(() => fault?.error);
      }
      const answer = start();
      const latencyMs = this.options.latencyMs ?? 0;
      return latencyMs > 0 ? timer(latencyMs, this.options.scheduler).pipe(map(() => answer())) : defer(() => of(answer()));
    });
  }

  /** The monotonic clock the expiries are differences of. */
  protected elapsedNow(): number {
    return (this.options.elapsedNow ?? this.options.now)();
  }

  /** The name to write: an empty name is written as none, as the DynamoDB stores do. */
  protected get clientName(): string | undefined {
    return this.options.clientName === '' ? undefined : this.options.clientName;
  }
}

/** {@link MembershipStore} in memory, and the {@link MemberView} its lease store judges leases by. */
export class MemoryMembershipStore extends MemoryStore<'heartbeat' | 'liveClients' | 'endExpired' | 'deregister' | 'reapStale'> implements MembershipStore, MemberView {
  /** This process's instance id (written in its row). */
  readonly instanceId: string;
  readonly #members: MemberObservations;
  readonly #startedAtMs: number;
  #incarnation: number | undefined;
  /** Set once another process took this clientId's place: this process never registers again (it ends). */
  #replaced: Extract<Registration, { registered: false }> | undefined;

  constructor(options: MemoryCoordinationOptions) {
    super(options);
    this.instanceId = options.instanceId ?? randomUUID();
    this.#members = new MemberObservations(options.leaseTtlMs, () => this.elapsedNow(), options.renewIntervalMs ?? Math.floor(options.leaseTtlMs / 3));
    this.#startedAtMs = this.elapsedNow();
  }

  // The rules of src/group/member-lives.ts, as the DynamoDB store applies them with conditional writes.
  heartbeat(heldShardIds: readonly string[], beat: Omit<Heartbeat, 'held'> = {}): Observable<Registration> {
    return this.call('heartbeat', () => {
      const lastUpdateNs = nanosFromMillis(this.options.now());
      const uptimeMs = Math.round(this.elapsedNow() - this.#startedAtMs);
      const fields = {
        name: this.clientName, lastUpdateNs, uptimeMs, instanceId: this.instanceId, library: libraryMarker(),
        draining: beat.draining ?? false, wants: [...new Set(beat.wants ?? [])].sort(compareIds),
      };
      const held = [...new Set(heldShardIds)].sort(compareIds);
      return (): Registration => {
        const { clientId } = this.options;
        const row = this.tables.client(clientId);
        const write = (incarnation: number, shardIds: readonly string[], kept: Partial<MemoryClientRow>) => {
          this.tables.putClient({ ...kept, id: clientId, shardIds, incarnation, ...fields });
        };
        const registered = (incarnation: number, newLife: boolean, revoked: readonly string[] = [], claimed?: readonly string[]): Registration => {
          this.#incarnation = incarnation;
          this.#members.registered(clientId, incarnation);
          const drainRequested = this.tables.client(clientId)?.drainRequested === true;
          return { registered: true, incarnation, newLife, drainRequested, revoked, ...(claimed === undefined ? {} : { claimed }) };
        };
        // As the DynamoDB store: a heartbeat after the refusal never registers as a newcomer.
        if (this.#replaced !== undefined) return this.#replaced;
        const incarnation = this.#incarnation;
        if (incarnation === undefined) {
          const arrival = arrive(row === undefined ? undefined : lifeOf(row), this.instanceId);
          if (arrival.kind === 'create') {
            const first = firstLife(this.options.now());
            write(first, held, {});
            return registered(first, true);
          }
          const claimed = arrival.kind === 'take-over' ? arrival.claimed : [];
          write(arrival.incarnation, [...new Set([...held, ...claimed])].sort(compareIds), { drainRequested: row?.drainRequested ?? false });
          return registered(arrival.incarnation, true, [], arrival.kind === 'take-over' ? claimed : undefined);
        }
        const ours = row !== undefined && row.instanceId === this.instanceId && row.incarnation === incarnation && row.ended === undefined
          && (row.revoked ?? []).length === 0;
        if (ours) {
          write(incarnation, held, { drainRequested: row.drainRequested ?? false });
          return registered(incarnation, false);
        }
        const refusal = refused(row === undefined ? undefined : lifeOf(row), this.instanceId, incarnation);
        switch (refusal.kind) {
          case 'replaced':
            this.#replaced = { registered: false, replacedBy: refusal.by };
            return this.#replaced;
          case 'recreate':
            write(incarnation, held, {});
            return registered(incarnation, false);
          case 'new-life':
            write(refusal.incarnation, held, { drainRequested: row?.drainRequested ?? false });
            return registered(refusal.incarnation, true);
          case 'revoked':
            write(incarnation, held, { drainRequested: row?.drainRequested ?? false });
            return registered(incarnation, false, refusal.shardIds);
          case 'retry':
            write(incarnation, held, { drainRequested: row?.drainRequested ?? false });
            return registered(incarnation, false);
        }
      };
    });
  }

  liveClients(): Observable<LiveClient[]> {
    return this.call('liveClients', () => {
      const sentAtMs = this.elapsedNow();
      const rows = this.tables.clients();
      return () => this.#members.see(rows.flatMap((row) => {
        if (row.lastUpdateNs === undefined) return [];
        return [{
          id: row.id, name: row.name, lastUpdateNs: row.lastUpdateNs, shardIds: row.shardIds, instanceId: row.instanceId, library: row.library,
          ...(row.incarnation === undefined ? {} : { incarnation: row.incarnation }),
          uptimeMs: row.uptimeMs, ended: row.ended,
          ...(row.draining === true ? { draining: true } : {}),
          ...(row.wants === undefined ? {} : { wants: row.wants }),
        }];
      }), sentAtMs, this.elapsedNow());
    });
  }

  endExpired(): Observable<string[]> {
    return this.call('endExpired', () => {
      const expired = this.#members.expired();
      return () => expired.flatMap((life) => {
        const row = this.tables.client(life.id);
        // Conditioned on the row as read: a heartbeat in between keeps the life.
        if (row === undefined || row.instanceId !== life.instanceId || row.incarnation !== life.incarnation || row.uptimeMs !== life.uptimeMs) {
          this.#members.renewed(life);
          return [];
        }
        this.tables.putClient({ ...row, ended: life.incarnation });
        this.#members.ended(life);
        return [life.id];
      }).sort(compareIds);
    });
  }

  self(): MemberSelf | undefined {
    return this.#members.self();
  }

  life(clientId: string, incarnation: number): MemberLife | undefined {
    return this.#members.life(clientId, incarnation);
  }

  deregister(): Observable<void> {
    return this.call('deregister', () => () => {
      // Only this process's row: a restarted process with the same clientId may have taken it over.
      if (this.tables.client(this.options.clientId)?.instanceId === this.instanceId) this.tables.deleteClient(this.options.clientId);
    });
  }

  reapStale(): Observable<string[]> {
    return this.call('reapStale', () => {
      const cutoffNs = nanosFromMillis(this.options.now() - (this.options.reapAfterMs ?? REAP_CLIENTS_AFTER_MS));
      const stale = (row: MemoryClientRow | undefined) => row?.lastUpdateNs !== undefined && row.lastUpdateNs < cutoffNs;
      const candidates = this.tables.clients().filter(stale).map((row) => row.id);
      // Deleted only if still stale when the call lands, like the conditional deletes.
      return () => candidates.filter((id) => {
        if (!stale(this.tables.client(id))) return false;
        this.tables.deleteClient(id);
        return true;
      });
    });
  }
}

/** {@link MetadataStore} in memory. */
export class MemoryMetadataStore
  extends MemoryStore<'acquireLeadership' | 'stepDown' | 'leader' | 'readShardCache' | 'writeShardCache' | 'groupEpoch' | 'bumpGroupEpoch'>
  implements MetadataStore {
  readonly #lock = new RowObserver();

  acquireLeadership(): Observable<boolean> {
    return this.call('acquireLeadership', () => {
      const nowMs = this.options.now();
      return () => {
        const held = this.tables.leaderItem();
        const free = held?.id === undefined || held.id === this.options.clientId || held.lastUpdateNs === undefined
          || this.#expired(held);
        if (free) this.tables.putLeaderItem({ id: this.options.clientId, name: this.clientName, lastUpdateNs: nanosFromMillis(nowMs) });
        return free;
      };
    });
  }

  /** Records the lock as seen now; `true` once this client has seen it unchanged for the TTL. */
  #expired(held: MemoryLeaderItem): boolean {
    const unchangedForMs = this.#lock.see('Leader', `${held.id ?? ''}\u0000${held.lastUpdateNs ?? ''}`, this.elapsedNow());
    return observedExpired(unchangedForMs, this.options.leaseTtlMs);
  }

  stepDown(): Observable<boolean> {
    return this.call('stepDown', () => {
      const lastUpdateNs = nanosFromMillis(this.options.now());
      return () => {
        const held = this.tables.leaderItem();
        if (held?.id !== this.options.clientId) return false;
        this.tables.putLeaderItem({ ...held, id: undefined, lastUpdateNs });
        return true;
      };
    });
  }

  leader(): Observable<Leader | undefined> {
    return this.call('leader', () => {
      const held = this.tables.leaderItem();
      return () => {
        if (held?.id === undefined || held.lastUpdateNs === undefined || this.#expired(held)) return undefined;
        return { id: held.id, name: held.name, lastUpdateNs: held.lastUpdateNs };
      };
    });
  }

  readShardCache(): Observable<ShardCache | undefined> {
    return this.call('readShardCache', () => () => this.tables.shardCache());
  }

  writeShardCache(shards: readonly CachedShard[]): Observable<void> {
    return this.call('writeShardCache', () => {
      const sorted = [...shards].sort((a, b) => compareIds(a.shardId, b.shardId)).map((s) => {
        if (s.open && s.finished) throw new TypeError(`shard ${s.shardId} cannot be open and finished`);
        return { shardId: s.shardId, parentShardIds: [...s.parentShardIds], open: s.open, finished: s.finished };
      });
      const duplicate = sorted.find((s, i) => i > 0 && s.shardId === sorted[i - 1]?.shardId);
      if (duplicate !== undefined) throw new TypeError(`shard ${duplicate.shardId} is listed twice`);
      const lastUpdateNs = nanosFromMillis(this.options.now());
      return () => this.tables.putShardCache({
        shardIds: sorted.filter((s) => !s.finished).map((s) => s.shardId), shards: sorted, lastUpdateNs,
      });
    });
  }

  groupEpoch(): Observable<number> {
    return this.call('groupEpoch', () => {
      const epoch = this.tables.groupEpoch();
      return () => epoch;
    });
  }

  bumpGroupEpoch(): Observable<void> {
    return this.call('bumpGroupEpoch', () => () => this.tables.putGroupEpoch(this.tables.groupEpoch() + 1));
  }
}

/** A row as the lives rules read it. */
function lifeOf(row: MemoryClientRow) {
  return {
    instanceId: row.instanceId, ended: row.ended, revoked: row.revoked, shardIds: row.shardIds,
    ...(row.incarnation === undefined ? {} : { incarnation: row.incarnation }),
  };
}
