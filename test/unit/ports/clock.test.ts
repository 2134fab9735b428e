import { expect } from 'chai';
import { asapScheduler, asyncScheduler, queueScheduler } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { HOST_CLOCK, schedulerClock } from '../../../src/ports/clock.js';

describe('schedulerClock', () => {
  // The README tells operator users to pass `consumer.options.scheduler`, which is asyncScheduler in
  // production: its now() is Date.now(), so a window timed on it moved with every step of the wall
  // clock (simulator: `--seed 7 --only step,process-batches`, a batch held 60 s by a -60 s step).
  for (const [name, scheduler] of [['asyncScheduler', asyncScheduler], ['asapScheduler', asapScheduler], ['queueScheduler', queueScheduler]] as const) {
    it(`treats RxJS's ${name} (whose now() is the wall clock) as the host: differences on the monotonic clock`, () => {
      const clock = schedulerClock(scheduler);
      const realNow = Date.now;
      const start = clock.elapsedNow();
      Date.now = () => realNow() - 60_000;
      try {
        expect(clock.elapsedNow() - start).to.be.within(0, 5_000);
      } finally {
        Date.now = realNow;
      }
    });
  }

  it("keeps a virtual scheduler's now() for both clocks, so virtual time stays exact", () => {
    const scheduler = new TestScheduler(() => undefined);
    const clock = schedulerClock(scheduler);
    scheduler.run(({ cold, expectObservable }) => {
      expectObservable(cold('-----a|')).toBe('-----a|');
    });
    expect(clock.elapsedNow()).to.equal(scheduler.now());
    expect(clock.wallNow()).to.equal(scheduler.now());
  });

  it('is the host clock with no scheduler', () => {
    expect(schedulerClock(undefined)).to.equal(HOST_CLOCK);
  });
});
