import { expect } from 'chai';
import fc from 'fast-check';
import { ACKED_RANGES_MAX_BYTES, encodeAckedRanges } from '../../../src/checkpoint/acked-ranges.js';
import { type CommitDecision, CheckpointState, type TrackedRecord } from '../../../src/checkpoint/checkpoint-state.js';
import type { StoredCheckpoint } from '../../../src/ports/lease-store.js';
import type { Position } from '../../../src/ports/position.js';

// Real Kinesis sequence numbers are 56 digits: far beyond 2^53, so only BigInt orders them.
const BASE = 49590338271490256608559692538361571095921575989136588898n;
const seq = (offset: number | bigint): string => (BASE + BigInt(offset)).toString();
const at = (offset: number, sub?: number): Position => (sub === undefined ? { sequenceNumber: seq(offset) } : { sequenceNumber: seq(offset), subSequenceNumber: sub });
const stored = (position: Position): StoredCheckpoint => ({ type: 'position', position });

/** Maximal runs of `true` from index `start` on, as [first, last] index pairs. */
function runsOf(acked: readonly boolean[], start: number): [number, number][] {
  const runs: [number, number][] = [];
  for (let i = start; i < acked.length; i += 1) {
    if (!acked[i]) continue;
    const first = i;
    while (acked[i + 1] === true) i += 1;
    runs.push([first, i]);
  }
  return runs;
}

describe('CheckpointState', () => {
  describe('contiguous-ack watermark', () => {
    it('holds the position back behind a gap and jumps once the gap is acked', () => {
      const state = new CheckpointState(undefined);
      const [a, b, c] = [state.track(at(1)), state.track(at(2)), state.track(at(3))] as [TrackedRecord, TrackedRecord, TrackedRecord];
      expect(state.ack(b)).to.equal(true);
      expect(state.position).to.equal(undefined);
      expect(state.dirty, 'the acked range beyond the gap is something to write').to.equal(true);
      expect(state.decide().write.acked).to.deep.equal([{ from: at(2), to: at(2) }]);
      expect(state.ack(a)).to.equal(true);
      expect(state.position).to.deep.equal(stored(at(2)));
      expect(state.dirty).to.equal(true);
      expect(state.inFlight).to.equal(1);
      expect(state.ack(c)).to.equal(true);
      expect(state.position).to.deep.equal(stored(at(3)));
      expect([state.inFlight, state.pending]).to.deep.equal([0, 0]);
    });

    it('acks are idempotent: a second ack changes nothing and says so', () => {
      const state = new CheckpointState(undefined);
      const a = state.track(at(1));
      state.track(at(2));
      expect(state.ack(a)).to.equal(true);
      const { version } = state.decide();
      expect(state.ack(a)).to.equal(false);
      expect(state.decide().version).to.equal(version);
      expect(state.inFlight).to.equal(1);
    });

    it('ignores tickets it did not hand out', () => {
      const state = new CheckpointState(undefined);
      const ticket = state.track(at(1));
      for (const other of [ticket + 1, ticket - 1, ticket + 0.5, Number.NaN]) expect(state.ack(other), String(other)).to.equal(false);
      expect(state.position).to.equal(undefined);
      expect(state.inFlight).to.equal(1);
    });

    it('orders sequence numbers as BigInt beyond 2^53 (they differ only in the last digits)', () => {
      const state = new CheckpointState(stored({ sequenceNumber: '9007199254740993000' }));
      const record = state.track({ sequenceNumber: '9007199254740993001' });
      expect(() => state.track({ sequenceNumber: '9007199254740993000' })).to.throw(RangeError);
      state.ack(record);
      expect(state.position).to.deep.equal(stored({ sequenceNumber: '9007199254740993001' }));
    });

    it('KPL: sub-records advance one by one; the plain record of the same sequence number sorts after them', () => {
      const state = new CheckpointState(undefined);
      const subs = [0, 1, 2].map((i) => state.track(at(5, i)));
      const whole = state.track(at(5));
      expect(() => state.track(at(5, 3)), 'a sub-record after its whole aggregate').to.throw(RangeError);
      state.ack(subs[1] as TrackedRecord);
      state.ack(subs[0] as TrackedRecord);
      expect(state.position).to.deep.equal(stored(at(5, 1)));
      state.ack(whole);
      expect(state.position).to.deep.equal(stored(at(5, 1)));
      state.ack(subs[2] as TrackedRecord);
      expect(state.position).to.deep.equal(stored(at(5)));
    });

    it('refuses records out of order, at or before the checkpoint, malformed, or after finish', () => {
      const state = new CheckpointState(stored(at(10, 4)));
      expect(() => state.track(at(10, 4)), 'the checkpoint itself').to.throw(RangeError, /checkpoint/);
      expect(() => state.track(at(9)), 'before the checkpoint').to.throw(RangeError);
      state.track(at(10, 5));
      expect(() => state.track(at(10, 5)), 'twice').to.throw(RangeError, /previous record/);
      expect(() => state.track({ sequenceNumber: '12ab' })).to.throw(RangeError, /not a sequence number/);
      expect(() => state.track({ sequenceNumber: seq(11), subSequenceNumber: -1 })).to.throw(RangeError, /sub-sequence/);
      state.finish(at(10, 5));
      expect(() => state.track(at(12))).to.throw(RangeError, /finish/);
    });

    it('a LATEST start kept as a timestamp is what the first write stores, and a release with nothing acked (R2)', () => {
      const start: StoredCheckpoint = { type: 'AT_TIMESTAMP', timestamp: new Date(1_000_000) };
      const state = new CheckpointState({ type: 'LATEST' }, { start });
      expect(state.startStored).to.equal(false);
      const first = state.decide();
      expect(first).to.deep.include({ changed: true, write: { checkpoint: start, finished: false } });
      state.committed(first);
      expect([state.startStored, state.dirty]).to.deep.equal([true, false]);
      state.track(at(1));
      expect(state.decide().write.checkpoint, 'no arrival time given: the start stays').to.deep.equal(start);
    });

    it('the first record of a timestamp start narrows the start to its arrival time (the stream\'s clock), later records do not', () => {
      const state = new CheckpointState(undefined, { start: { type: 'AT_TIMESTAMP', timestamp: new Date(9_000_000) } });
      state.committed(state.decide());
      // Earlier than the kept start: the client's clock was ahead; the stream's clock wins.
      const first = state.track(at(1), new Date(8_000_000));
      expect(state.position).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(8_000_000) });
      expect(state.dirty).to.equal(true);
      state.track(at(2), new Date(8_500_000));
      expect(state.position).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(8_000_000) });
      state.ack(first);
      expect(state.position).to.deep.equal(stored(at(1)));
    });

    it('the first record about to be delivered narrows a kept start, floor just below it, and must be stored before it is emitted', () => {
      const state = new CheckpointState(undefined, { start: { type: 'AT_TIMESTAMP', timestamp: new Date(9_000_000) } });
      state.committed(state.decide());
      expect(state.startStored).to.equal(true);
      expect(state.narrowStart(at(7), new Date(8_000_000))).to.equal(true);
      expect(state.position).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(8_000_000), after: at(6) });
      expect(state.startStored, 'the record waits for this write').to.equal(false);
      const write = state.decide();
      state.committed(write);
      expect([state.startStored, state.narrowStart(at(7), new Date(8_000_000))]).to.deep.equal([true, false]);
      state.track(at(7), new Date(8_000_000));
      expect(state.narrowStart(at(8), new Date(8_100_000)), 'only before the first record').to.equal(false);
      expect(new CheckpointState(stored(at(3))).narrowStart(at(4), new Date(1)), 'never over a position').to.equal(false);
    });

    it('R12: the stream\'s clock at the first LATEST iterator raises a kept start (keeping its floor), never lowers it, only before the first record, and must be stored before a record is emitted', () => {
      const after = at(2);
      const state = new CheckpointState(undefined, { start: { type: 'AT_TIMESTAMP', timestamp: new Date(7_700_000), after } });
      state.committed(state.decide());
      expect(state.raiseStart(new Date(7_000_000)), 'an earlier time').to.equal(false);
      expect(state.raiseStart(new Date(8_000_000))).to.equal(true);
      expect(state.position).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(8_000_000), after });
      expect(state.startStored, 'a record waits for this write').to.equal(false);
      state.committed(state.decide());
      expect(state.startStored).to.equal(true);
      state.track(at(3), new Date(8_100_000));
      expect(state.raiseStart(new Date(9_000_000)), 'after the first record').to.equal(false);
      expect(new CheckpointState(stored(at(3))).raiseStart(new Date(1)), 'never over a position').to.equal(false);
    });

    it('a start is not applied over a stored position, nor made dirty when it is already stored', () => {
      const timestamp = new Date(5);
      const positioned = new CheckpointState(stored(at(3)), { start: { type: 'AT_TIMESTAMP', timestamp } });
      expect([positioned.position, positioned.dirty, positioned.startStored]).to.deep.equal([stored(at(3)), false, true]);
      const kept = new CheckpointState({ type: 'AT_TIMESTAMP', timestamp: new Date(5) }, { start: { type: 'AT_TIMESTAMP', timestamp } });
      expect([kept.dirty, kept.startStored]).to.deep.equal([false, true]);
      positioned.track(at(4), new Date(1));
      expect(positioned.position, 'arrival times never replace a position').to.deep.equal(stored(at(3)));
    });

    it('holds 10,000 records in flight and advances once when the first of them is acked last', () => {
      const state = new CheckpointState(undefined);
      const records = Array.from({ length: 10_000 }, (_, i) => state.track(at(i)));
      for (let i = records.length - 1; i >= 1; i -= 1) state.ack(records[i] as TrackedRecord);
      expect(state.position).to.equal(undefined);
      expect([state.inFlight, state.pending]).to.deep.equal([1, 10_000]);
      state.ack(records[0] as TrackedRecord);
      expect(state.position).to.deep.equal(stored(at(9_999)));
      expect([state.inFlight, state.pending]).to.deep.equal([0, 0]);
    });
  });

  describe('dirty and commit decisions', () => {
    it('a write clears dirty only when nothing moved since its snapshot', () => {
      const state = new CheckpointState(undefined);
      const [a, b] = [state.track(at(1)), state.track(at(2))];
      state.ack(a);
      const first = state.decide();
      expect(first).to.deep.include({ changed: true, write: { checkpoint: stored(at(1)), finished: false } });
      state.ack(b); // while the write of `first` is in flight
      expect(first.write.checkpoint, 'the snapshot does not follow later acks').to.deep.equal(stored(at(1)));
      state.committed(first);
      expect(state.dirty).to.equal(true);
      const second = state.decide();
      expect(second.write.checkpoint).to.deep.equal(stored(at(2)));
      state.committed(second);
      expect(state.dirty).to.equal(false);
      expect(state.decide().changed).to.equal(false);
      state.committed(first); // a late, older success must not make it dirty again or clean anything newer
      expect(state.dirty).to.equal(false);
    });
  });

  describe('the Finished rule (Go): written only when the position is the final record, or nothing was read', () => {
    it('waits for every record up to the final one to be acked', () => {
      const state = new CheckpointState(stored(at(0)));
      const [a, b] = [state.track(at(1)), state.track(at(2))];
      state.finish(at(2));
      expect(state.finished).to.equal(true);
      state.ack(b);
      expect(state.finishable).to.equal(false);
      expect(state.decide().write.finished).to.equal(false);
      state.ack(a);
      expect(state.finishable).to.equal(true);
      const decision = state.decide();
      expect(decision).to.deep.include({ changed: true, write: { checkpoint: stored(at(2)), finished: true } });
      state.committed(decision);
      expect(state.finishedWritten).to.equal(true);
      expect(state.decide(), 'Finished is written once').to.deep.include({ changed: false, write: { checkpoint: stored(at(2)), finished: false } });
    });

    it('nothing read since the capture: Finished at once, even with no checkpoint', () => {
      const state = new CheckpointState(undefined);
      state.finish(undefined);
      expect(state.decide()).to.deep.include({ changed: true, write: { checkpoint: undefined, finished: true } });
    });

    it('a final record not yet under the position keeps Finished back (Go: position must equal the final sequence number)', () => {
      const state = new CheckpointState(stored(at(3)));
      const last = state.track(at(4));
      state.finish(at(4));
      expect(state.finishable).to.equal(false);
      state.ack(last);
      expect(state.finishable).to.equal(true);
    });
  });

  describe('properties', () => {
    it('accepts and refuses records exactly as BigInt order and the sequence-number rule say, whatever the shape of the next one', () => {
      // Each step derives the next candidate from the last accepted one: its successor (the usual
      // case, checked on the fast path), a jump far up or down, the same number (another
      // sub-record), a digit replaced by a non-digit anywhere, a leading zero, a shorter or longer number.
      const step = fc.tuple(
        fc.constantFrom('next', 'jump', 'back', 'same', 'corrupt', 'zero', 'shorter', 'longer', 'random'),
        fc.bigInt({ min: 1n, max: 10n ** 30n }), fc.nat({ max: 60 }), fc.constantFrom('a', ':', '/', ' ', '٣', '-'), fc.option(fc.nat({ max: 3 }), { nil: undefined }),
      );
      fc.assert(fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const state = new CheckpointState(stored(at(0)));
        let last = BASE;
        let lastSub = Number.POSITIVE_INFINITY;
        for (const [kind, amount, index, bad, sub] of steps) {
          const text = last.toString();
          const candidate = kind === 'next' ? (last + amount % 1000n + 1n).toString()
            : kind === 'jump' ? (last + amount * 10n ** 20n).toString()
            : kind === 'back' ? (last - amount % 100n).toString()
            : kind === 'same' ? text
            : kind === 'corrupt' ? `${text.slice(0, index % text.length)}${bad}${text.slice((index % text.length) + 1)}`
            : kind === 'zero' ? `0${(last + 1n).toString()}`
            : kind === 'shorter' ? (amount % 1000n).toString()
            : kind === 'longer' ? `${text}${index}`
            : `${amount}${bad}`;
          const valid = /^\d{1,128}$/.test(candidate);
          const value = valid ? BigInt(candidate) : undefined;
          const subNumber = sub ?? Number.POSITIVE_INFINITY;
          const after = value !== undefined && (value > last || (value === last && subNumber > lastSub));
          const position = sub === undefined ? { sequenceNumber: candidate } : { sequenceNumber: candidate, subSequenceNumber: sub };
          if (after) {
            expect(() => state.track(position), candidate).to.not.throw();
            last = value;
            lastSub = subNumber;
          } else {
            expect(() => state.track(position), candidate).to.throw(RangeError);
          }
        }
      }), { numRuns: 300 });
    });

    // Aggregates of 0 (plain record) or 1..4 sub-records, at increasing sequence numbers.
    const positionsArb = fc.array(fc.tuple(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 0, max: 4 })), { maxLength: 40 })
      .map((groups) => {
        let offset = 0n;
        const positions: Position[] = [];
        for (const [gap, subs] of groups) {
          offset += BigInt(gap);
          if (subs === 0) positions.push({ sequenceNumber: seq(offset) });
          else for (let i = 0; i < subs; i += 1) positions.push({ sequenceNumber: seq(offset), subSequenceNumber: i });
        }
        return positions;
      });

    it('after any acks in any order, the position is the last record of the longest fully acked prefix', () => {
      const arb = positionsArb.chain((positions) => fc.tuple(
        fc.constant(positions),
        fc.shuffledSubarray(positions.map((_, i) => i)),
      ));
      fc.assert(fc.property(arb, ([positions, order]) => {
        const state = new CheckpointState(undefined);
        const records = positions.map((p) => state.track(p));
        const acked = new Set<number>();
        for (const index of order) {
          state.ack(records[index] as TrackedRecord);
          acked.add(index);
          let prefix = 0;
          while (acked.has(prefix)) prefix += 1;
          const expected = prefix === 0 ? undefined : stored(positions[prefix - 1] as Position);
          expect(state.position).to.deep.equal(expected);
          expect(state.inFlight).to.equal(positions.length - acked.size);
          expect(state.pending).to.equal(positions.length - prefix);
        }
      }));
    });

    it('tracking and acking interleaved: the same watermark, and dirty exactly when it or the acked ranges changed since the last commit', () => {
      const ops = fc.array(fc.oneof(
        fc.constant({ kind: 'emit' as const }),
        fc.record({ kind: fc.constant('ack' as const), pick: fc.nat() }),
        fc.constant({ kind: 'commit' as const }),
      ), { maxLength: 80 });
      fc.assert(fc.property(ops, (script) => {
        const state = new CheckpointState(stored(at(0)));
        const records: TrackedRecord[] = [];
        const acked: boolean[] = [];
        let committed: string = JSON.stringify({ checkpoint: stored(at(0)) });
        for (const op of script) {
          if (op.kind === 'emit') {
            records.push(state.track(at(records.length + 1)));
            acked.push(false);
          } else if (op.kind === 'ack' && records.length > 0) {
            const index = op.pick % records.length;
            expect(state.ack(records[index] as TrackedRecord)).to.equal(!acked[index]);
            acked[index] = true;
          } else if (op.kind === 'commit') {
            const decision = state.decide();
            state.committed(decision);
            committed = JSON.stringify({ checkpoint: decision.write.checkpoint, acked: decision.write.acked });
          }
          const prefix = acked.indexOf(false) === -1 ? acked.length : acked.indexOf(false);
          const expected = stored(at(prefix));
          expect(state.position).to.deep.equal(expected);
          const ranges = runsOf(acked, prefix).map(([from, to]) => ({ from: at(from + 1), to: at(to + 1) }));
          expect(state.dirty).to.equal(committed !== JSON.stringify({ checkpoint: expected, acked: ranges.length === 0 ? undefined : ranges }));
        }
      }));
    });
    it('finish, finishable and Finished: written exactly when the shard is closed and every record up to the last is acked, once, carrying the last record', () => {
      // Snapshots (decide) may be taken while older ones are still being written, and their writes
      // succeed in any order, as a store with retries and a release racing a commit can make them.
      const ops = fc.array(fc.oneof(
        fc.constant({ kind: 'emit' as const }),
        fc.record({ kind: fc.constant('ack' as const), pick: fc.nat() }),
        fc.constant({ kind: 'decide' as const }),
        fc.record({ kind: fc.constant('written' as const), pick: fc.nat() }),
        fc.constant({ kind: 'finish' as const }),
      ), { maxLength: 60 });
      const initialArb = fc.constantFrom<StoredCheckpoint | undefined>(undefined, { type: 'LATEST' }, stored(at(0)));
      fc.assert(fc.property(initialArb, ops, (initial, script) => {
        const state = new CheckpointState(initial);
        const records: TrackedRecord[] = [];
        const acked: boolean[] = [];
        const inFlight: CommitDecision[] = [];
        let finishedAt: number | undefined;
        let finishedWritten = false;
        for (const op of script) {
          if (op.kind === 'emit') {
            if (finishedAt !== undefined) {
              expect(() => state.track(at(records.length + 1)), 'no record after finish()').to.throw(RangeError);
              continue;
            }
            records.push(state.track(at(records.length + 1)));
            acked.push(false);
          } else if (op.kind === 'ack' && records.length > 0) {
            const index = op.pick % records.length;
            state.ack(records[index] as TrackedRecord);
            acked[index] = true;
          } else if (op.kind === 'decide') {
            inFlight.push(state.decide());
          } else if (op.kind === 'written' && inFlight.length > 0) {
            const [decision] = inFlight.splice(op.pick % inFlight.length, 1) as [CommitDecision];
            state.committed(decision);
            if (decision.write.finished) finishedWritten = true;
          } else if (op.kind === 'finish' && finishedAt === undefined) {
            finishedAt = records.length;
            state.finish(records.length === 0 ? undefined : at(records.length));
          }
          const allAcked = acked.every(Boolean);
          const finishable = finishedAt !== undefined && allAcked;
          expect(state.finished, 'finished').to.equal(finishedAt !== undefined);
          expect(state.finishable, 'finishable').to.equal(finishable);
          expect(state.finishedWritten, 'finishedWritten').to.equal(finishedWritten);
          const decision = state.decide();
          expect(decision.write.finished, 'Finished is due').to.equal(finishable && !finishedWritten);
          expect(decision.changed, 'changed').to.equal(state.dirty || decision.write.finished);
          if (decision.write.finished) {
            // The Go rule: Finished goes with the shard's last record as the position (or nothing read at all).
            expect(decision.write.checkpoint).to.deep.equal(finishedAt === 0 ? initial : stored(at(finishedAt ?? 0)));
          }
        }
      }));
    });

    it('a row already Finished at capture is never written Finished again', () => {
      fc.assert(fc.property(fc.integer({ min: 0, max: 5 }), fc.boolean(), (count, ackAll) => {
        const state = new CheckpointState(stored(at(0)), { finished: true });
        const records = Array.from({ length: count }, (_, i) => state.track(at(i + 1)));
        if (ackAll) for (const record of records) state.ack(record);
        state.finish(count === 0 ? undefined : at(count));
        expect(state.finishedWritten).to.equal(true);
        expect(state.decide().write.finished).to.equal(false);
        expect(state.decide().changed).to.equal(state.dirty);
      }));
    });
  });
  describe('acked ranges beyond the watermark (§7.3)', () => {
    // Aggregates of 0 (plain record) or 1..4 sub-records, at increasing sequence numbers.
    const positionsArb = fc.array(fc.tuple(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 0, max: 4 })), { minLength: 1, maxLength: 40 })
      .map((groups) => {
        let offset = 0n;
        const positions: Position[] = [];
        for (const [gap, subs] of groups) {
          offset += BigInt(gap);
          if (subs === 0) positions.push({ sequenceNumber: seq(offset) });
          else for (let i = 0; i < subs; i += 1) positions.push({ sequenceNumber: seq(offset), subSequenceNumber: i });
        }
        return positions;
      });
    const ackedArb = positionsArb.chain((positions) => fc.tuple(fc.constant(positions), fc.shuffledSubarray(positions.map((_, i) => i))));

    it('the ranges written are exactly the records acked beyond the watermark, merged into maximal runs, after every ack', () => {
      fc.assert(fc.property(ackedArb, ([positions, order]) => {
        const state = new CheckpointState(undefined);
        const records = positions.map((p) => state.track(p));
        const acked = positions.map(() => false);
        for (const index of order) {
          state.ack(records[index] as TrackedRecord);
          acked[index] = true;
          const prefix = acked.indexOf(false) === -1 ? acked.length : acked.indexOf(false);
          const expected = runsOf(acked, prefix).map(([from, to]) => ({ from: positions[from], to: positions[to] }));
          expect(state.decide().write.acked ?? []).to.deep.equal(expected);
        }
      }));
    });

    it('a new owner given the ranges skips exactly the records acked beyond the watermark, KPL sub-records included, through any number of hand-offs', () => {
      const handOffs = fc.array(fc.tuple(fc.nat(), fc.array(fc.boolean(), { maxLength: 200 })), { minLength: 1, maxLength: 4 });
      fc.assert(fc.property(positionsArb, handOffs, (positions, owners) => {
        const acked = positions.map(() => false);
        let checkpoint: StoredCheckpoint | undefined;
        let ranges: CommitDecision['write']['acked'];
        for (const [read, acks] of owners) {
          const state = new CheckpointState(checkpoint, { acked: ranges });
          const row = checkpoint?.type === 'position' ? checkpoint.position : undefined;
          const start = row === undefined ? 0 : positions.findIndex((p) => p.sequenceNumber === row.sequenceNumber && p.subSequenceNumber === row.subSequenceNumber) + 1;
          // This owner reads some records from where the row says, and acks some of those it emits.
          const end = Math.min(positions.length, start + (read % (positions.length + 1)));
          for (let i = start; i < end; i += 1) {
            const position = positions[i] as Position;
            const skipped = state.skip(position);
            expect(skipped, `record ${i}: skipped exactly when acked before`).to.equal(acked[i]);
            if (skipped) continue;
            const record = state.track(position);
            if (acks[i - start] === true) {
              state.ack(record);
              acked[i] = true;
            }
          }
          const { write } = state.decide();
          checkpoint = write.checkpoint;
          ranges = write.acked;
          // The watermark goes as far as this owner read and everything up to it is acked.
          const gap = acked.slice(0, end).indexOf(false);
          const prefix = gap === -1 ? end : gap;
          expect(checkpoint).to.deep.equal(prefix === 0 ? undefined : stored(positions[prefix - 1] as Position));
        }
      }));
    });

    it('a skipped record at the watermark moves it, and Finished comes once the last record is reached', () => {
      const state = new CheckpointState(stored(at(0)), { acked: [{ from: at(2), to: at(4) }] });
      const first = state.track(at(1));
      expect(state.skip(at(2))).to.equal(true);
      state.ack(first);
      expect(state.position).to.deep.equal(stored(at(2)));
      expect(state.decide().write.acked, 'the rest of the inherited range, from the watermark').to.deep.equal([{ from: at(2), to: at(4) }]);
      expect([state.skip(at(3)), state.skip(at(4)), state.skip(at(5))]).to.deep.equal([true, true, false]);
      expect([state.position, state.pending, state.inFlight]).to.deep.equal([stored(at(4)), 0, 0]);
      state.finish(at(4));
      expect(state.decide().write).to.deep.equal({ checkpoint: stored(at(4)), finished: true });
    });

    it('a record inside an inherited range that is tracked (not skipped) ends that range there', () => {
      const state = new CheckpointState(stored(at(0)), { acked: [{ from: at(2), to: at(6) }, { from: at(8), to: at(9) }] });
      state.track(at(1));
      expect(state.skip(at(2))).to.equal(true);
      state.track(at(3));
      expect(state.skip(at(4)), 'the range was dropped at the tracked record').to.equal(false);
      expect(state.decide().write.acked).to.deep.equal([{ from: at(2), to: at(2) }, { from: at(8), to: at(9) }]);
    });

    it('inherited ranges under the checkpoint are dropped, one reaching back under it starts at it, ranges out of order are all ignored', () => {
      const kept = new CheckpointState(stored(at(5)), { acked: [{ from: at(1), to: at(2) }, { from: at(3), to: at(7) }, { from: at(9), to: at(9) }] });
      expect(kept.decide().write.acked).to.deep.equal([{ from: at(5), to: at(7) }, { from: at(9), to: at(9) }]);
      const disorder = new CheckpointState(stored(at(5)), { acked: [{ from: at(9), to: at(9) }, { from: at(6), to: at(7) }] });
      expect(disorder.decide().write.acked).to.equal(undefined);
      expect(disorder.skip(at(6))).to.equal(false);
    });

    it('the cap keeps the lowest ranges: as many as fit in ACKED_RANGES_MAX_BYTES, the others are left to be delivered again', () => {
      const state = new CheckpointState(stored(at(0)));
      // 4,000 gaps: every other record acked.
      const records = Array.from({ length: 8_000 }, (_, i) => state.track({ sequenceNumber: seq(BigInt(i + 1) * 2564131663402632534000926720n) }));
      records.forEach((record, i) => { if (i % 2 === 1) state.ack(record); });
      const all = state.ackedRanges();
      expect(all).to.have.length(4_000);
      const { acked = [] } = state.decide().write;
      expect(acked.length).to.be.above(100).and.below(4_000);
      expect(acked).to.deep.equal(all.slice(0, acked.length));
      expect(encodeAckedRanges(stored(at(0)), acked)?.text.length).to.be.at.most(ACKED_RANGES_MAX_BYTES);
      expect(encodeAckedRanges(stored(at(0)), all.slice(0, acked.length + 1), Number.POSITIVE_INFINITY)?.text.length).to.be.above(ACKED_RANGES_MAX_BYTES);
    });
  });
});
