// The shard reader's pure decisions: how many records to ask for, when the next GetRecords may
// go out, and when an iterator is too old to use. No I/O, no RxJS, no clock: times come in.

/** Kinesis refuses a GetRecords `Limit` above this. */
export const MAX_RECORDS_PER_CALL = 10_000;

/** Kinesis allows this many GetRecords per second per shard (shared by every reader of the shard). */
export const MAX_CALLS_PER_SECOND = 5;

/**
 * A held iterator older than this is rebuilt before use instead of being sent to expire: Kinesis
 * iterators live 300000 ms, less a margin for the request's own latency and clock drift.
 */
export const DEFAULT_ITERATOR_MAX_AGE_MS = 270_000;

/**
 * The `Limit` of the next GetRecords: the room left under `maxInFlightRecords` by the records
 * still pending (emitted, not yet under the watermark), at most {@link MAX_RECORDS_PER_CALL};
 * 0 when the reader must wait for the watermark to move.
 */
export function recordsLimit(maxInFlightRecords: number, pending: number): number {
  return Math.max(0, Math.min(MAX_RECORDS_PER_CALL, maxInFlightRecords - pending));
}

/**
 * Least time between two GetRecords of a quiet shard: after an answer with no records (and not
 * behind), the next call waits this long, as the AWS KCL's `idleTimeBetweenReadsInMillis` does. An
 * idle shard costs a call a second instead of four (each a request's CPU, on both sides), and a
 * record arriving on it is read within a second. The first page with records brings back
 * `throttleDelayMs`.
 */
export const IDLE_POLL_DELAY_MS = 1000;

/** What decides when the next GetRecords may go out. */
export interface PollTiming {
  readonly nowMs: number;
  /** Start times of the latest GetRecords calls, oldest first (see {@link rememberCall}). */
  readonly recentCallsMs: readonly number[];
  readonly throttleDelayMs: number;
  /** The last answer said `MillisBehindLatest > 0`: there is more to read right away. */
  readonly behind: boolean;
  /** The last answer had no records and was not behind: the shard is quiet. */
  readonly idle?: boolean;
  /**
   * Until when the pages read so far spent the shard's read budget (read-budget.ts `readyAtMs`): a
   * call before then would be throttled, so it waits — pacing, not a retry.
   */
  readonly readReadyAtMs?: number;
}

/**
 * Milliseconds to wait before the next GetRecords: the one place that decides it. The first call
 * goes at once; then calls are `throttleDelayMs` apart — {@link IDLE_POLL_DELAY_MS} (or
 * `throttleDelayMs` if longer) after an empty answer — except while behind, when the next call goes
 * at once as long as no second holds more than {@link MAX_CALLS_PER_SECOND} calls; and never before
 * the shard's read budget is paid for (`readReadyAtMs`: a 10 MiB page makes the next call wait 5 s).
 */
export function pollDelayMs(timing: PollTiming): number {
  const { nowMs, recentCallsMs, throttleDelayMs, behind } = timing;
  const last = recentCallsMs[recentCallsMs.length - 1];
  if (last === undefined) return 0;
  const spacingMs = timing.idle === true ? Math.max(throttleDelayMs, IDLE_POLL_DELAY_MS) : throttleDelayMs;
  let earliest = Math.max(behind ? nowMs : last + spacingMs, timing.readReadyAtMs ?? Number.NEGATIVE_INFINITY);
  if (recentCallsMs.length >= MAX_CALLS_PER_SECOND) {
    const windowStart = recentCallsMs[recentCallsMs.length - MAX_CALLS_PER_SECOND] ?? last;
    earliest = Math.max(earliest, windowStart + 1000);
  }
  return Math.max(0, Math.ceil(earliest - nowMs));
}

/** The call history with a call at `nowMs` added, keeping only what {@link pollDelayMs} looks at. */
export function rememberCall(recentCallsMs: readonly number[], nowMs: number): number[] {
  const kept = recentCallsMs.length >= MAX_CALLS_PER_SECOND ? recentCallsMs.slice(1 - MAX_CALLS_PER_SECOND) : [...recentCallsMs];
  kept.push(nowMs);
  return kept;
}

/** `true` when an iterator issued at `issuedAtMs` should be rebuilt rather than used. */
export function iteratorTooOld(nowMs: number, issuedAtMs: number, maxAgeMs: number): boolean {
  return nowMs - issuedAtMs >= maxAgeMs;
}
