import { expect } from 'chai';
import { DEFAULT_WIDTH, outputWidth, proseWords, twoColumns, usageWords, wrapText, wrapWords } from '../../../src/cli/wrap.js';

describe('CLI text wrapping (pure)', () => {
  it('writes for the terminal\'s columns, and for 80 when the output is not a terminal', () => {
    expect(outputWidth({ columns: 132 })).to.equal(132);
    expect(outputWidth({})).to.equal(DEFAULT_WIDTH).and.to.equal(80);
    expect(outputWidth({ columns: 0 })).to.equal(80);
  });

  it('wraps words under a hanging indent, never wider than the width, a word too long for any line on a line of its own', () => {
    const lines = wrapWords(['alpha', 'beta', 'gamma', 'delta', 'epsilon'], 16, '  -x  ', '      ');
    expect(lines).to.deep.equal(['  -x  alpha beta', '      gamma', '      delta', '      epsilon']);
    expect(lines.every((l) => l.length <= 16)).to.equal(true);
    expect(wrapWords(['a', 'x'.repeat(30), 'b'], 10, '', '')).to.deep.equal(['a', 'x'.repeat(30), 'b']);
  });

  it('keeps a unit with its number (no `3.1` at the end of a line and `s` at the start of the next)', () => {
    expect(proseWords('failover 3.1 s (leaseTtlMs 500 ms) target 100/s')).to.deep.equal(['failover', '3.1 s', '(leaseTtlMs', '500 ms)', 'target', '100/s']);
    expect(wrapText('  failover 3.1 s after the kill', 14)).to.deep.equal(['  failover', '  3.1 s after', '  the kill']);
  });

  it('keeps a bracketed group of a usage line whole', () => {
    expect(usageWords('kinsumer reset --to LATEST|<ISO timestamp> [--shard <id>[,<id>...]] (--a <x> | --b <y>)'))
      .to.deep.equal(['kinsumer', 'reset', '--to', 'LATEST|<ISO timestamp>', '[--shard <id>[,<id>...]]', '(--a <x> | --b <y>)']);
  });

  it('two columns: texts aligned after the longest label; on a narrow terminal each text goes under its label', () => {
    expect(twoColumns([['  --a', 'one two three'], ['  --long', 'four']], 20, 5)).to.deep.equal(['  --a     one two', '          three', '  --long  four']);
    expect(twoColumns([['  --a', 'one two'], ['  --long', 'four']], 20, 15)).to.deep.equal(['  --a', '      one two', '  --long', '      four']);
  });
});
