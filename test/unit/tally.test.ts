import { expect } from 'chai';
import type { AckLine } from '../../examples/demo/ack-log.js';
import type { Produced } from '../../examples/demo/producer.js';
import { tally } from '../../examples/demo/tally.js';

const P = 'shardId-000000000000';
const C = 'shardId-000000000001';

function produced(shardId: string, key: string, n: number, seq: bigint): Produced {
  return { key, n, data: `${key}#${n}`, shardId, seq: seq.toString(), t: 0 };
}

function ack(p: Produced, w: string, e: number, i: number, t = e + 1): AckLine {
  return { e, i, t, w, shardId: p.shardId, seq: p.seq, key: p.key, data: p.data };
}

describe('demo tally (the fleet checker)', () => {
  const base = 49_000_000_000_000_000_000n;
  const p0 = produced(P, 'a', 0, base + 1n);
  const p1 = produced(P, 'a', 1, base + 2n);
  const c0 = produced(C, 'a', 2, base + 3n);
  const parents = new Map([[C, [P]]]);

  it('counts a clean run: nothing lost, no duplicates, no violations', () => {
    const result = tally({ produced: [p0, p1, c0], acks: [ack(p0, 'w1', 10, 0), ack(p1, 'w1', 11, 1), ack(c0, 'w2', 20, 0)], parents });
    expect(result).to.deep.include({ produced: 3, consumedUnique: 3, acks: 3, duplicates: 0, lost: [], violations: [] });
  });

  it('reports lost records and duplicates per shard', () => {
    const result = tally({ produced: [p0, p1, c0], acks: [ack(p0, 'w1', 10, 0), ack(p0, 'w2', 15, 0), ack(c0, 'w2', 20, 1)], parents });
    expect(result.lost).to.deep.equal(['a#1']);
    expect(result.duplicates).to.equal(1);
    expect([...result.duplicatesByShard]).to.deep.equal([[P, 1]]);
  });

  it('flags first deliveries out of sequence order within a shard (ties broken by the worker counter)', () => {
    const result = tally({ produced: [p0, p1], acks: [ack(p1, 'w1', 10, 0), ack(p0, 'w1', 10, 1)], parents });
    expect(result.violations.map((v) => v.kind)).to.deep.equal(['per-shard order']);
  });

  it('flags a child record received before a parent record of the same key was acked', () => {
    const result = tally({ produced: [p0, p1, c0], acks: [ack(p0, 'w1', 10, 0), ack(p1, 'w1', 11, 1, 30), ack(c0, 'w2', 20, 0)], parents });
    expect(result.violations.map((v) => v.kind)).to.deep.equal(['parent after child']);
  });

  it('ignores other keys when checking parents before children', () => {
    const other = produced(C, 'b', 0, base + 4n);
    const result = tally({ produced: [p0, p1, other], acks: [ack(p0, 'w1', 10, 0), ack(p1, 'w1', 11, 1, 30), ack(other, 'w2', 20, 0)], parents });
    expect(result.violations).to.deep.equal([]);
  });

  it('flags an acked record nobody produced', () => {
    const ghost = produced(P, 'z', 9, base + 9n);
    const result = tally({ produced: [p0], acks: [ack(p0, 'w1', 10, 0), ack(ghost, 'w1', 11, 1)], parents });
    expect(result.violations.map((v) => v.kind)).to.deep.equal(['unknown record']);
  });
});
