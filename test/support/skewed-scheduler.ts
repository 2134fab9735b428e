import type { SchedulerLike } from 'rxjs';

/**
 * A client's clock that is off by `offsetMs`: `now()` is shifted, while timers run on the shared
 * scheduler (a delay is a delay on any clock). The stream and the other clients keep true time.
 */
export function skewedScheduler(scheduler: SchedulerLike, offsetMs: number): SchedulerLike {
  return {
    now: () => scheduler.now() + offsetMs,
    schedule: scheduler.schedule.bind(scheduler),
  };
}
