import { type ObservableInput, type OperatorFunction, Observable, from } from 'rxjs';

/**
 * Like `exhaustMap`, but a value that arrives while the inner Observable runs is not lost: the
 * latest such value runs as soon as the inner completes (earlier ones are dropped). One inner at a
 * time, nothing buffered beyond one value — the shape of "at most one write in flight, and the
 * last request after it still happens". Completes when the source has completed and nothing is
 * running or pending. Inners that complete synchronously are run in a loop, not recursively.
 */
export function exhaustMapLatest<T, R>(project: (value: T, index: number) => ObservableInput<R>): OperatorFunction<T, R> {
  return (source) => new Observable<R>((subscriber) => {
    let index = 0;
    let active = false;
    let pending: { readonly value: T } | undefined;
    let sourceDone = false;
    let draining = false;

    const drain = (): void => {
      // An inner completing synchronously calls drain() again from inside the loop: let the loop go on.
      if (draining) return;
      draining = true;
      while (!active && pending !== undefined && !subscriber.closed) {
        const { value } = pending;
        pending = undefined;
        active = true;
        let inner: Observable<R>;
        try {
          inner = from(project(value, index++));
        } catch (error) {
          subscriber.error(error);
          break;
        }
        subscriber.add(inner.subscribe({
          next: (result) => subscriber.next(result),
          error: (error: unknown) => subscriber.error(error),
          complete: () => {
            active = false;
            drain();
          },
        }));
      }
      draining = false;
      if (!active && pending === undefined && sourceDone) subscriber.complete();
    };

    return source.subscribe({
      next: (value) => {
        pending = { value };
        drain();
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () => {
        sourceDone = true;
        drain();
      },
    });
  });
}
