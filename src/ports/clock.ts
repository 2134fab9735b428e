// The two clocks a client reads. The wall clock can step (NTP, a manual `date`, a hypervisor's
// catch-up), so it is only ever written for humans and the Go kinsumer; every expiry and every
// "for how long" is a difference on the monotonic clock, which never steps (design §8.3).
import { asyncScheduler, type SchedulerLike } from 'rxjs';

/**
 * The clocks of one client (the `clock` option). Production reads the host's wall clock and its
 * monotonic clock; a test that steps one host's wall clock gives its own.
 */
export interface Clock {
  /** Epoch ms on the host's wall clock: only ever written (LastUpdate, CheckpointUpdate), never subtracted. */
  wallNow(): number;
  /** Milliseconds on a monotonic clock: every expiry and every "for how long" is a difference of two of these. */
  elapsedNow(): number;
}

/** The host's clocks: `Date.now` and `performance.now()` (as epoch ms, so the two start out equal). */
export const HOST_CLOCK: Clock = {
  wallNow: () => Date.now(),
  elapsedNow: () => performance.timeOrigin + performance.now(),
};

/**
 * The clock a client uses when none is given: the host's with no scheduler (production) or with one
 * of RxJS's own (whose `now()` is `Date.now`, the wall clock), the scheduler's `now()` for both with
 * any other (a virtual one), so virtual time stays exact.
 */
export function schedulerClock(scheduler: SchedulerLike | undefined): Clock {
  // asyncScheduler, asapScheduler, queueScheduler and animationFrameScheduler share one `now`.
  if (scheduler === undefined || scheduler.now === asyncScheduler.now) return HOST_CLOCK;
  return { wallNow: () => scheduler.now(), elapsedNow: () => scheduler.now() };
}
