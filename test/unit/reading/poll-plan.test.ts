import { expect } from 'chai';
import fc from 'fast-check';
import {
  IDLE_POLL_DELAY_MS, MAX_CALLS_PER_SECOND, MAX_RECORDS_PER_CALL, iteratorTooOld, pollDelayMs, recordsLimit, rememberCall,
} from '../../../src/reading/poll-plan.js';

describe('poll plan', () => {
  describe('recordsLimit', () => {
    it('asks for the room left under maxInFlightRecords', () => {
      expect(recordsLimit(100, 0)).to.equal(100);
      expect(recordsLimit(100, 37)).to.equal(63);
    });

    it('never more than 10,000, and 0 when there is no room', () => {
      expect(recordsLimit(50_000, 0)).to.equal(MAX_RECORDS_PER_CALL);
      expect(recordsLimit(100, 100)).to.equal(0);
      expect(recordsLimit(100, 120)).to.equal(0);
    });
  });

  describe('pollDelayMs', () => {
    const base = { throttleDelayMs: 250, behind: false };

    it('the first call goes at once', () => {
      expect(pollDelayMs({ ...base, nowMs: 1000, recentCallsMs: [] })).to.equal(0);
    });

    it('then calls are throttleDelayMs apart', () => {
      expect(pollDelayMs({ ...base, nowMs: 1100, recentCallsMs: [1000] })).to.equal(150);
      expect(pollDelayMs({ ...base, nowMs: 1400, recentCallsMs: [1000] })).to.equal(0);
    });

    it('a quiet shard (the last answer empty, not behind) is called once a second, as the KCL polls an idle shard', () => {
      expect(IDLE_POLL_DELAY_MS).to.equal(1000);
      expect(pollDelayMs({ ...base, idle: true, nowMs: 1100, recentCallsMs: [1000] })).to.equal(900);
      expect(pollDelayMs({ ...base, idle: true, nowMs: 2100, recentCallsMs: [1000] })).to.equal(0);
      // The first page with records brings back throttleDelayMs.
      expect(pollDelayMs({ ...base, idle: false, nowMs: 1100, recentCallsMs: [1000] })).to.equal(150);
    });

    it('a throttleDelayMs longer than the idle pace stays the spacing of a quiet shard too', () => {
      expect(pollDelayMs({ throttleDelayMs: 2000, behind: false, idle: true, nowMs: 1100, recentCallsMs: [1000] })).to.equal(1900);
    });

    it('never before the shard\'s read budget is paid for (a 10 MiB page: 5 s), behind or not', () => {
      expect(pollDelayMs({ ...base, behind: true, nowMs: 1010, recentCallsMs: [1000], readReadyAtMs: 6000 })).to.equal(4990);
      expect(pollDelayMs({ ...base, behind: false, nowMs: 1010, recentCallsMs: [1000], readReadyAtMs: 6000.5 })).to.equal(4991);
      expect(pollDelayMs({ ...base, behind: false, nowMs: 1010, recentCallsMs: [1000], readReadyAtMs: 900 }), 'paid for: the usual spacing').to.equal(base.throttleDelayMs - 10);
    });

    it('while behind, the next call goes at once', () => {
      expect(pollDelayMs({ ...base, behind: true, nowMs: 1010, recentCallsMs: [1000] })).to.equal(0);
    });

    it('while behind, the sixth call within a second waits until the window has room', () => {
      const calls = [1000, 1010, 1020, 1030, 1040];
      expect(pollDelayMs({ ...base, behind: true, nowMs: 1050, recentCallsMs: calls })).to.equal(950);
    });

    it('property: following the delays never puts more than 5 calls in any second', () => {
      fc.assert(fc.property(
        fc.integer({ min: 200, max: 2000 }),
        fc.array(fc.record({ behind: fc.boolean(), workMs: fc.integer({ min: 0, max: 300 }) }), { minLength: 1, maxLength: 60 }),
        (throttleDelayMs, steps) => {
          let now = 0;
          let recent: number[] = [];
          const calls: number[] = [];
          for (const step of steps) {
            now += pollDelayMs({ nowMs: now, recentCallsMs: recent, throttleDelayMs, behind: step.behind });
            calls.push(now);
            recent = rememberCall(recent, now);
            now += step.workMs;
          }
          for (let i = MAX_CALLS_PER_SECOND; i < calls.length; i += 1) {
            expect((calls[i] ?? 0) - (calls[i - MAX_CALLS_PER_SECOND] ?? 0)).to.be.at.least(1000);
          }
        },
      ));
    });

    it('property: when not behind, consecutive calls are at least throttleDelayMs apart', () => {
      fc.assert(fc.property(
        fc.integer({ min: 200, max: 2000 }),
        fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 1, maxLength: 40 }),
        (throttleDelayMs, work) => {
          let now = 0;
          let recent: number[] = [];
          let previous: number | undefined;
          for (const workMs of work) {
            now += pollDelayMs({ nowMs: now, recentCallsMs: recent, throttleDelayMs, behind: false });
            if (previous !== undefined) expect(now - previous).to.be.at.least(throttleDelayMs);
            previous = now;
            recent = rememberCall(recent, now);
            now += workMs;
          }
        },
      ));
    });
  });

  describe('rememberCall', () => {
    it('keeps the latest five calls, oldest first', () => {
      let recent: number[] = [];
      for (const t of [1, 2, 3, 4, 5, 6, 7]) recent = rememberCall(recent, t);
      expect(recent).to.deep.equal([3, 4, 5, 6, 7]);
    });

    it('does not change the history it is given', () => {
      const recent = [1, 2];
      rememberCall(recent, 3);
      expect(recent).to.deep.equal([1, 2]);
    });
  });

  describe('iteratorTooOld', () => {
    it('is true from maxAgeMs after issue on', () => {
      expect(iteratorTooOld(1000 + 269_999, 1000, 270_000)).to.equal(false);
      expect(iteratorTooOld(1000 + 270_000, 1000, 270_000)).to.equal(true);
    });
  });
});
