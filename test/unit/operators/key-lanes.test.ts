import { expect } from 'chai';
import fc from 'fast-check';
import { LaneQueue, type Started } from '../../../src/operators/key-lanes.js';
import { Fifo } from '../../../src/operators/fifo.js';

interface Item {
  readonly id: number;
  readonly key: string;
}

type Op = { readonly kind: 'enqueue'; readonly key: string } | { readonly kind: 'take' } | { readonly kind: 'release'; readonly pick: number };

const ops = fc.array(fc.oneof(
  fc.record({ kind: fc.constant('enqueue' as const), key: fc.constantFrom('a', 'b', 'c', 'd', 'e') }),
  fc.record({ kind: fc.constant('take' as const) }),
  fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
), { maxLength: 300 });

/**
 * Runs `ops` against a LaneQueue and against a model (a list of queued items in arrival order and
 * the set of running ones): every take must return exactly the model's oldest startable item.
 */
function check(concurrency: number, lanes: boolean, script: readonly Op[]): void {
  const queue = new LaneQueue<Item>(lanes ? { concurrency, laneOf: (item) => item.key } : { concurrency });
  const queued: Item[] = [];
  const running: Started<Item>[] = [];
  let next = 0;
  for (const op of script) {
    if (op.kind === 'enqueue') {
      const item = { id: next++, key: op.key };
      queue.enqueue(item);
      queued.push(item);
    } else if (op.kind === 'take') {
      const busy = new Set(running.map((s) => s.item.key));
      const expected = running.length >= concurrency ? undefined : queued.find((item) => !lanes || !busy.has(item.key));
      const started = queue.take();
      expect(started?.item).to.equal(expected);
      if (started !== undefined) {
        running.push(started);
        queued.splice(queued.indexOf(started.item), 1);
      }
    } else if (running.length > 0) {
      const [started] = running.splice(op.pick % running.length, 1);
      queue.release(started as Started<Item>);
    }
    expect(queue.running).to.equal(running.length);
    expect(queue.queued).to.equal(queued.length);
    expect(queue.idle).to.equal(running.length === 0 && queued.length === 0);
    expect(running.length).to.be.at.most(concurrency);
    if (lanes) expect(new Set(running.map((s) => s.item.key)).size).to.equal(running.length);
  }
}

describe('key lanes (which queued record of a shard may start)', () => {
  it('per key: one at a time, in arrival order; the oldest startable goes first; never more than concurrency (any op sequence)', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 6 }), ops, (concurrency, script) => check(concurrency, true, script)), { numRuns: 300 });
  });

  it('without lanes: arrival order, never more than concurrency (any op sequence)', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 6 }), ops, (concurrency, script) => check(concurrency, false, script)), { numRuns: 300 });
  });

  it('one lane for the whole shard runs strictly one at a time whatever the concurrency', () => {
    const queue = new LaneQueue<number>({ concurrency: 8, laneOf: () => '' });
    [1, 2, 3].forEach((n) => queue.enqueue(n));
    const first = queue.take();
    expect(first?.item).to.equal(1);
    expect(queue.take()).to.equal(undefined);
    queue.release(first as Started<number>);
    expect(queue.take()?.item).to.equal(2);
  });

  it('Fifo keeps order across its compaction (long backlogs shift in O(1))', () => {
    const fifo = new Fifo<number>();
    const out: number[] = [];
    for (let i = 0; i < 5000; i += 1) {
      fifo.push(i);
      if (i % 3 === 0) out.push(fifo.shift() as number);
    }
    while (fifo.length > 0) out.push(fifo.shift() as number);
    expect(out).to.deep.equal(Array.from({ length: 5000 }, (_, i) => i));
    expect(fifo.shift()).to.equal(undefined);
  });
});
