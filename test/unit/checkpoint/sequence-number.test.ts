import { expect } from 'chai';
import fc from 'fast-check';
import { compareSequenceKeys, isSequenceNumber, sequenceKey } from '../../../src/checkpoint/sequence-number.js';

// Decimal strings of up to 128 digits, leading zeros and all: what sequenceKey must order as BigInt does.
const digits = fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 128 });
// Neighbours that share a long prefix, as a shard's sequence numbers do.
const neighbours = fc.tuple(fc.bigInt({ min: 10n ** 55n, max: 10n ** 56n - 1n }), fc.integer({ min: -1000, max: 1000 }))
  .map(([base, delta]) => [base.toString(), (base + BigInt(delta)).toString()] as const);

describe('sequence keys (the checkpoint\'s per-record comparison, no BigInt)', () => {
  it('orders canonical keys exactly as BigInt orders the numbers, leading zeros included', () => {
    fc.assert(fc.property(digits, digits, (a, b) => {
      const [x, y] = [BigInt(a), BigInt(b)];
      const expected = x < y ? -1 : x > y ? 1 : 0;
      expect(Math.sign(compareSequenceKeys(sequenceKey(a) as string, sequenceKey(b) as string))).to.equal(expected);
    }));
    fc.assert(fc.property(neighbours, ([a, b]) => {
      const expected = BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0;
      expect(Math.sign(compareSequenceKeys(sequenceKey(a) as string, sequenceKey(b) as string))).to.equal(expected);
    }));
  });

  it('accepts exactly what isSequenceNumber accepts', () => {
    fc.assert(fc.property(fc.oneof(digits, fc.string({ maxLength: 130 }), fc.constantFrom('', ' 1', '1 ', '+1', '-1', '1e5', '0x1', '١٢', '9'.repeat(129))), (value) => {
      expect(sequenceKey(value) !== undefined).to.equal(isSequenceNumber(value));
    }));
    for (const value of [undefined, null, 12, 12n, {}]) expect(sequenceKey(value), typeof value).to.equal(undefined);
  });

  it('drops leading zeros only: the key of 000 is 0, of 007 is 7', () => {
    expect([sequenceKey('000'), sequenceKey('007'), sequenceKey('0'), sequenceKey('70')]).to.deep.equal(['0', '7', '0', '70']);
  });
});
