// The subject behind a lease's shared `records$` (share's connector). RxJS's own Subject, in the
// build Node loads, makes a closure and an iterator for every value it passes on: at a record's
// rate that is garbage per record. This one passes a value on with a plain loop. It keeps the
// Subject contract `share` relies on: observers added and removed while values flow (the list is
// copied on change, never while iterating), and an observer that comes after the end gets the end.
import { type Observer, type SubjectLike, Subscription, type Unsubscribable } from 'rxjs';

type End = { readonly kind: 'error'; readonly error: unknown } | { readonly kind: 'complete' };

/** A multicasting subject that makes nothing per value. */
export class Multicast<T> implements SubjectLike<T> {
  #observers: ReadonlyArray<Partial<Observer<T>>> = [];
  #end: End | undefined;

  next(value: T): void {
    if (this.#end !== undefined) return;
    const observers = this.#observers;
    for (let i = 0; i < observers.length; i += 1) observers[i]?.next?.(value);
  }

  error(error: unknown): void {
    this.#finish({ kind: 'error', error });
  }

  complete(): void {
    this.#finish({ kind: 'complete' });
  }

  subscribe(observer: Partial<Observer<T>>): Unsubscribable {
    const end = this.#end;
    if (end !== undefined) {
      if (end.kind === 'error') observer.error?.(end.error);
      else observer.complete?.();
      return Subscription.EMPTY;
    }
    this.#observers = [...this.#observers, observer];
    const subscription = new Subscription(() => {
      this.#observers = this.#observers.filter((o) => o !== observer);
    });
    // As RxJS's Subject does: a subscriber that ends (unsubscribes) leaves the list.
    if (observer instanceof Subscription) observer.add(subscription);
    return subscription;
  }

  #finish(end: End): void {
    if (this.#end !== undefined) return;
    this.#end = end;
    const observers = this.#observers;
    this.#observers = [];
    for (const observer of observers) {
      if (end.kind === 'error') observer.error?.(end.error);
      else observer.complete?.();
    }
  }
}
