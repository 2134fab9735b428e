import { expect } from 'chai';
import fc from 'fast-check';
import { ACKED_RANGES_HARD_MAX_BYTES, ACKED_RANGES_MAX_BYTES, capAckedRanges, encodeAckedRanges } from '../../../src/checkpoint/acked-ranges.js';
import { CheckpointState, type TrackedRecord } from '../../../src/checkpoint/checkpoint-state.js';
import { comparePositions } from '../../../src/checkpoint/sequence-number.js';
import type { AckedRange, CheckpointWrite, StoredCheckpoint } from '../../../src/ports/lease-store.js';
import type { Position } from '../../../src/ports/position.js';

const BASE = 49590338271490256608559692538361571095921575989136588898n;
const seq = (offset: number | bigint): string => (BASE + BigInt(offset)).toString();
const at = (offset: number): Position => ({ sequenceNumber: seq(offset) });
const stored = (position: Position): StoredCheckpoint => ({ type: 'position', position });

/** The write counts `position` as consumed: at or under its checkpoint, or inside one of its ranges. */
function covers(write: CheckpointWrite, position: Position): boolean {
  const checkpoint = write.checkpoint;
  if (checkpoint?.type === 'position' && comparePositions(position, checkpoint.position) <= 0) return true;
  return (write.acked ?? []).some((r) => comparePositions(r.from, position) <= 0 && comparePositions(position, r.to) <= 0);
}

describe('CheckpointState with records whose writes wait (§8.1)', () => {
  it('a held record is a gap for every write until its transaction commits; the transaction\'s write covers it', () => {
    const state = new CheckpointState(stored(at(0)));
    const [a, b, c] = [1, 2, 3].map((n) => state.track(at(n))) as [TrackedRecord, TrackedRecord, TrackedRecord];
    state.ack(a);
    expect(state.hold(b)).to.equal(true);
    state.ack(c);
    expect(state.ack(b), 'a plain ack of a held record does nothing').to.equal(false);
    expect(state.hold(b), 'nor does holding it again').to.equal(false);
    expect(state.hold(a), 'an acked record cannot be held').to.equal(false);
    const plain = state.decide();
    expect(plain.write).to.deep.equal({ checkpoint: stored(at(1)), finished: false, acked: [{ from: at(3), to: at(3) }] });
    expect(state.inFlight, 'held: still in flight (a drain waits for its commit)').to.equal(1);
    const transaction = state.decide([b]);
    expect(transaction.write).to.deep.equal({ checkpoint: stored(at(3)), finished: false });
    expect(transaction.covers).to.equal(true);
    expect(state.position, 'a preview moves nothing').to.deep.equal(stored(at(1)));
    state.commitHeld(transaction, [b]);
    expect(state.position).to.deep.equal(stored(at(3)));
    expect(state.inFlight).to.equal(0);
    expect(state.dirty, 'nothing changed since the decision: clean').to.equal(false);
  });

  it('an ack during the transaction keeps the state dirty; unhold makes a failed record unacked again', () => {
    const state = new CheckpointState(stored(at(0)));
    const [a, b, c] = [1, 2, 3].map((n) => state.track(at(n))) as [TrackedRecord, TrackedRecord, TrackedRecord];
    state.hold(a);
    state.hold(c);
    const transaction = state.decide([a]);
    state.ack(b);
    state.commitHeld(transaction, [a]);
    expect(state.dirty).to.equal(true);
    expect(state.decide().write.checkpoint).to.deep.equal(stored(at(2)));
    state.unhold(c);
    expect(state.ack(c)).to.equal(true);
    expect(state.position).to.deep.equal(stored(at(3)));
  });

  it('a transaction decided before inherited records were skipped leaves the state dirty when its commit moves the watermark over them', () => {
    // Issue 30 item 1: a new owner acks the gap record with writes inside its delivery, before the
    // rest of the page is skipped as already acked. The transaction writes #2 + [#3..#7]; when it
    // commits the watermark moves to #7, and that is not what the row holds.
    const state = new CheckpointState(stored(at(1)), { acked: [{ from: at(3), to: at(7) }] });
    const gap = state.track(at(2));
    state.hold(gap);
    const transaction = state.decide([gap]);
    expect(transaction.write).to.deep.equal({ checkpoint: stored(at(2)), finished: false, acked: [{ from: at(3), to: at(7) }] });
    for (let n = 3; n <= 7; n += 1) expect(state.skip(at(n))).to.equal(true);
    state.commitHeld(transaction, [gap]);
    expect(state.position).to.deep.equal(stored(at(7)));
    expect(state.dirty, 'the row holds #2 + [#3..#7], the state #7: a commit is owed').to.equal(true);
    expect(state.decide()).to.deep.include({ write: { checkpoint: stored(at(7)), finished: false }, changed: true });
  });

  it('ranges holding committed writes (or a previous owner\'s) are never dropped for the cap; the others still are', () => {
    const state = new CheckpointState(stored(at(0)));
    const records = Array.from({ length: 8_000 }, (_, i) => state.track({ sequenceNumber: seq(BigInt(i + 1) * 2564131663402632534000926720n) }));
    const last = records.at(-1) as TrackedRecord;
    state.hold(last);
    const transaction = state.decide([last]);
    expect(transaction.covers).to.equal(true);
    state.commitHeld(transaction, [last]);
    // Thousands of ranges below it: the lowest fit the cap, and the one with the writes is kept too.
    records.slice(0, -1).forEach((record, i) => { if (i % 2 === 1) state.ack(record); });
    const { write } = state.decide();
    const lastPosition = { sequenceNumber: seq(8_000n * 2564131663402632534000926720n) };
    expect(covers(write, lastPosition)).to.equal(true);
    expect(write.acked?.length).to.be.above(100).and.below(4_000);
    expect(encodeAckedRanges(write.checkpoint, write.acked ?? [])?.text.length).to.be.at.most(ACKED_RANGES_MAX_BYTES);
  });

  it('capAckedRanges without kept ranges is the lowest that fit; with them, kept ones first and the lowest others after', () => {
    const ranges: AckedRange[] = Array.from({ length: 400 }, (_, i) => ({ from: at(i * 1_000_000_000 + 1), to: at(i * 1_000_000_000 + 2) }));
    const plain = capAckedRanges(stored(at(0)), ranges, 512);
    expect(plain).to.deep.equal(ranges.slice(0, plain.length));
    const kept = ranges.map((_, i) => i === 399 || i === 200);
    const chosen = capAckedRanges(stored(at(0)), ranges, 512, kept);
    expect(chosen).to.include(ranges[399]).and.include(ranges[200]);
    expect(encodeAckedRanges(stored(at(0)), chosen, Number.POSITIVE_INFINITY)?.text.length).to.be.at.most(512);
    expect(chosen.filter((r) => r !== ranges[399] && r !== ranges[200])).to.deep.equal(ranges.slice(0, chosen.length - 2));
  });

  it('past the cap, a held record beyond the watermark does not fit (covers: false) until the watermark reaches it', () => {
    const state = new CheckpointState(stored(at(0)));
    const records = Array.from({ length: 2_000 }, (_, i) => state.track({ sequenceNumber: seq(BigInt(i + 1) * 2564131663402632534000926720n) }));
    // Every other record committed with writes: kept ranges fill the cap.
    let committed = 0;
    for (let i = 1; i < records.length; i += 2) {
      const record = records[i] as TrackedRecord;
      state.hold(record);
      const decision = state.decide([record]);
      if (decision.covers !== true) break;
      state.commitHeld(decision, [record]);
      committed += 1;
    }
    expect(committed).to.be.above(50).and.below(1_000);
    const next = records[2 * committed + 1] as TrackedRecord;
    expect(state.decide([next]).covers).to.equal(false);
    for (let i = 0; i <= 2 * committed; i += 2) state.ack(records[i] as TrackedRecord);
    expect(state.decide([next]).covers, 'at the watermark: no range needed').to.equal(true);
  });

  it('kept ranges that plain acks grow past the hard cap (KPL sub-records, small deltas) are never cut: the plain write is held back', () => {
    // Review-4 §3.3: `1.z` (an aggregate's sub-record 35, committed with writes) grows to `1.z-0.10`
    // when its sub-record 36 is acked plain: 2.25 times the bytes. The stores cut the ranges at the
    // hard cap (16 KiB) without a word, and a cut kept range re-delivers records whose writes applied.
    const state = new CheckpointState(stored(at(0)));
    const sub = (j: number, subSequenceNumber: number): Position => ({ sequenceNumber: seq(j), subSequenceNumber });
    const tickets = Array.from({ length: 2_400 }, (_, i) => [34, 35, 36].map((n) => state.track(sub(i + 1, n))) as [TrackedRecord, TrackedRecord, TrackedRecord]);
    // Committed in transactions of 100, then 10, then 1, while they fit (one by one is quadratic).
    let committed = 0;
    for (const size of [100, 10, 1]) {
      for (;;) {
        const batch = tickets.slice(committed, committed + size).map(([, withWrites]) => withWrites);
        if (batch.length < size) break;
        for (const ticket of batch) state.hold(ticket);
        const decision = state.decide(batch);
        if (decision.covers !== true) {
          for (const ticket of batch) state.unhold(ticket);
          break;
        }
        state.commitHeld(decision, batch);
        committed += size;
      }
    }
    expect(committed, 'kept ranges fill the cap').to.be.above(1_500).and.below(2_400);
    for (const [, , plain] of tickets.slice(0, committed)) state.ack(plain);
    const decision = state.decide();
    const write = decision.changed ? decision.write : state.decide().write;
    const fits = encodeAckedRanges(write.checkpoint, write.acked ?? [], ACKED_RANGES_HARD_MAX_BYTES)?.kept ?? 0;
    expect(decision.changed && fits < (write.acked?.length ?? 0), `a write of ${write.acked?.length} ranges of which ${fits} fit the hard cap`).to.equal(false);
    // What it would write (held back: the last write) still covers every record committed with writes.
    for (let j = 1; j <= committed; j += 1) expect(covers(write, sub(j, 35)), `#${j}/35`).to.equal(true);
    // The watermark moving on shrinks them: the write goes.
    for (const [unacked] of tickets.slice(0, committed)) state.ack(unacked);
    expect(state.decide()).to.deep.include({ changed: true, write: { checkpoint: stored(sub(committed, 36)), finished: false } });
  });

  it('property: no write ever covers a held record, and every write after a commit covers its records', () => {
    type Op = { kind: 'ack' | 'hold' | 'commit' | 'fail' | 'plain'; index: number; count: number };
    const op = fc.record({ kind: fc.constantFrom<Op['kind']>('ack', 'hold', 'hold', 'commit', 'fail', 'plain'), index: fc.nat(60), count: fc.integer({ min: 1, max: 5 }) });
    fc.assert(fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
      const state = new CheckpointState(stored(at(0)), { acked: [{ from: at(40), to: at(45) }] });
      const tickets: TrackedRecord[] = [];
      const positions: Position[] = [];
      const held = new Set<number>();
      const applied = new Set<number>();
      const check = (write: CheckpointWrite, including: readonly number[]) => {
        for (const i of held) if (!including.includes(i)) expect(covers(write, positions[i] as Position), `held ${i} covered`).to.equal(false);
        for (const i of applied) expect(covers(write, positions[i] as Position), `committed ${i} dropped`).to.equal(true);
      };
      for (let n = 1; n <= 60; n += 1) {
        if (state.skip(at(n))) continue;
        tickets[n] = state.track(at(n));
        positions[n] = at(n);
      }
      for (const { kind, index, count } of ops) {
        const ticket = tickets[index];
        if (kind === 'plain') check(state.decide().write, []);
        else if (ticket === undefined) continue;
        else if (kind === 'ack' && !held.has(index)) state.ack(ticket);
        else if (kind === 'hold' && state.hold(ticket)) held.add(index);
        else if (kind === 'fail' && held.has(index)) {
          state.unhold(ticket);
          held.delete(index);
        } else if (kind === 'commit') {
          const batch = [...held].sort((x, y) => x - y).slice(0, count);
          if (batch.length === 0) continue;
          const decision = state.decide(batch.map((i) => tickets[i] as TrackedRecord));
          check(decision.write, batch);
          if (decision.covers !== true) continue;
          for (const i of batch) expect(covers(decision.write, positions[i] as Position)).to.equal(true);
          state.commitHeld(decision, batch.map((i) => tickets[i] as TrackedRecord));
          for (const i of batch) {
            held.delete(i);
            applied.add(i);
          }
        }
      }
      check(state.decide().write, []);
    }), { numRuns: 300 });
  });

  it('property: the state is clean only when the write it would make is the one last written', () => {
    // The general rule behind issue 30 item 1: a commit that leaves the watermark beyond what it
    // wrote (records skipped or acked meanwhile, passed when the held ones became acked) leaves it dirty.
    type Op = { kind: 'next' | 'ack' | 'hold' | 'commit' | 'fail' | 'plain'; index: number; count: number };
    // `index` picks among the records it can apply to (the oldest first), so short runs reach every state.
    const op = fc.record({ kind: fc.constantFrom<Op['kind']>('next', 'ack', 'hold', 'commit', 'fail', 'plain'), index: fc.nat(2), count: fc.integer({ min: 1, max: 4 }) });
    fc.assert(fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
      const inherited = [{ from: at(3), to: at(5) }, { from: at(8), to: at(9) }, { from: at(13), to: at(16) }];
      const state = new CheckpointState(stored(at(0)), { acked: inherited });
      let written: CheckpointWrite = { checkpoint: stored(at(0)), finished: false, acked: inherited };
      // Tracked records neither acked nor held, and held ones, oldest first (tickets).
      const open: TrackedRecord[] = [];
      const held: TrackedRecord[] = [];
      let next = 1;
      // A transaction decided and not yet committed.
      let pending: { decision: ReturnType<CheckpointState['decide']>; batch: TrackedRecord[] } | undefined;
      const take = (list: TrackedRecord[], index: number): TrackedRecord | undefined => list.splice(index % Math.max(1, list.length), 1)[0];
      for (const { kind, index, count } of ops) {
        if (kind === 'next') {
          for (let i = 0; i < count && next <= 20; i += 1, next += 1) if (!state.skip(at(next))) open.push(state.track(at(next)));
        } else if (kind === 'plain') {
          const decision = state.decide();
          state.committed(decision);
          written = decision.write;
        } else if (kind === 'commit' && pending === undefined) {
          const batch = [...held].sort((a, b) => a - b).slice(0, count);
          const decision = batch.length === 0 ? undefined : state.decide(batch);
          if (decision?.covers === true) pending = { decision, batch };
        } else if (kind === 'commit' && pending !== undefined) {
          state.commitHeld(pending.decision, pending.batch);
          for (const ticket of pending.batch) held.splice(held.indexOf(ticket), 1);
          written = pending.decision.write;
          pending = undefined;
        } else if (kind === 'ack') {
          const ticket = take(open, index);
          if (ticket !== undefined) state.ack(ticket);
        } else if (kind === 'hold') {
          const ticket = take(open, index);
          if (ticket !== undefined && state.hold(ticket)) held.push(ticket);
        } else if (kind === 'fail') {
          const ticket = held.filter((t) => !(pending?.batch.includes(t) ?? false))[index % Math.max(1, held.length)];
          if (ticket !== undefined) {
            state.unhold(ticket);
            held.splice(held.indexOf(ticket), 1);
            open.push(ticket);
            open.sort((a, b) => a - b);
          }
        }
        if (state.dirty) continue;
        // The same checkpoint (what the Go kinsumer and export-kcl read), and the same records acked
        // (ranges may be spelled differently: a skipped record joins its neighbours' range).
        const now = state.decide().write;
        expect(now.checkpoint, `clean after ${kind}: the checkpoint`).to.deep.equal(written.checkpoint);
        for (let n = 1; n <= 20; n += 1) expect(covers(now, at(n)), `clean after ${kind}: #${n}`).to.equal(covers(written, at(n)));
      }
      // A fixed seed: with the fix reverted this one finds the lagging checkpoint in 15 runs.
    }), { numRuns: 500, seed: 2 });
  });
});
