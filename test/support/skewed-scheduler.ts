import type { SchedulerAction, SchedulerLike, Subscription } from 'rxjs';

/**
 * A view of `base` whose wall clock is off by `skewMs` (a host whose clock runs ahead or behind):
 * `now()` is shifted, timers run on `base` unchanged. Differences of `now()` are the same as on
 * `base`, so only code that compares one host's timestamps with another's can tell.
 */
export function skewedScheduler(base: SchedulerLike, skewMs: number): SchedulerLike {
  return {
    now: () => base.now() + skewMs,
    schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay?: number, state?: T): Subscription {
      return base.schedule(work, delay, state);
    },
  };
}
