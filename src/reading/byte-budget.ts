// maxInFlightBytes (design §9.1): one budget of payload bytes per client, shared by its shards. A
// shard's bytes count from the GetRecords that fetched them (a page waiting for room is memory too)
// until its records are under the checkpoint. Pure: no RxJS, no clock; the shard's delivery asks
// before it fetches and before it emits, and says what it holds.
//
// The rules, one place:
// - Fair share: a shard fetches while it holds less than the budget divided by the shards holding
//   bytes (itself counted), and while the client holds less than the budget. An idle shard holds
//   nothing and takes no share: a lone busy shard may use the whole budget.
// - Each shard may always hold one record: a shard holding nothing may always fetch, for one
//   record when the budget is spent, so none starves and a record larger than the budget still goes.
// - A GetRecords has no byte limit: the delivery asks for as many records as its room holds at the
//   shard's bytes per record so far, and reserves that room while the call is out.
// - A record is emitted while the shard's emitted bytes stay within the budget, or alone.

/** What one shard holds, as the budget sees it. */
export class BudgetShare {
  #held = 0;

  /** @internal Made by {@link ByteBudget.join}. */
  constructor(private readonly budget: ByteBudget) {}

  /** Payload bytes the shard holds (fetched or reserved, not yet under the checkpoint). */
  get held(): number {
    return this.#held;
  }

  /** The shard now holds `bytes`. */
  set(bytes: number): void {
    if (bytes === this.#held) return;
    this.budget.adjust(this.#held, bytes);
    this.#held = bytes;
  }

  /** The shard's reader ended: it holds nothing any more. */
  leave(): void {
    this.set(0);
  }
}

/** The client's budget of payload bytes held for its shards (see the module comment). */
export class ByteBudget {
  #total = 0;
  #holding = 0;

  /** @param limitBytes `maxInFlightBytes`. */
  constructor(readonly limitBytes: number) {
    if (!(limitBytes > 0)) throw new RangeError('limitBytes must be > 0');
  }

  /** Payload bytes held by every shard together. */
  get totalBytes(): number {
    return this.#total;
  }

  /**
   * A shard's reader starts. It keeps its figure up to date itself, each time it looks at the budget
   * (before each fetch, and at each of its acks while it waits): another shard's figure may be a
   * moment old, and then too high, never too low.
   */
  join(): BudgetShare {
    return new BudgetShare(this);
  }

  /**
   * Bytes `share` may still fetch: its fair share less what it holds, and no more than the client
   * has left. Negative when it holds more than it may.
   */
  roomFor(share: BudgetShare): number {
    return Math.min(this.fairShare(share) - share.held, this.limitBytes - this.#total);
  }

  /** The budget divided by the shards holding bytes, `share` counted. */
  fairShare(share: BudgetShare): number {
    return this.limitBytes / (this.#holding + (share.held === 0 ? 1 : 0));
  }

  /**
   * `true` when `share` may send a GetRecords (or pull an event) now: it holds nothing, or its room
   * holds a record of `bytesPerRecord` and half its fair share — a page worth a call (Kinesis allows
   * five a second per shard), not a record at a time as acks free room.
   */
  mayFetch(share: BudgetShare, bytesPerRecord: number): boolean {
    return share.held === 0 || this.roomFor(share) >= Math.max(bytesPerRecord, this.fairShare(share) / 2);
  }

  /**
   * How many records a GetRecords of `share` asks for: as many as its room holds at
   * `bytesPerRecord` (one when it knows no size yet), at least one when it holds nothing, at most `countLimit`.
   */
  fetchLimit(share: BudgetShare, bytesPerRecord: number | undefined, countLimit: number): number {
    if (bytesPerRecord === undefined) return Math.min(1, countLimit);
    const records = Math.floor(Math.max(0, this.roomFor(share)) / Math.max(1, bytesPerRecord));
    return Math.min(countLimit, share.held === 0 ? Math.max(1, records) : records);
  }

  /** `true` when a record of `bytes` may be emitted by a shard whose emitted records hold `inFlightBytes`: within the budget, or alone. */
  mayEmit(inFlightBytes: number, bytes: number): boolean {
    return inFlightBytes === 0 || inFlightBytes + bytes <= this.limitBytes;
  }

  /** @internal A share's figure went from `before` to `after`. */
  adjust(before: number, after: number): void {
    this.#total += after - before;
    if (before === 0 && after > 0) this.#holding += 1;
    else if (before > 0 && after === 0) this.#holding -= 1;
  }
}
