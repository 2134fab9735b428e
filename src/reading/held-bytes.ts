// The payload bytes one shard's reader holds, from the GetRecords that fetched them until their
// records are under the checkpoint (design §9.1): reserved for a call that is out, waiting in the
// page (raw records not yet emitted), emitted (the records the application has, and the aggregate
// being taken apart). Pure bookkeeping; the delivery feeds it and tells the budget the total.
//
// A raw record's bytes are charged to its last user record (a plain record is its own last): a KPL
// aggregate's buffer stays reachable until every sub-record of it is passed, and records pass under
// the checkpoint in the order they were registered, so the charge leaves with the last of them.

/** What one shard's reader holds, in payload bytes. */
export class HeldBytes {
  // The charge of each registered record not yet under the checkpoint, oldest first; entries
  // before #head are passed.
  #charges: number[] = [];
  #head = 0;
  #registeredBytes = 0;
  // The raw record being taken apart (an aggregate some of whose sub-records were registered).
  #open = 0;
  // Raw records of the page not yet taken.
  #waiting = 0;
  // A fetch that is out.
  #reserved = 0;

  /** Bytes of records emitted (or skipped) and not yet under the checkpoint, with the aggregate being taken apart. */
  get emitted(): number {
    return this.#registeredBytes + this.#open;
  }

  /** Everything held: emitted, waiting in the page, reserved for a call that is out. */
  get total(): number {
    return this.#registeredBytes + this.#open + this.#waiting + this.#reserved;
  }

  /** Records registered (emitted or skipped) and not yet passed. */
  get registered(): number {
    return this.#charges.length - this.#head;
  }

  /** A fetch is out, for at most `bytes`. */
  reserve(bytes: number): void {
    this.#reserved = bytes;
  }

  /** A page arrived holding `bytes` not yet taken (it replaces the reservation). */
  loaded(bytes: number): void {
    this.#reserved = 0;
    this.#waiting = bytes;
  }

  /**
   * A user record was registered: `startedBytes` > 0 when it is the first taken of its raw record
   * (whose bytes leave the page), `done` when it is the last (the raw record's charge goes with it).
   */
  taken(startedBytes: number, done: boolean): void {
    if (startedBytes > 0) {
      this.#waiting = Math.max(0, this.#waiting - startedBytes);
      this.#open += startedBytes;
    }
    if (!done) {
      this.#charges.push(0);
      return;
    }
    this.#charges.push(this.#open);
    this.#registeredBytes += this.#open;
    this.#open = 0;
  }

  /** The oldest `count` registered records are under the checkpoint. */
  passed(count: number): void {
    const end = Math.min(this.#charges.length, this.#head + Math.max(0, count));
    for (let i = this.#head; i < end; i += 1) this.#registeredBytes -= this.#charges[i] as number;
    this.#head = end;
    // Let go of passed entries now and then, not on every pass.
    if (this.#head >= 1024 && this.#head * 2 >= this.#charges.length) {
      this.#charges = this.#charges.slice(this.#head);
      this.#head = 0;
    }
  }

  /**
   * The rest of the page is dropped (the reader fetches again from its last record): its raw records
   * no longer count; an aggregate partly registered stays charged, to its last registered record.
   */
  discarded(): void {
    this.#waiting = 0;
    if (this.#open === 0) return;
    const last = this.#charges.length - 1;
    if (last >= this.#head) {
      this.#charges[last] = (this.#charges[last] as number) + this.#open;
      this.#registeredBytes += this.#open;
    }
    this.#open = 0;
  }
}
