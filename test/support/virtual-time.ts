import type { VirtualTimeScheduler } from 'rxjs';

/** Moves virtual time forward by `ms`, running every timer due on the way (and no later one). */
export function advance(scheduler: VirtualTimeScheduler, ms: number): void {
  scheduler.schedule(() => undefined, ms);
  scheduler.maxFrames = scheduler.now() + ms;
  scheduler.flush();
}

/** Runs virtual time up to `ms` (absolute), every timer due by then included, and stops the clock there. */
export function runTo(scheduler: VirtualTimeScheduler, ms: number): void {
  scheduler.maxFrames = ms;
  scheduler.flush();
  scheduler.frame = ms;
}

/** Runs `work` at virtual time `ms` (absolute). */
export function at(scheduler: VirtualTimeScheduler, ms: number, work: () => void): void {
  scheduler.schedule(work, ms - scheduler.now());
}
