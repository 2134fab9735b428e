// The stream's clock as a reader knows it, for judging how old a record is (maxRecordAgeMs): the
// time Kinesis named when it answered (a GetRecords answer's, or a subscription's, `Date` header),
// carried on from that moment by this host's monotonic clock. A record's arrival time is Kinesis's,
// so its age is then a difference of two times on one clock — never this host's wall clock against
// Kinesis's (design §7.1, §8.3; R19).
import type { Clock } from '../ports/clock.js';

/** The stream's time at one moment of the host's monotonic clock, and so at any later one. */
export class StreamClock {
  /**
   * @param atMs epoch milliseconds on the stream's clock at `elapsedAtMs`.
   * @param elapsedAtMs that moment on `clock`'s monotonic clock.
   */
  constructor(private readonly atMs: number, private readonly elapsedAtMs: number, private readonly clock: Clock) {}

  /** Epoch milliseconds on the stream's clock now. */
  nowMs(): number {
    return this.atMs + (this.clock.elapsedNow() - this.elapsedAtMs);
  }
}

/**
 * The stream's clock from an answer received now: the time the answer named (`streamTime`), or —
 * from a server that sent no `Date` — this host's wall clock at the answer, the best left to go by.
 */
export function streamClockAt(streamTime: Date | undefined, clock: Clock): StreamClock {
  return new StreamClock(streamTime === undefined ? clock.wallNow() : streamTime.getTime(), clock.elapsedNow(), clock);
}
