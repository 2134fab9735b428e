// A retry's backoff wait that a lease's end cuts short: the record is then left to the next owner
// at once rather than after the delay, and nothing runs for it afterwards.
import type { SchedulerLike } from 'rxjs';

/**
 * Calls `then` after `delayMs` on `scheduler`, or `aborted` instead as soon as `signal` aborts.
 * Returns the teardown that cancels both.
 */
export function abortableWait(scheduler: SchedulerLike, signal: AbortSignal, delayMs: number, then: () => void, aborted: () => void): () => void {
  const onAbort = (): void => {
    timer.unsubscribe();
    aborted();
  };
  const timer = scheduler.schedule(() => {
    signal.removeEventListener('abort', onAbort);
    then();
  }, delayMs);
  signal.addEventListener('abort', onAbort, { once: true });
  return () => {
    timer.unsubscribe();
    signal.removeEventListener('abort', onAbort);
  };
}
