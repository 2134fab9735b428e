// One write of a shard's row at a time: a request that comes while one runs waits for it, the
// latest only. RxJS's throttle({ leading, trailing }) did this until a write's own start asked for
// the next one synchronously (an effects turn whose table keys were known: it wakes the lane as it
// completes): throttle then took the request as unthrottled — it had not stored the running write
// yet — started it, and ended it at once as the first write finished (it unsubscribed "the running
// one"): a transaction aborted as it was sent, and the lane waited for it forever.
import { Observable, type Subscription } from 'rxjs';

/** Runs `write` for each request of `requests$`, one at a time; requests that come meanwhile are folded into the latest. */
export function oneWriteAtATime<R>(requests$: Observable<R>, write: (request: R) => Observable<never>): Observable<never> {
  return new Observable<never>((subscriber) => {
    let busy = false;
    let waiting: { readonly request: R } | undefined;
    let sourceDone = false;
    let current: Subscription | undefined;
    const run = (request: R): void => {
      busy = true;
      let done = false;
      const running = write(request).subscribe({
        error: (error: unknown) => subscriber.error(error),
        complete: () => {
          done = true;
          busy = false;
          current = undefined;
          const next = waiting;
          waiting = undefined;
          if (next !== undefined) run(next.request);
          else if (sourceDone) subscriber.complete();
        },
      });
      // A write that finished while it was being started has started the next one already.
      if (!done) current = running;
    };
    const source = requests$.subscribe({
      next: (request) => {
        if (busy) waiting = { request };
        else run(request);
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () => {
        sourceDone = true;
        if (!busy) subscriber.complete();
      },
    });
    return () => {
      source.unsubscribe();
      current?.unsubscribe();
    };
  });
}
