// One client's judgement of the clients rows it reads: which members are live, which expired (to
// be ended), which ended; and, for the lease store, what a life named in a lease row is worth.
// A row with a life expires one TTL after this reader's bound on its last heartbeat's send
// (src/group/beat-observer.ts); a row without one (a Go kinsumer's, an older kinsumer-ts's) when
// seen unchanged for the TTL (src/lease/row-observer.ts). Pure; the DynamoDB and in-memory
// membership stores feed it every scan, so both judge by this one rule.
import type { LiveClient, MemberLife, MemberSelf, MemberView } from '../ports/coordination.js';
import { RowObserver, observedExpired } from '../lease/row-observer.js';
import { BeatObserver } from './beat-observer.js';
import { lifeEnded } from './member-lives.js';

/** A clients row as read (decoded), with what the judgement needs beyond {@link LiveClient}. */
export interface SeenRow extends Omit<LiveClient, 'unchangedForMs' | 'expiresInMs' | 'nextBeatInMs' | 'beatUncertaintyMs'> {
  /** `Uptime`: the writer's monotonic age when it sent its last heartbeat (rows with a life). */
  readonly uptimeMs: number | undefined;
  /** `Ended`. */
  readonly ended: number | undefined;
}

/** A life this reader found expired and may end: the row exactly as read (the end is conditioned on it). */
export interface ExpiredLife {
  readonly id: string;
  readonly instanceId: string | undefined;
  readonly incarnation: number;
  readonly uptimeMs: number;
}

interface View {
  readonly incarnation: number | undefined;
  life: MemberLife;
  /** When this reader first saw the row in this life (its monotonic clock). */
  readonly sinceMs: number;
}

/** What one client has seen of the clients table. */
export class MemberObservations implements MemberView {
  readonly #rows = new RowObserver();
  readonly #beats = new BeatObserver();
  readonly #views = new Map<string, View>();
  readonly #expired = new Map<string, ExpiredLife>();
  #self: MemberSelf | undefined;

  /**
   * @param leaseTtlMs - a row lives this long past its last heartbeat.
   * @param periodMs - how often members heartbeat (for the expected next heartbeat; the fleet shares its timings).
   */
  constructor(private readonly leaseTtlMs: number, private readonly now: () => number, private readonly periodMs?: number) {}

  /** This process registered in life `incarnation` (its own row is never judged). */
  registered(clientId: string, incarnation: number): void {
    this.#self = { clientId, incarnation };
  }

  self(): MemberSelf | undefined {
    return this.#self;
  }

  /**
   * Judges a full read of the table (sent at `sentAtMs`, answered at `answeredAtMs`, this client's
   * monotonic clock): the rows it does not take for gone, sorted as given. Rows not in it are forgotten.
   */
  see(rows: readonly SeenRow[], sentAtMs: number, answeredAtMs: number): LiveClient[] {
    this.#rows.keepOnly(rows.map((row) => row.id));
    this.#beats.keepOnly(rows.map((row) => row.id));
    for (const id of this.#views.keys()) if (!rows.some((row) => row.id === id)) this.#views.delete(id);
    this.#expired.clear();
    const live: LiveClient[] = [];
    for (const row of rows) {
      const { uptimeMs, ended, ...client } = row;
      const unchangedForMs = this.#rows.see(row.id, `${row.lastUpdateNs}\u0000${row.instanceId ?? ''}\u0000${row.incarnation ?? ''}`, answeredAtMs);
      const sinceMs = this.#views.get(row.id)?.incarnation === row.incarnation ? (this.#views.get(row.id)?.sinceMs ?? answeredAtMs) : answeredAtMs;
      if (row.incarnation === undefined || uptimeMs === undefined) {
        this.#views.delete(row.id);
        const expiresInMs = this.leaseTtlMs - unchangedForMs;
        if (!observedExpired(unchangedForMs, this.leaseTtlMs)) live.push({ ...client, unchangedForMs, expiresInMs });
        continue;
      }
      if (lifeEnded({ incarnation: row.incarnation, ended })) {
        this.#views.set(row.id, { incarnation: row.incarnation, life: 'ended', sinceMs });
        continue;
      }
      this.#beats.see(row.id, `${row.instanceId ?? ''}\u0000${row.incarnation}`, uptimeMs, sentAtMs, answeredAtMs);
      const estimate = this.#beats.estimate(row.id, this.leaseTtlMs, answeredAtMs, this.periodMs);
      const expiresInMs = (estimate?.expiresAtMs ?? answeredAtMs + this.leaseTtlMs) - answeredAtMs;
      if (expiresInMs <= 0 && row.id !== this.#self?.clientId) {
        this.#views.set(row.id, { incarnation: row.incarnation, life: 'expired', sinceMs });
        this.#expired.set(row.id, { id: row.id, instanceId: row.instanceId, incarnation: row.incarnation, uptimeMs });
        continue;
      }
      this.#views.set(row.id, { incarnation: row.incarnation, life: 'live', sinceMs });
      live.push({
        ...client, unchangedForMs, expiresInMs,
        ...(estimate?.nextBeatAtMs === undefined ? {} : { nextBeatInMs: estimate.nextBeatAtMs - answeredAtMs }),
        ...(estimate === undefined ? {} : { beatUncertaintyMs: estimate.uncertaintyMs }),
      });
    }
    return live;
  }

  /** The lives the last read found expired and nobody has ended yet. */
  expired(): ExpiredLife[] {
    return [...this.#expired.values()];
  }

  /** `life` is ended (by this client's write, or another reader's before it). */
  ended(life: ExpiredLife): void {
    this.#expired.delete(life.id);
    const view = this.#views.get(life.id);
    if (view?.incarnation === life.incarnation) view.life = 'ended';
  }

  /** Ending `life` was refused: its row changed since the read (most likely a heartbeat). Judged again at the next read. */
  renewed(life: ExpiredLife): void {
    this.#expired.delete(life.id);
    const view = this.#views.get(life.id);
    if (view?.incarnation === life.incarnation) view.life = 'live';
  }

  /**
   * A life the row shows ended, expired or live; an earlier life than the row shows is over — but
   * when a process took the clientId's place (static membership), the one it replaced may emit
   * until its next heartbeat is refused: to members other than the new process, that earlier
   * life's leases are only expired (a reset may take them) until this reader has seen the later
   * life for a TTL (the replaced process's last accepted heartbeat came before it).
   */
  life(clientId: string, incarnation: number): MemberLife | undefined {
    const view = this.#views.get(clientId);
    if (view?.incarnation === undefined) return undefined;
    if (incarnation < view.incarnation) return this.now() - view.sinceMs >= this.leaseTtlMs ? 'ended' : 'expired';
    // A later life than the row showed: this client has not read it yet, so it is live to it.
    if (incarnation > view.incarnation) return 'live';
    return view.life;
  }
}
