// Wrappers around ports for fault tests: a call that never answers, a page with a malformed record.
import { NEVER, type Observable, defer } from 'rxjs';

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
