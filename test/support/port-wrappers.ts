// Wrappers around ports for fault tests: a call that never answers, a page with a malformed record.
import { NEVER, type Observable, defer, isObservable, throwError } from 'rxjs';

type Method<T> = { [K in keyof T]: T[K] extends (...args: never[]) => Observable<unknown> ? K : never }[keyof T];

/** `target` with some methods replaced (the others still called on `target`). */
export function override<T extends object>(target: T, replacements: Partial<T>): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      if (Object.hasOwn(replacements, property)) return (replacements as Record<PropertyKey, unknown>)[property];
      const value: unknown = Reflect.get(object, property, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(object) : value;
    },
  });
}

/** What {@link hang} counts. */
export interface HangCounter {
  /** Calls that got no answer. */
  hung: number;
  /** Every call of the method, hung or not. */
  calls: number;
}

/**
 * `target` whose `method` never answers (a hung socket) on the calls `when` picks — by default the
 * first one — and answers normally otherwise.
 */
export function hang<T extends object>(target: T, method: Method<T>, counter: HangCounter, when: (call: number, args: unknown[]) => boolean = (call) => call === 1): T {
  const original = (target[method] as (...args: unknown[]) => Observable<unknown>).bind(target);
  return override(target, {
    [method]: (...args: unknown[]) => defer(() => {
      counter.calls += 1;
      if (!when(counter.calls, args)) return original(...args);
      counter.hung += 1;
      return NEVER;
    }),
  } as Partial<T>);
}

/**
 * `target` whose every Observable-returning method fails with `error()` while `down()` says so (an
 * endpoint that refuses connections), and answers normally otherwise. Decided at subscription.
 */
export function outage<T extends object>(target: T, down: () => boolean, error: () => Error): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value: unknown = Reflect.get(object, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(object, args);
        if (!isObservable(result)) return result;
        return defer(() => (down() ? throwError(error) : result));
      };
    },
  });
}
