// The clients table (`<app>_clients`) as group membership (rows: client-row.ts). Each process
// registers under its clientId in a life of its own (static membership: a row another process of
// the clientId wrote is taken over at once, its life raised), heartbeats only while the row is its
// life's, and judges the other rows as src/group/member-observations.ts says: a row with a life
// expires one TTL after this reader's bound on its last heartbeat's send, and the reader that
// finds it so ends the life (`Ended`, conditioned on the row as read) before anyone captures its
// leases. Every scan reads the whole table (a scan's cost does not depend on a filter); no
// LastUpdate is compared with this host's clock, except by the 48-hour reaping.
import { randomUUID } from 'node:crypto';
import { type Observable, catchError, concatMap, defer, filter, from, map, mergeMap, of, reduce, throwError, toArray } from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { KinsumerError } from '../errors/kinsumer-errors.js';
import { compareIds } from '../group/compare-ids.js';
import { type RowLife, arrive, firstLife, refused } from '../group/member-lives.js';
import { type ExpiredLife, MemberObservations } from '../group/member-observations.js';
import {
  REAP_CLIENTS_AFTER_MS, type Heartbeat, type LiveClient, type MemberLife, type MemberSelf, type MemberView, type MembershipStore, type Registration,
} from '../ports/coordination.js';
import { CLIENT_ATTRIBUTES, type ClientRow, beatAttributes, decodeClientRow } from './client-row.js';
import { AttributeFormatError, nanosFromMillis, readString } from './codec.js';
import { CorruptRowReporter } from './corrupt-rows.js';
import type { Dynamo, Item } from './dynamo.js';
import { tableError } from './table-error.js';
import { ConditionExpression, UpdateExpression } from './update-expression.js';

export { decodeClientRow } from './client-row.js';

const A = CLIENT_ATTRIBUTES;
/** A registration that keeps losing the row to heartbeats of the process it takes over from gives up (and is retried by the caller). */
const MAX_ARRIVALS = 5;

/** Options of {@link DynamoMembershipStore}. */
export interface DynamoMembershipStoreOptions {
  readonly dynamo: Dynamo;
  /** The clients table, `<app>_clients`. */
  readonly table: string;
  readonly clientId: string;
  readonly clientName: string;
  /** This process's id, written with every heartbeat. Default: a random UUID (one per store). */
  readonly instanceId?: string;
  /** A row lives this long past its last heartbeat. */
  readonly leaseTtlMs: number;
  /** How often members heartbeat (the reader's expectation of the next one). Default: a third of `leaseTtlMs`. */
  readonly renewIntervalMs?: number;
  /**
   * Milliseconds since the epoch on the wall clock, only written (`LastUpdate`) and the reap age's
   * cutoff. Pass `() => scheduler.now()` so virtual time ages rows too.
   */
  readonly now: () => number;
  /**
   * Milliseconds on a monotonic clock: what this client observes expires by differences of it,
   * never of `now`, so a step of the wall clock moves no expiry; `Uptime` is a difference of it.
   * Default: `now` (as virtual time in tests wants it); the Kinsumer passes its `clock.elapsedNow`.
   */
  readonly elapsedNow?: () => number;
  /** Age at which {@link DynamoMembershipStore.reapStale} deletes a row. Default {@link REAP_CLIENTS_AFTER_MS}. */
  readonly reapAfterMs?: number;
  /**
   * Receives each row that {@link DynamoMembershipStore.liveClients} cannot read and leaves out:
   * once, and again when its problem changes or after it was read clean.
   */
  readonly onCorruptRow?: (error: KinsumerError) => void;
}

/**
 * {@link MembershipStore} on the DynamoDB clients table, and the {@link MemberView} its lease store
 * judges leases by. AWS errors pass through untouched, except a missing table, which becomes
 * `TableNotFoundError`.
 */
export class DynamoMembershipStore implements MembershipStore, MemberView {
  readonly #options: DynamoMembershipStoreOptions;
  readonly #corrupt: CorruptRowReporter<KinsumerError>;
  readonly #instanceId: string;
  readonly #elapsedNow: () => number;
  readonly #startedAtMs: number;
  readonly #members: MemberObservations;
  /** This process's life, once registered; what it claims of the row it took over, until it heartbeats. */
  #incarnation: number | undefined;
  /** Set once another process took this clientId's place: this process never registers again (it ends). */
  #replaced: Extract<Registration, { registered: false }> | undefined;

  constructor(options: DynamoMembershipStoreOptions) {
    this.#options = options;
    this.#elapsedNow = options.elapsedNow ?? options.now;
    this.#startedAtMs = this.#elapsedNow();
    this.#corrupt = new CorruptRowReporter(options.onCorruptRow);
    this.#instanceId = options.instanceId ?? randomUUID();
    this.#members = new MemberObservations(options.leaseTtlMs, () => this.#elapsedNow(), options.renewIntervalMs ?? Math.floor(options.leaseTtlMs / 3));
  }

  heartbeat(heldShardIds: readonly string[], beat: Omit<Heartbeat, 'held'> = {}): Observable<Registration> {
    // A heartbeat after the refusal (one already due, or a retry of one whose answer was lost) must
    // not register as a newcomer: it would take the place back from the process that replaced it.
    if (this.#replaced !== undefined) return of(this.#replaced);
    const incarnation = this.#incarnation;
    const work$ = incarnation === undefined ? this.#arrive(heldShardIds, beat, 0) : this.#renew(incarnation, heldShardIds, beat, []);
    return work$.pipe(catchError((error: unknown) => tableError(this.#options.table, error)));
  }

  /** The first registration: create the row, or take the place of the process that wrote it (static membership). */
  #arrive(held: readonly string[], beat: Omit<Heartbeat, 'held'>, attempt: number): Observable<Registration> {
    return this.#read().pipe(concatMap(({ row, corrupt }) => {
      const arrival = arrive(row, this.#instanceId);
      const incarnation = arrival.kind === 'create' ? firstLife(this.#options.now()) : arrival.incarnation;
      const claimed = arrival.kind === 'take-over' ? arrival.claimed : [];
      const update = this.#beatUpdate(incarnation, [...new Set([...held, ...claimed])], beat);
      if (arrival.kind === 'create') update.condition(`attribute_not_exists(${update.name(A.id)})`);
      else if (arrival.kind === 'own') update.condition(`${update.name(A.instanceId)} = ${update.value('me', { S: this.#instanceId })}`);
      else {
        // The life as read: another process taking the place in between makes this one read again.
        // (A heartbeat of the process it replaces changes neither: it is replaced all the same.)
        if (!corrupt) {
          update.unchanged(A.instanceId, row?.instanceId === undefined ? undefined : { S: row.instanceId });
          update.unchanged(A.incarnation, row?.incarnation === undefined ? undefined : { N: String(row.incarnation) });
        }
        for (const attribute of [A.ended, A.revoked]) update.remove(attribute);
      }
      return this.#write(update).pipe(concatMap((answer) => {
        if (answer === undefined) {
          if (attempt + 1 >= MAX_ARRIVALS) return throwError(() => new KinsumerError(`registering ${this.#options.clientId} lost the row ${MAX_ARRIVALS} times in a row`, { retriable: true }));
          return this.#arrive(held, beat, attempt + 1);
        }
        this.#registered(incarnation);
        return of({ ...registration(incarnation, true, answer, []), claimed });
      }));
    }));
  }

  /** A heartbeat of life `incarnation`; a refused one learns why from the row and answers accordingly. */
  #renew(incarnation: number, held: readonly string[], beat: Omit<Heartbeat, 'held'>, acknowledged: readonly string[]): Observable<Registration> {
    const update = this.#beatUpdate(incarnation, held, beat);
    update.condition(`${update.name(A.instanceId)} = ${update.value('me', { S: this.#instanceId })}`);
    update.condition(`${update.name(A.incarnation)} = ${update.value('life', { N: String(incarnation) })}`);
    update.condition(`attribute_not_exists(${update.name(A.ended)})`);
    if (acknowledged.length > 0) update.delete(A.revoked, { SS: [...acknowledged] });
    else update.condition(`attribute_not_exists(${update.name(A.revoked)})`);
    return this.#write(update).pipe(concatMap((answer) => {
      if (answer !== undefined) return of(registration(incarnation, false, answer, acknowledged));
      return this.#read().pipe(concatMap(({ row }): Observable<Registration> => {
        const refusal = refused(row, this.#instanceId, incarnation);
        switch (refusal.kind) {
          case 'replaced':
            this.#replaced = { registered: false, replacedBy: refusal.by };
            return of(this.#replaced);
          case 'recreate':
          case 'new-life': {
            // Recreated: the same life (a deleted row is no fence). A new life: the last one was ended.
            const next = refusal.kind === 'recreate' ? incarnation : refusal.incarnation;
            const again = this.#beatUpdate(next, held, beat);
            if (refusal.kind === 'recreate') again.condition(`attribute_not_exists(${again.name(A.id)})`);
            else {
              again.condition(`${again.name(A.instanceId)} = ${again.value('me', { S: this.#instanceId })}`);
              again.unchanged(A.incarnation, row?.incarnation === undefined ? undefined : { N: String(row.incarnation) });
              for (const attribute of [A.ended, A.revoked]) again.remove(attribute);
            }
            return this.#write(again).pipe(concatMap((answer2) => {
              if (answer2 === undefined) return this.#renew(incarnation, held, beat, acknowledged);
              this.#registered(next);
              return of(registration(next, refusal.kind === 'new-life', answer2, []));
            }));
          }
          case 'revoked':
            return this.#renew(incarnation, held, beat, refusal.shardIds);
          case 'retry':
            return this.#renew(incarnation, held, beat, acknowledged);
        }
      }));
    }));
  }

  #registered(incarnation: number): void {
    this.#incarnation = incarnation;
    this.#members.registered(this.#options.clientId, incarnation);
  }

  /** This process's heartbeat as an UpdateItem of its row (conditions added by the caller). */
  #beatUpdate(incarnation: number, held: readonly string[], beat: Omit<Heartbeat, 'held'>): UpdateExpression {
    const update = new UpdateExpression();
    const attributes = beatAttributes({
      clientName: this.#options.clientName, instanceId: this.#instanceId, incarnation, nowMs: this.#options.now(),
      uptimeMs: this.#elapsedNow() - this.#startedAtMs, held, wants: beat.wants ?? [], draining: beat.draining ?? false,
    });
    for (const [name, value] of Object.entries(attributes)) update.set(name, value);
    return update;
  }

  /** Writes; emits the row as written, or `undefined` when the condition refused it. */
  #write(update: UpdateExpression): Observable<Item | undefined> {
    const { dynamo, table, clientId } = this.#options;
    return defer(() => dynamo.updateItem(update.input(table, { [A.id]: { S: clientId } }))).pipe(
      map((item) => item ?? {}),
      catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? of(undefined) : throwError(() => error))),
    );
  }

  /** This clientId's row (strongly consistent); a row that cannot be decoded is taken over as another process's. */
  #read(): Observable<{ readonly row: ClientRow | undefined; readonly corrupt: boolean }> {
    const { dynamo, table, clientId } = this.#options;
    return defer(() => dynamo.getItem({ TableName: table, Key: { [A.id]: { S: clientId } }, ConsistentRead: true })).pipe(map((item) => {
      if (item === undefined) return { row: undefined, corrupt: false };
      try {
        return { row: decodeClientRow(item), corrupt: false };
      } catch (error) {
        if (!(error instanceof AttributeFormatError)) throw error;
        return { row: corruptRow(clientId), corrupt: true };
      }
    }));
  }

  liveClients(): Observable<LiveClient[]> {
    const { dynamo, table } = this.#options;
    return defer(() => {
      const sentAtMs = this.#elapsedNow();
      return dynamo.scanAll({ TableName: table, ConsistentRead: true }).pipe(map((items) => {
        const rows = items.map((item) => this.#readable(item)).filter((row): row is ClientRow => row !== undefined)
          // What the judgement reads; what a member reads of its own row only (its heartbeat's answer) stays out.
          .map(({ drainRequested: _asked, revoked: _revoked, ...seen }) => seen);
        return this.#members.see(rows, sentAtMs, this.#elapsedNow()).sort((a, b) => compareIds(a.id, b.id));
      }));
    }).pipe(catchError((error: unknown) => tableError(this.#options.table, error)));
  }

  /** The row, or `undefined` when it cannot be read: reported, and left out as if not live. */
  #readable(item: Item): ClientRow | undefined {
    const id = item[A.id]?.S ?? '(unknown)';
    try {
      const decoded = decodeClientRow(item);
      this.#corrupt.clean(id);
      return decoded;
    } catch (error) {
      if (!(error instanceof AttributeFormatError)) throw error;
      this.#corrupt.corrupt(id, new KinsumerError(`clients row ${id} of ${this.#options.table} is corrupt: ${error.message}`, { cause: error }));
      return undefined;
    }
  }

  endExpired(): Observable<string[]> {
    const { dynamo, table } = this.#options;
    const end = (life: ExpiredLife): Observable<string | undefined> => defer(() => {
      const update = new UpdateExpression();
      update.set(A.ended, { N: String(life.incarnation) });
      update.unchanged(A.instanceId, life.instanceId === undefined ? undefined : { S: life.instanceId });
      update.unchanged(A.incarnation, { N: String(life.incarnation) });
      update.unchanged(A.uptime, { N: String(life.uptimeMs) });
      return dynamo.updateItem({ ...update.input(table, { [A.id]: { S: life.id } }), ReturnValues: 'NONE' }).pipe(
        map(() => {
          this.#members.ended(life);
          return life.id;
        }),
        catchError((error: unknown) => {
          if (classifyAwsError(error) !== 'conditional') return throwError(() => error);
          this.#members.renewed(life);
          return of(undefined);
        }),
      );
    });
    return from(this.#members.expired()).pipe(
      mergeMap(end, 4),
      filter((id): id is string => id !== undefined),
      reduce((ids: string[], id) => [...ids, id], []),
      map((ids) => ids.sort(compareIds)),
      catchError((error: unknown) => tableError(this.#options.table, error)),
    );
  }

  self(): MemberSelf | undefined {
    return this.#members.self();
  }

  life(clientId: string, incarnation: number): MemberLife | undefined {
    return this.#members.life(clientId, incarnation);
  }

  deregister(): Observable<void> {
    const { dynamo, table, clientId } = this.#options;
    return defer(() => {
      // Only this process's row: a restarted process with the same clientId may have taken it over.
      const condition = new ConditionExpression();
      condition.condition(`${condition.name(A.instanceId)} = ${condition.value('me', { S: this.#instanceId })}`);
      return dynamo.deleteItem({ TableName: table, Key: { [A.id]: { S: clientId } }, ...condition.conditionInput() });
    }).pipe(
      catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? of(undefined) : tableError(this.#options.table, error))),
      map(() => undefined),
    );
  }

  reapStale(): Observable<string[]> {
    const { dynamo, table, now } = this.#options;
    const reapAfterMs = this.#options.reapAfterMs ?? REAP_CLIENTS_AFTER_MS;
    return defer(() => {
      const condition = {
        ExpressionAttributeNames: { '#lastUpdate': A.lastUpdate },
        ExpressionAttributeValues: { ':cutoff': { N: nanosFromMillis(now() - reapAfterMs).toString() } },
      };
      return dynamo.scanAll({
        TableName: table,
        ConsistentRead: true,
        FilterExpression: '#lastUpdate < :cutoff',
        ProjectionExpression: '#id, #lastUpdate',
        ...condition,
        ExpressionAttributeNames: { ...condition.ExpressionAttributeNames, '#id': A.id },
      }).pipe(
        concatMap((items) => from(items.map((item) => readString(item, A.id)).filter((id): id is string => id !== undefined))),
        // The condition again at delete time: a client that heartbeated since the scan is alive.
        concatMap((id) => dynamo.deleteItem({
          TableName: table,
          Key: { [A.id]: { S: id } },
          ConditionExpression: '#lastUpdate < :cutoff',
          ...condition,
        }).pipe(
          map(() => id),
          catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? of(undefined) : throwError(() => error))),
        )),
        filter((id): id is string => id !== undefined),
        toArray(),
        map((ids) => ids.sort(compareIds)),
      );
    }).pipe(catchError((error: unknown) => tableError(this.#options.table, error)));
  }
}

/** What a heartbeat's answer (the row as written) tells this process. */
function registration(incarnation: number, newLife: boolean, written: Item, revoked: readonly string[]): Registration {
  return { registered: true, incarnation, newLife, drainRequested: written[A.drainRequested]?.BOOL === true, revoked };
}

/** A row of this clientId that cannot be decoded: taken over as another process's. */
function corruptRow(id: string): ClientRow {
  const row: RowLife = { instanceId: '(corrupt)', ended: undefined, revoked: undefined, shardIds: undefined };
  return { ...row, id, name: undefined, lastUpdateNs: 0n, library: undefined, uptimeMs: undefined, drainRequested: false };
}
