import { expect } from 'chai';
import { EMPTY, type Observable, defer, of, range, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { exhaustMapLatest } from '../../src/operators/exhaust-map-latest.js';

const testScheduler = () => new TestScheduler((actual, expected) => { expect(actual).to.deep.equal(expected); });

describe('exhaustMapLatest', () => {
  it('runs the first value at once and the latest value that came while busy right after (intermediate ones dropped)', () => {
    testScheduler().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const a = cold('---a|');
      const b = cold('---b|');
      const d = cold('---d|');
      const inners: Record<string, Observable<string>> = { a, b, d };
      const source = hot('-a-bcd------|');
      // b and c arrive while a runs: both dropped in favour of d, the latest, which runs when a completes.
      expectObservable(source.pipe(exhaustMapLatest((v) => inners[v] ?? EMPTY))).toBe('----a---d---|');
      expectSubscriptions(a.subscriptions).toBe(' -^---!');
      expectSubscriptions(d.subscriptions).toBe(' -----^---!');
      expectSubscriptions(b.subscriptions).toBe([]);
    });
  });

  it('behaves like exhaustMap when nothing arrives while busy', () => {
    testScheduler().run(({ cold, hot, expectObservable }) => {
      const source = hot('-a-----b---|');
      expectObservable(source.pipe(exhaustMapLatest((v) => cold('-(x|)', { x: v })))).toBe('--a-----b--|');
    });
  });

  it('waits for the running and the pending value before completing', () => {
    testScheduler().run(({ cold, hot, expectObservable }) => {
      const source = hot('-ab|');
      expectObservable(source.pipe(exhaustMapLatest((v) => cold('---(x|)', { x: v })))).toBe('----a--(b|)');
    });
  });

  it('runs synchronous inners in a loop (no stack growth, no lost value)', () => {
    let calls = 0;
    const out: number[] = [];
    range(0, 50_000).pipe(exhaustMapLatest((v) => defer(() => { calls += 1; return of(v); }))).subscribe((v) => out.push(v));
    expect(calls).to.equal(50_000);
    expect(out.at(-1)).to.equal(49_999);
  });

  it('passes errors from the inner and from the source, and tears the inner down', () => {
    testScheduler().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const failing = cold('--#');
      expectObservable(hot('-a--').pipe(exhaustMapLatest(() => failing))).toBe('---#');
      const slow = cold('-----x|');
      expectObservable(hot('-a-#').pipe(exhaustMapLatest(() => slow))).toBe('---#');
      expectSubscriptions(slow.subscriptions).toBe('-^-!');
      expectObservable(hot('-a').pipe(exhaustMapLatest(() => throwError(() => 'boom')))).toBe('-#', undefined, 'boom');
    });
  });

  it('an error thrown by project errors the result', () => {
    testScheduler().run(({ hot, expectObservable }) => {
      expectObservable(hot('-a').pipe(exhaustMapLatest((): Observable<never> => { throw new Error('project'); }))).toBe('-#', undefined, new Error('project'));
    });
  });

  it('unsubscribing tears down the running inner', () => {
    testScheduler().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const inner = cold('------x|');
      expectObservable(hot('-a-b').pipe(exhaustMapLatest(() => inner)), '----!').toBe('-');
      expectSubscriptions(inner.subscriptions).toBe('-^--!');
    });
  });
});
