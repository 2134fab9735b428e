import { expect } from 'chai';
import type { Produced } from '../../examples/demo/producer.js';
import { amountOf } from '../../examples/demo/producer.js';
import type { Tally } from '../support/tally.js';
import { checkTotals, effectsFaultRules, expectedTotals, splitRedeliveries, totalsReached } from './effects.js';
import { combinedRate } from './faults.js';

// The pure parts of the chaos run's effects mode: what the totals must come to, and how they are judged.
describe('chaos effects mode (pure parts)', () => {
  const produced = (data: string[]): Produced[] => data.map((d, i) => ({ key: d.split('#')[0] as string, n: Number(d.split('#')[1]), data: d, shardId: 's', seq: String(i), t: 0 }));

  it('each record adds 1 to 9 from its per-key number; the expected totals sum them per key', () => {
    expect(['k#0', 'k#8', 'k#9', 'k#17'].map(amountOf)).to.deep.equal([1, 9, 1, 9]);
    expect(expectedTotals(produced(['a#0', 'a#1', 'b#0']))).to.deep.equal(new Map([['a', 3], ['b', 1]]));
  });

  it('a total above or below its sum is a mismatch; every total exact is none', () => {
    const expected = new Map([['a', 3], ['b', 1]]);
    expect(checkTotals('t', expected, new Map([['a', 3], ['b', 1]]), 0).mismatches).to.deep.equal([]);
    expect(checkTotals('t', expected, new Map([['a', 6], ['b', 1]]), 0).mismatches).to.deep.equal([{ key: 'a', expected: 3, actual: 6 }]);
    expect(checkTotals('t', expected, new Map([['a', 3]]), 0).mismatches).to.deep.equal([{ key: 'b', expected: 1, actual: 0 }]);
    expect(totalsReached(expected, new Map([['a', 3]]))).to.equal(false);
    expect(totalsReached(expected, new Map([['a', 3], ['b', 1]]))).to.equal(true);
  });

  it('duplicate-rule findings are set apart; every other violation stays', () => {
    const tally = { violations: [{ kind: 'unexplained duplicate', detail: 'x' }, { kind: 'per-shard order', detail: 'y' }, { kind: 'duplicate window', detail: 'z' }] } as unknown as Tally;
    const split = splitRedeliveries(tally);
    expect(split.tally.violations.map((v) => v.kind)).to.deep.equal(['per-shard order']);
    expect(split.redeliveries).to.have.length(2);
  });

  it('faults: lost answers among every call\'s faults, conflicts on TransactWriteItems only, each at the rate asked', () => {
    const rules = effectsFaultRules(0.05);
    expect(rules[0]?.operation).to.equal('TransactWriteItems');
    expect(rules[0]?.rate).to.equal(0.05);
    const any = rules.slice(1);
    expect(any.every((r) => r.operation === '*')).to.equal(true);
    expect(any.some((r) => r.fault.kind === 'lose')).to.equal(true);
    expect(combinedRate(any)).to.be.closeTo(0.05, 1e-9);
  });
});
