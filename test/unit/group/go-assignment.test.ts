import { expect } from 'chai';
import fc from 'fast-check';
import { compareGoStrings, goAssignment } from '../../../src/group/go-assignment.js';

// ---------------------------------------------------------------- oracle, written from §6 of the Go description

/** Go sorts ids with sort.Strings: bytewise on UTF-8. */
const goOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

/** Position p of the shard list goes to the client at index p mod n of the sorted live clients. */
function oracle(clients: readonly string[], shardIds: readonly string[]): Map<string, string> {
  const sorted = [...new Set(clients)].sort(goOrder);
  return new Map(shardIds.map((shardId, p) => [shardId, sorted[p % sorted.length] ?? '']));
}

const id = (n: number) => `shardId-${String(n).padStart(12, '0')}`;
const shardLists = fc.integer({ min: 0, max: 40 }).map((n) => Array.from({ length: n }, (_, i) => id(i)));
const clientLists = fc.array(fc.string({ unit: 'binary', minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 12 });

describe('goAssignment: the Go kinsumer\'s round robin, for groups with Go clients', () => {
  it('position p goes to the client at index p mod n in Go\'s order (property, against the oracle)', () => {
    fc.assert(fc.property(clientLists, shardLists, (clients, shardIds) => {
      expect(goAssignment({ clients, shardIds })).to.deep.equal(oracle(clients, shardIds));
    }), { numRuns: 500 });
  });

  it('every member computes the same answer whatever order it read the clients in, repeats included (property)', () => {
    fc.assert(fc.property(clientLists, shardLists, fc.integer(), (clients, shardIds, seed) => {
      const shuffled = [...clients, ...clients.slice(0, 2)].sort((a, b) => ((a.length * 31 + seed) % 7) - ((b.length * 31 + seed) % 7) || goOrder(b, a));
      expect(goAssignment({ clients: shuffled, shardIds })).to.deep.equal(goAssignment({ clients, shardIds }));
    }), { numRuns: 300 });
  });

  it('every listed shard goes to exactly one of the clients; counts differ by at most one; a client indexed past the list gets nothing (property)', () => {
    fc.assert(fc.property(clientLists, shardLists, (clients, shardIds) => {
      const assignment = goAssignment({ clients, shardIds });
      expect([...assignment.keys()]).to.deep.equal(shardIds);
      const live = [...new Set(clients)].sort(goOrder);
      for (const owner of assignment.values()) expect(live).to.include(owner);
      const counts = live.map((c) => [...assignment.values()].filter((o) => o === c).length);
      expect(Math.max(...counts) - Math.min(...counts)).to.be.at.most(1);
      live.forEach((client, index) => { if (index >= shardIds.length) expect(counts[index]).to.equal(0); });
    }), { numRuns: 300 });
  });

  it('the example of §6: 6 shards over 4 clients, and 2 shards over 3 clients (the third idles)', () => {
    const six = goAssignment({ clients: ['d', 'b', 'a', 'c'], shardIds: [id(0), id(1), id(2), id(3), id(4), id(5)] });
    expect([...six.values()]).to.deep.equal(['a', 'b', 'c', 'd', 'a', 'b']);
    const two = goAssignment({ clients: ['c', 'a', 'b'], shardIds: [id(0), id(1)] });
    expect([...two.values()]).to.deep.equal(['a', 'b']);
  });

  it('uses the shard list in the order given (as Go indexes the cached list), not re-sorted', () => {
    const assignment = goAssignment({ clients: ['a', 'b'], shardIds: [id(1), id(0)] });
    expect([...assignment]).to.deep.equal([[id(1), 'a'], [id(0), 'b']]);
  });

  it('no live client: nothing assigned', () => {
    expect(goAssignment({ clients: [], shardIds: [id(0)] }).size).to.equal(0);
  });
});

describe('compareGoStrings: Go\'s bytewise UTF-8 order', () => {
  it('agrees with a byte comparison of the UTF-8 encodings (property)', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
      expect(compareGoStrings(a, b)).to.equal(Math.sign(goOrder(a, b)));
    }), { numRuns: 2000 });
  });

  it('orders U+FF01 before U+1F600, where JavaScript\'s < (UTF-16 units) says the opposite', () => {
    expect('\u{1F600}' < '\uFF01').to.equal(true);
    expect(compareGoStrings('\uFF01', '\u{1F600}')).to.equal(-1);
    expect(compareGoStrings('\u{1F600}', '\uFF01')).to.equal(1);
  });
});
