import type { SchedulerAction, SchedulerLike, Subscription } from 'rxjs';

/**
 * A view of `base` whose wall clock is off by `skewMs` (a host whose clock runs ahead or behind):
 * `now()` is shifted, timers run on `base` unchanged. A number is a constant offset: differences
 * of `now()` are the same as on `base`, so only code that compares one host's timestamps with
 * another's can tell. A function is read at each `now()`: a clock that steps (NTP, a manual
 * `date`) while the timers, like `setTimeout`, keep the real pace — as `asyncScheduler` behaves.
 */
export function skewedScheduler(base: SchedulerLike, skewMs: number | (() => number)): SchedulerLike {
  const offset = typeof skewMs === 'number' ? () => skewMs : skewMs;
  return {
    now: () => base.now() + offset(),
    schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay?: number, state?: T): Subscription {
      return base.schedule(work, delay, state);
    },
  };
}
