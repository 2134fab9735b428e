import { expect } from 'chai';
import fc from 'fast-check';
import { defer, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { backoffDelay, retryTransient } from '../../../src/errors/retry-backoff.js';
import type { KinsumerEvent } from '../../../src/types.js';

const throttled = () => Object.assign(new Error('slow down'), { name: 'ProvisionedThroughputExceededException', $metadata: { httpStatusCode: 400 } });

describe('backoff', () => {
  it('stays within [0, min(max, base * 2^(attempt-1))] for any attempt and random draw', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 100 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (attempt, draw) => {
      const delay = backoffDelay(attempt, { baseMs: 100, maxMs: 10_000 }, () => draw);
      const ceiling = Math.min(10_000, 100 * 2 ** (attempt - 1));
      return Number.isInteger(delay) && delay >= 0 && delay <= ceiling;
    }));
  });

  it('grows exponentially until the cap (top of the jitter range)', () => {
    const top = () => 0.999999;
    expect([1, 2, 3, 4, 8, 20].map((a) => backoffDelay(a, { baseMs: 100, maxMs: 1000 }, top))).to.deep.equal([100, 200, 400, 800, 1000, 1000]);
  });

  it('retries transient errors after the backoff delay, reporting each attempt (virtual time)', () => {
    const scheduler = new TestScheduler((a, b) => { expect(a).to.deep.equal(b); });
    scheduler.run(({ cold, expectObservable }) => {
      let calls = 0;
      const events: KinsumerEvent[] = [];
      const source$ = defer(() => {
        calls += 1;
        return calls < 3 ? throwError(throttled) : cold('-a|');
      });
      const out$ = source$.pipe(retryTransient({
        operation: 'GetRecords', shardId: 's-1', scheduler, emit: (e) => events.push(e),
        policy: { baseMs: 10, maxMs: 100 }, random: () => 0.999999,
      }));
      // attempt 1 waits 10, attempt 2 waits 20, then the third subscription emits after 1 frame.
      expectObservable(out$).toBe('31ms a|');
      scheduler.flush();
      expect(events.map((e) => (e.type === 'retrying' ? [e.operation, e.attempt, e.delayMs, e.shardId] : e.type)))
        .to.deep.equal([['GetRecords', 1, 10, 's-1'], ['GetRecords', 2, 20, 's-1']]);
    });
  });

  it('lets a fatal error through at once', () => {
    const scheduler = new TestScheduler((a, b) => { expect(a).to.deep.equal(b); });
    scheduler.run(({ expectObservable }) => {
      const denied = Object.assign(new Error('no'), { name: 'AccessDeniedException' });
      const out$ = throwError(() => denied).pipe(retryTransient({ operation: 'x', scheduler, emit: () => undefined }));
      expectObservable(out$).toBe('#', undefined, denied);
    });
  });

  it('gives up after maxRetries', () => {
    const scheduler = new TestScheduler((a, b) => { expect(a).to.deep.equal(b); });
    scheduler.run(({ expectObservable }) => {
      const error = throttled();
      const out$ = throwError(() => error).pipe(retryTransient({ operation: 'x', scheduler, emit: () => undefined, maxRetries: 2, policy: { baseMs: 10, maxMs: 10 }, random: () => 0.999999 }));
      expectObservable(out$).toBe('20ms #', undefined, error);
    });
  });
});
