// When a shard's watermark last made progress (records became pending, or it moved with records
// still pending), for the stall warning. Progress comes with every record and every ack; the clock
// is read once per turn of the scheduler, not once per record: the first progress of a turn
// schedules one stamp for the end of that turn (the same instant on a virtual clock, well under a
// millisecond later on a real one).

/** `stallWarningMs`'s default: a shard whose watermark has not moved for a minute with records pending is reported. */
export const DEFAULT_STALL_WARNING_MS = 60_000;
import type { SchedulerLike } from 'rxjs';

/** The start of the current stretch without progress. */
export class StallClock {
  #sinceMs: number;
  #stampDue = false;

  /** `elapsedNow`: a monotonic clock (the client's `clock.elapsedNow`); the stamp runs on `scheduler`. */
  constructor(private readonly scheduler: SchedulerLike, private readonly elapsedNow: () => number) {
    this.#sinceMs = elapsedNow();
  }

  /** Progress now: the stretch without progress restarts (stamped at the end of this turn). */
  progressed(): void {
    if (this.#stampDue) return;
    this.#stampDue = true;
    this.scheduler.schedule(() => {
      this.#stampDue = false;
      this.#sinceMs = this.elapsedNow();
    });
  }

  /** When the last progress happened (on `elapsedNow`); the clock's creation before any. */
  get sinceMs(): number {
    // Progress this turn whose stamp has not run yet: that is now.
    return this.#stampDue ? this.elapsedNow() : this.#sinceMs;
  }
}
