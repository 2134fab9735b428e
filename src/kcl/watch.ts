// Is a fleet alive? A one-shot command has no history, so it reads the rows twice, `watchMs` apart
// on its own clock, and a row that changed in between has a live writer: a KCL worker renews each
// lease it holds every failoverTime/3 (about 3.3 s by default) by moving its leaseCounter, a
// kinsumer client renews its rows every few seconds. No clock is compared with another host's.
import { type Observable, type SchedulerLike, concatMap, defer, from, map, of, timer } from 'rxjs';

/** Two reads of the same rows, `watchedMs` apart (0: one read, nothing needed watching). */
export interface Watched<T> {
  readonly before: T;
  readonly after: T;
  readonly watchedMs: number;
}

/** Called before the watch's wait with what is watched (a CLI says so); the wait starts when it returns. */
export type OnWatch = (what: string, watchMs: number) => void | Promise<void>;

/**
 * Reads, and when `watched(first)` names something to watch, waits `watchMs` on `scheduler` and
 * reads again. Nothing to watch (no lease, no owned row): one read, no wait.
 */
export function readTwice<T>(
  read: () => Observable<T>, watched: (first: T) => string | undefined, watchMs: number, scheduler: SchedulerLike, onWatch?: OnWatch,
): Observable<Watched<T>> {
  return defer(read).pipe(concatMap((before) => {
    const what = watched(before);
    if (what === undefined) return of({ before, after: before, watchedMs: 0 });
    const called = onWatch?.(what, watchMs);
    // Only a promise is waited for: a plain callback keeps the watch on the scheduler alone (virtual time in tests).
    return (called instanceof Promise ? from(called) : of(undefined)).pipe(
      concatMap(() => timer(watchMs, scheduler)),
      concatMap(() => read()),
      map((after) => ({ before, after, watchedMs: watchMs })),
    );
  }));
}

/** Keys whose version differs between two reads, or that are in only one of them. */
export function movedKeys(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): Set<string> {
  const moved = new Set<string>();
  for (const [key, version] of before) if (after.get(key) !== version) moved.add(key);
  for (const key of after.keys()) if (!before.has(key)) moved.add(key);
  return moved;
}
