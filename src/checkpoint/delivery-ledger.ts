// The delivery count of one lease (design §9.3), as pure state: how often each record was
// delivered before, by sessions that ended without a graceful release, and what this session
// records of its own deliveries so that the next one counts them. Pure: the checkpoint state asks
// it what to write and tells it what landed; the processing operators ask it, through the
// tracker, whether a record's delivery is recorded before they hand it to a handler.
//
// The rules, and why:
// - A record's count is 1 plus the sessions of every entry the row held at capture that reaches
//   it. Entries only come from writes made before the delivery they count, so a count is never
//   more than the deliveries there were.
// - A record some earlier session delivered (count >= 2) is *paced*: it is handed to a handler
//   alone — every record before it settled and committed, its own delivery recorded by that same
//   write. A process that dies on it then dies with only it in flight: the count lands on the
//   record that kills the process, not on the records handled before it and not yet committed
//   (a crash within commitFrequencyMs of their acks). Paced records are a prefix of the lease's
//   records (entries reach every record up to their position).
// - The others are delivered in bulk. What this session tracked (emitted) by the time a write is
//   built is recorded by that write (this session's own entry), and every record is handed to a
//   handler only once a write recording it has landed: a process that dies on one has its delivery
//   counted. One write per burst of records (a page), not per record, sent at once (not throttled
//   by commitFrequencyMs). An earlier version let records tracked after the session's first write
//   go straight to handlers; a new session can meet the poison record after its first write every
//   time, and its count then never grows (simulator, seed 10 --only poison: six processes killed
//   at maxDeliveries 3, four of them at deliveryCount 1).
// - A graceful release writes no entry of its own: nothing died.
import type { DeliveredThrough, StoredCheckpoint } from '../ports/lease-store.js';
import type { Position } from '../ports/position.js';
import { normalizeDeliveries } from './deliveries.js';
import { comparePositions } from './sequence-number.js';

/** A ticket of the checkpoint state (a tracked record), and its position. */
export interface LedgerRecord {
  readonly ticket: number;
  readonly position: Position;
}

/** What one write records, snapshotted when it is built. */
export interface LedgerMark {
  /** The entries to write: earlier sessions' beyond the checkpoint, and this session's own. */
  readonly entries: readonly DeliveredThrough[];
  /** This session's own entry: the record it reaches, and whether that is one paced record. */
  readonly own: (LedgerRecord & { readonly paced: boolean }) | undefined;
}

/** The deliveries of one lease's records. */
export class DeliveryLedger {
  readonly #earlier: readonly DeliveredThrough[];
  // The first earlier entry that may still reach the records being tracked, and the sessions of it and all after it.
  #cursor = 0;
  #reaching: number;
  #first: number | undefined;
  #pacedEnd = 0;
  // The counts of the paced records (the others' is 1), from #first on.
  readonly #pacedCounts: number[] = [];
  #last: LedgerRecord | undefined;
  #recordedThrough = -1;
  #pacedRecorded = -1;
  #releasing = false;
  readonly #waiting = new Map<number, Array<() => void>>();

  /** @param earlier the entries the row held at capture (see `HeldLease.deliveries`). */
  constructor(earlier: readonly DeliveredThrough[] | undefined, checkpoint: StoredCheckpoint | undefined) {
    this.#earlier = normalizeDeliveries(checkpoint, earlier ?? []);
    this.#reaching = this.#earlier.reduce((sum, entry) => sum + entry.sessions, 0);
  }

  /** Registers the next record tracked (in sequence order) and returns its delivery count. */
  track(ticket: number, position: Position): number {
    this.#first ??= ticket;
    while (this.#reaching > 0 && comparePositions((this.#earlier[this.#cursor] as DeliveredThrough).through, position) < 0) {
      this.#reaching -= (this.#earlier[this.#cursor] as DeliveredThrough).sessions;
      this.#cursor += 1;
    }
    if (this.#reaching > 0) {
      this.#pacedEnd = ticket + 1;
      this.#pacedCounts[ticket - this.#first] = 1 + this.#reaching;
    }
    this.#last = { ticket, position };
    return 1 + this.#reaching;
  }

  /** The delivery count of a tracked record (as {@link track} returned it). */
  count(ticket: number): number {
    return this.paced(ticket) ? (this.#pacedCounts[ticket - (this.#first as number)] ?? 1) : 1;
  }

  /** Nobody waits for a delivery to be recorded: no write is owed. */
  get idle(): boolean {
    return this.#waiting.size === 0;
  }

  /** An earlier session delivered the record: it is handed to a handler alone. */
  paced(ticket: number): boolean {
    return this.#first !== undefined && ticket >= this.#first && ticket < this.#pacedEnd;
  }

  /**
   * What a write built now records, for a write leaving `checkpoint` with `next` the first record
   * beyond it (`undefined`: none tracked beyond).
   */
  mark(checkpoint: StoredCheckpoint | undefined, next: LedgerRecord | undefined): LedgerMark {
    const own = this.#own(next);
    const entries = own === undefined ? this.#earlier : [...this.#earlier, { through: own.position, sessions: 1 }];
    return { entries: normalizeDeliveries(checkpoint, entries), own };
  }

  /** A write built now would record a delivery someone waits for. */
  owes(next: LedgerRecord | undefined): boolean {
    if (this.#releasing || this.#waiting.size === 0) return false;
    if (next !== undefined && this.paced(next.ticket)) return this.#waiting.has(next.ticket) && this.#pacedRecorded < next.ticket;
    for (const ticket of this.#waiting.keys()) if (!this.paced(ticket) && !this.#recorded(ticket)) return true;
    return false;
  }

  /** A write carrying `mark` landed: the deliveries it records are recorded; their waiters are told. */
  landed(mark: LedgerMark | undefined): void {
    const own = mark?.own;
    if (own === undefined || this.#releasing) return;
    if (own.paced) {
      this.#pacedRecorded = Math.max(this.#pacedRecorded, own.ticket);
    } else {
      this.#recordedThrough = Math.max(this.#recordedThrough, own.ticket);
    }
    for (const [ticket, waiters] of [...this.#waiting]) {
      if (!this.#recorded(ticket)) continue;
      this.#waiting.delete(ticket);
      for (const waiter of waiters) waiter();
    }
  }

  /**
   * Calls `recorded` once the delivery of `ticket` is recorded (at once when it needs no
   * recording, or is). Returns `true` when it waits.
   */
  whenRecorded(ticket: number, recorded: () => void): boolean {
    if (this.#releasing || this.#recorded(ticket)) {
      if (!this.#releasing) recorded();
      return false;
    }
    const waiters = this.#waiting.get(ticket);
    if (waiters === undefined) this.#waiting.set(ticket, [recorded]);
    else waiters.push(recorded);
    return true;
  }

  /** The lease ends gracefully: its own entry is not written again, and nobody waits any more. */
  release(): void {
    this.#releasing = true;
    this.#waiting.clear();
  }

  /** The delivery of `ticket` is recorded, or needs no recording (`false` once the lease ends: nothing is recorded then). */
  recorded(ticket: number): boolean {
    return !this.#releasing && this.#recorded(ticket);
  }

  #recorded(ticket: number): boolean {
    if (this.paced(ticket)) return ticket <= this.#pacedRecorded;
    return ticket <= this.#recordedThrough || (this.#first !== undefined && ticket < this.#first);
  }

  #own(next: LedgerRecord | undefined): (LedgerRecord & { readonly paced: boolean }) | undefined {
    if (this.#releasing || next === undefined) return undefined;
    if (this.paced(next.ticket)) {
      return this.#waiting.has(next.ticket) || this.#pacedRecorded >= next.ticket ? { ...next, paced: true } : undefined;
    }
    const last = this.#last;
    return last !== undefined && last.ticket >= next.ticket ? { ...last, paced: false } : undefined;
  }
}
