import { Observable } from 'rxjs';

/**
 * A cold Observable of one request: each subscription sends it once, and unsubscribing aborts it.
 * The ports of kinsumer return these, so RxJS composition (and virtual-time tests with fakes)
 * treats I/O like any other stream.
 */
export function request<T>(send: (signal: AbortSignal) => Promise<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    const controller = new AbortController();
    send(controller.signal).then(
      (value) => {
        subscriber.next(value);
        subscriber.complete();
      },
      (error: unknown) => subscriber.error(error),
    );
    return () => controller.abort();
  });
}
