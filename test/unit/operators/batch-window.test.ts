import { expect } from 'chai';
import fc from 'fast-check';
import { BatchWindow } from '../../../src/operators/batch-window.js';

interface Item {
  readonly id: number;
  readonly group: number;
  readonly at: number;
}

// Pushes (with a lease group that only grows, as leases of one shard follow each other) and looks
// at the window at random later times; finally drains it.
const script = fc.record({
  maxSize: fc.integer({ min: 1, max: 5 }),
  maxWaitMs: fc.integer({ min: 0, max: 30 }),
  steps: fc.array(fc.oneof(
    fc.record({ kind: fc.constant('push' as const), gapMs: fc.integer({ min: 0, max: 10 }), newGroup: fc.boolean() }),
    fc.record({ kind: fc.constant('look' as const), gapMs: fc.integer({ min: 0, max: 20 }) }),
  ), { maxLength: 80 }),
});

describe('batch window (when one shard\'s next batch is cut, and what goes in it)', () => {
  it('loses, repeats and reorders nothing; a batch is one lease group and at most maxSize; never cut early; waits exactly until the head is maxWaitMs old', () => {
    fc.assert(fc.property(script, ({ maxSize, maxWaitMs, steps }) => {
      const window = new BatchWindow<Item>(maxSize, maxWaitMs, (item) => item.group);
      const pushed: Item[] = [];
      const taken: Item[] = [];
      let now = 0;
      let group = 0;
      const look = (atMs: number): boolean => {
        const decision = window.next(atMs);
        const waiting = pushed.slice(taken.length);
        const head = waiting[0];
        if (decision.kind === 'idle') {
          expect(head).to.equal(undefined);
          return false;
        }
        if (head === undefined) throw new Error(`${decision.kind} with nothing pushed`);
        const sameGroup = waiting.findIndex((item) => item.group !== head.group);
        const available = Math.min(maxSize, sameGroup === -1 ? waiting.length : sameGroup);
        const full = available === maxSize || sameGroup !== -1;
        if (decision.kind === 'wait') {
          expect(full, 'waits although the batch cannot grow').to.equal(false);
          expect(decision.untilMs).to.equal(head.at + maxWaitMs);
          expect(decision.untilMs).to.be.above(atMs);
          return false;
        }
        expect(full || atMs >= head.at + maxWaitMs, 'cut before it was full or its wait was over').to.equal(true);
        expect(decision.items).to.deep.equal(waiting.slice(0, available));
        taken.push(...decision.items);
        return true;
      };
      for (const step of steps) {
        now += step.gapMs;
        if (step.kind === 'push') {
          if (step.newGroup) group += 1;
          const item = { id: pushed.length, group, at: now };
          pushed.push(item);
          window.push(item, now);
        } else {
          look(now);
        }
        expect(window.length).to.equal(pushed.length - taken.length);
      }
      while (look(Infinity));
      expect(taken).to.deep.equal(pushed);
      expect(window.length).to.equal(0);
    }), { numRuns: 500 });
  });
});
