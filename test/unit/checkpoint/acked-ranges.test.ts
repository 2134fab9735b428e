import { expect } from 'chai';
import fc from 'fast-check';
import { ACKED_RANGES_MAX_BYTES, capAckedRanges, decodeAckedRanges, encodeAckedRanges } from '../../../src/checkpoint/acked-ranges.js';
import type { AckedRange, StoredCheckpoint } from '../../../src/ports/lease-store.js';
import { comparePositions } from '../../../src/checkpoint/sequence-number.js';
import { type Position } from '../../../src/ports/position.js';

// Real Kinesis sequence numbers: 56 digits; neighbours in a shard differ around the 28th digit.
const BASE = 49590338271490256608559692538361571095921575989136588898n;
const STEP = 2564131663402632534000926720n;
const seq = (offset: bigint | number): string => (BASE + BigInt(offset)).toString();
const at = (offset: bigint | number, sub?: number): Position => (sub === undefined ? { sequenceNumber: seq(offset) } : { sequenceNumber: seq(offset), subSequenceNumber: sub });
const stored = (position: Position): StoredCheckpoint => ({ type: 'position', position });

/** Sorted, non-overlapping ranges beyond offset 0: steps between positions, some of them inside one aggregate. */
const rangesArb = fc.array(fc.record({
  gap: fc.bigInt({ min: 1n, max: STEP * 1000n }),
  length: fc.bigInt({ min: 0n, max: STEP * 1000n }),
  fromSub: fc.option(fc.nat({ max: 1_000_000 }), { nil: undefined }),
  toSub: fc.option(fc.nat({ max: 1_000_000 }), { nil: undefined }),
}), { maxLength: 60 }).map((steps) => {
  let offset = 0n;
  const ranges: AckedRange[] = [];
  for (const step of steps) {
    offset += step.gap;
    const from = at(offset, step.fromSub);
    offset += step.length;
    let to = at(offset, step.toSub);
    if (comparePositions(to, from) < 0) to = at(offset);
    ranges.push({ from, to });
  }
  return ranges;
});

const checkpointArb: fc.Arbitrary<StoredCheckpoint | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.constant<StoredCheckpoint>({ type: 'LATEST' }),
  fc.constant<StoredCheckpoint>({ type: 'TRIM_HORIZON' }),
  fc.date({ min: new Date(0), max: new Date(8_000_000_000_000) }).map((timestamp): StoredCheckpoint => ({ type: 'AT_TIMESTAMP', timestamp })),
  fc.option(fc.nat({ max: 5 }), { nil: undefined }).map((sub) => stored(at(0, sub))),
);

describe('AckedRanges: the attribute that remembers records acked beyond the checkpoint', () => {
  it('round-trips any ordered ranges with any checkpoint, BigInt-exact, sub-sequence numbers included', () => {
    fc.assert(fc.property(checkpointArb, rangesArb, (checkpoint, ranges) => {
      const encoded = encodeAckedRanges(checkpoint, ranges, Number.POSITIVE_INFINITY);
      if (ranges.length === 0) return encoded === undefined;
      expect(encoded?.kept).to.equal(ranges.length);
      expect(decodeAckedRanges(encoded?.text, checkpoint)).to.deep.equal(ranges);
      return true;
    }));
  });

  it('is trusted only with the checkpoint it was written with: any other checkpoint reads as none', () => {
    fc.assert(fc.property(checkpointArb, checkpointArb, rangesArb.filter((r) => r.length > 0), (written, read, ranges) => {
      fc.pre(JSON.stringify(written) !== JSON.stringify(read));
      const { text } = encodeAckedRanges(written, ranges) ?? { text: '' };
      expect(decodeAckedRanges(text, read)).to.equal(undefined);
    }));
  });

  it('garbage reads as none and never throws (a wrong type, another version, bad characters, out of order, reversed)', () => {
    const checkpoint = stored(at(0));
    const good = encodeAckedRanges(checkpoint, [{ from: at(STEP), to: at(STEP * 3n) }, { from: at(STEP * 5n), to: at(STEP * 5n) }])?.text ?? '';
    expect(decodeAckedRanges(good, checkpoint)).to.have.length(2);
    const [, base] = good.split(';');
    for (const bad of [
      42, { S: good }, '', '1', '1;;', `2;${base};1`, `1;${base};`, `1;${base};1,`, `1;${base};A`, `1;${base};1--2`, `1;${base};1.-2`,
      `1;${base};${'z'.repeat(85)}`, `1;${base};1.${'z'.repeat(12)}`, `1;${base};1;2`,
      // The second range begins where the first ended: overlapping.
      `1;${base};5-3,0`,
    ]) {
      expect(decodeAckedRanges(bad, checkpoint), JSON.stringify(bad)).to.equal(undefined);
    }
    // Reversed: `to` before `from` inside one aggregate.
    const reversed = `1;${base};${STEP.toString(36)}.5-0.3`;
    expect(decodeAckedRanges(reversed, checkpoint)).to.equal(undefined);
    // Beginning before the checkpoint: sub-record 2 of the aggregate whose sub-record 4 is the checkpoint.
    const inside = stored(at(0, 4));
    const insideBase = encodeAckedRanges(inside, [{ from: at(1), to: at(1) }])?.text.split(';')[1];
    expect(decodeAckedRanges(`1;${insideBase};0.4-1`, inside), 'from the checkpoint itself').to.have.length(1);
    expect(decodeAckedRanges(`1;${insideBase};0.2-1`, inside)).to.equal(undefined);
    fc.assert(fc.property(fc.string({ maxLength: 200 }), (text) => {
      expect(() => decodeAckedRanges(`1;${base};${text}`, checkpoint)).to.not.throw();
      expect(() => decodeAckedRanges(text, checkpoint)).to.not.throw();
    }));
  });

  it('a range may begin at the checkpoint itself (it is acked, so saying so is harmless)', () => {
    const checkpoint = stored(at(0, 2));
    const ranges = [{ from: at(0, 2), to: at(STEP) }];
    expect(decodeAckedRanges(encodeAckedRanges(checkpoint, ranges)?.text, checkpoint)).to.deep.equal(ranges);
  });

  it('refuses to encode ranges out of order, overlapping, reversed or before the checkpoint', () => {
    const checkpoint = stored(at(10));
    expect(() => encodeAckedRanges(checkpoint, [{ from: at(20), to: at(30) }, { from: at(30), to: at(40) }])).to.throw(RangeError);
    expect(() => encodeAckedRanges(checkpoint, [{ from: at(20), to: at(19) }])).to.throw(RangeError);
    expect(() => encodeAckedRanges(checkpoint, [{ from: at(9), to: at(19) }])).to.throw(RangeError);
  });

  it('the cap keeps the lowest ranges, as many as fit, in at most ACKED_RANGES_MAX_BYTES bytes of ASCII', () => {
    fc.assert(fc.property(checkpointArb, rangesArb, fc.integer({ min: 20, max: 600 }), (checkpoint, ranges, maxBytes) => {
      const encoded = encodeAckedRanges(checkpoint, ranges, maxBytes);
      const kept = capAckedRanges(checkpoint, ranges, maxBytes);
      expect(kept).to.deep.equal(ranges.slice(0, encoded?.kept ?? 0));
      if (encoded === undefined) return;
      expect(Buffer.byteLength(encoded.text, 'utf8')).to.equal(encoded.text.length).and.to.be.at.most(maxBytes);
      expect(decodeAckedRanges(encoded.text, checkpoint)).to.deep.equal(kept);
      // One more would not have fit.
      if (encoded.kept < ranges.length) {
        expect(encodeAckedRanges(checkpoint, ranges.slice(0, encoded.kept + 1), Number.POSITIVE_INFINITY)?.text.length).to.be.above(maxBytes);
      }
    }));
  });

  it('with the default cap: hundreds of ranges of real 56-digit sequence numbers, the text never above 8192 bytes', () => {
    // Worst case for the size: every range two records apart and as wide as a real shard's neighbours allow.
    const ranges = Array.from({ length: 2000 }, (_, i) => ({ from: at(STEP * BigInt(4 * i + 1), 999_999), to: at(STEP * BigInt(4 * i + 3), 999_999) }));
    const checkpoint = stored(at(0, 999_999));
    const encoded = encodeAckedRanges(checkpoint, ranges);
    expect(ACKED_RANGES_MAX_BYTES).to.equal(8192);
    expect(encoded?.text.length).to.be.at.most(8192);
    expect(encoded?.kept).to.be.above(150);
  });
});
