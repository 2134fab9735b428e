// A shard's read budget (design §9.1): Kinesis serves each shard 2 MiB/s to GetRecords. A page of
// 10 MiB spends five seconds of it, and a GetRecords sent before they are over is throttled. The
// next call waits for them instead — pacing, not a fault: no `retrying`, no backoff growth
// (poll-plan.ts `pollDelayMs` decides the wait). Pure: times come in (the reader's monotonic
// clock), nothing is scheduled here.

/** What Kinesis serves one shard to GetRecords, in payload bytes per second (shared by all its readers). */
export const SHARD_READ_BYTES_PER_SECOND = 2 * 1024 * 1024;

/** A GetRecords answer carries at most this much (or one record, if larger). */
export const MAX_BYTES_PER_CALL = 10 * 1024 * 1024;

/** The read budget of one shard, as this reader spends it. */
export class ReadBudget {
  #readyAtMs = Number.NEGATIVE_INFINITY;

  /** @param bytesPerSecond the shard's rate (`StreamPort.readBytesPerSecond`); default Kinesis's. */
  constructor(private readonly bytesPerSecond = SHARD_READ_BYTES_PER_SECOND) {}

  /**
   * A page of `bytes` arrived at `atMs`: the budget is spent until then, and for as long again as
   * the page takes at the shard's rate. Pages read slower than the rate leave nothing owed.
   */
  spent(bytes: number, atMs: number): void {
    if (bytes <= 0) return;
    this.#readyAtMs = Math.max(this.#readyAtMs, atMs) + (bytes * 1000) / this.bytesPerSecond;
  }

  /** From when the next GetRecords may go out without being throttled (monotonic ms; −∞: nothing owed). */
  get readyAtMs(): number {
    return this.#readyAtMs;
  }
}
