import { expect } from 'chai';
import { MAX_DELIVERY_ENTRIES, decodeDeliveries, encodeDeliveries, normalizeDeliveries } from '../../../src/checkpoint/deliveries.js';
import { DeliveryLedger } from '../../../src/checkpoint/delivery-ledger.js';
import type { DeliveredThrough, StoredCheckpoint } from '../../../src/ports/lease-store.js';
import type { Position } from '../../../src/ports/position.js';

const BASE = '49590338271490256608559692538361571095921575989136588';
const at = (n: number, sub?: number): Position => (sub === undefined ? { sequenceNumber: `${BASE}${String(n).padStart(3, '0')}` } : { sequenceNumber: `${BASE}${String(n).padStart(3, '0')}`, subSequenceNumber: sub });
const stored = (n: number): StoredCheckpoint => ({ type: 'position', position: at(n) });
const entry = (n: number, sessions = 1, sub?: number): DeliveredThrough => ({ through: at(n, sub), sessions });

describe('the Deliveries attribute (§9.3)', () => {
  it('round-trips entries, KPL sub-records and several sessions at one place, tagged with the checkpoint', () => {
    const entries = [entry(3, 2), entry(7, 1, 4), entry(12, 3)];
    const text = encodeDeliveries(stored(1), entries);
    expect(text).to.match(/^1;[0-9a-z]+;2\*2,4\.4,5\*3$/);
    expect(decodeDeliveries(text, stored(1))).to.deep.equal(entries);
    expect(encodeDeliveries(undefined, [entry(5)])).to.match(/^1;;/);
    expect(decodeDeliveries(encodeDeliveries({ type: 'TRIM_HORIZON' }, [entry(5)]), { type: 'TRIM_HORIZON' })).to.deep.equal([entry(5)]);
  });

  it('is not trusted under another checkpoint, malformed, out of order, or at or before the checkpoint: fewer deliveries, never more', () => {
    const text = encodeDeliveries(stored(1), [entry(3)]);
    expect(decodeDeliveries(text, stored(2)), 'written with another checkpoint').to.equal(undefined);
    expect(decodeDeliveries(text, { type: 'LATEST' })).to.equal(undefined);
    for (const bad of [42, '', '2;x;1', `1;${text?.split(';')[1]};`, `1;${text?.split(';')[1]};1,0`, `1;${text?.split(';')[1]};0`, `1;${text?.split(';')[1]};1*0`, `1;${text?.split(';')[1]};1;x`]) {
      expect(decodeDeliveries(bad, stored(1)), String(bad)).to.equal(undefined);
    }
  });

  it('normalizes: ordered, one entry per place (sessions added), nothing at or before the checkpoint, the furthest folded into the one before beyond the cap', () => {
    expect(normalizeDeliveries(stored(5), [entry(9), entry(6, 2), entry(9, 2), entry(5), entry(2)])).to.deep.equal([entry(6, 2), entry(9, 3)]);
    const many = Array.from({ length: MAX_DELIVERY_ENTRIES + 2 }, (_, i) => entry(10 + i));
    const capped = normalizeDeliveries(stored(1), many);
    expect(capped).to.have.length(MAX_DELIVERY_ENTRIES);
    // Records up to the last kept place count every session; those beyond it lose the folded ones (never more).
    expect(capped.at(-1)).to.deep.equal(entry(10 + MAX_DELIVERY_ENTRIES - 1, 3));
    expect(encodeDeliveries(stored(1), [])).to.equal(undefined);
  });
});

describe('the delivery ledger of a lease (§9.3)', () => {
  it('counts each record 1 plus the sessions of the entries reaching it; those counted before are paced, a prefix', () => {
    const ledger = new DeliveryLedger([entry(3, 2), entry(5, 1)], stored(1));
    expect([2, 3, 4, 5, 6, 7].map((n, i) => ledger.track(10 + i, at(n)))).to.deep.equal([4, 4, 2, 2, 1, 1]);
    expect([10, 11, 12, 13, 14, 15].map((t) => ledger.paced(t))).to.deep.equal([true, true, true, true, false, false]);
    expect([10, 12, 14].map((t) => ledger.count(t))).to.deep.equal([4, 2, 1]);
  });

  it('a paced record is recorded alone, by a write made when it is the next to settle and someone waits for it', () => {
    const ledger = new DeliveryLedger([entry(3)], stored(1));
    ledger.track(0, at(2));
    ledger.track(1, at(3));
    ledger.track(2, at(4));
    const told: number[] = [];
    expect(ledger.whenRecorded(1, () => told.push(1)), 'waits').to.equal(true);
    // Not the next to settle: nothing owed, and a write now records no delivery of this session.
    expect(ledger.owes({ ticket: 0, position: at(2) })).to.equal(false);
    expect(ledger.mark(stored(1), { ticket: 0, position: at(2) }).own).to.equal(undefined);
    ledger.whenRecorded(0, () => told.push(0));
    expect(ledger.owes({ ticket: 0, position: at(2) })).to.equal(true);
    const first = ledger.mark(stored(1), { ticket: 0, position: at(2) });
    expect(first.entries).to.deep.equal([entry(2), entry(3)]);
    ledger.landed(first);
    expect(told).to.deep.equal([0]);
    // Record 0 settled and committed by the write that records record 1.
    const second = ledger.mark(stored(2), { ticket: 1, position: at(3) });
    expect(second.entries).to.deep.equal([entry(3, 2)]);
    ledger.landed(second);
    expect(told).to.deep.equal([0, 1]);
    // The records after the paced ones are recorded in bulk once none waits: all that was tracked.
    ledger.whenRecorded(2, () => told.push(2));
    expect(ledger.owes({ ticket: 1, position: at(3) }), 'a paced record still waits').to.equal(false);
    const bulk = ledger.mark(stored(3), { ticket: 2, position: at(4) });
    expect(bulk.own).to.deep.include({ ticket: 2, paced: false });
    ledger.landed(bulk);
    expect(told).to.deep.equal([0, 1, 2]);
    // Tracked after that write landed: waits for the next (a session may meet its poison there).
    ledger.track(3, at(5));
    expect(ledger.recorded(3)).to.equal(false);
  });

  it('the first run of a session is recorded by one write; what is tracked while it is out, or after it landed, waits for the next', () => {
    const ledger = new DeliveryLedger(undefined, undefined);
    for (let t = 0; t < 3; t += 1) ledger.track(t, at(t + 1));
    expect([0, 1, 2].map((t) => ledger.recorded(t))).to.deep.equal([false, false, false]);
    ledger.whenRecorded(2, () => undefined);
    expect(ledger.owes({ ticket: 0, position: at(1) })).to.equal(true);
    const write = ledger.mark(undefined, { ticket: 0, position: at(1) });
    expect(write.entries).to.deep.equal([entry(3)]);
    ledger.track(3, at(4));
    ledger.landed(write);
    expect([0, 1, 2, 3].map((t) => ledger.recorded(t))).to.deep.equal([true, true, true, false]);
    ledger.track(4, at(5));
    expect(ledger.recorded(4)).to.equal(false);
    ledger.whenRecorded(4, () => undefined);
    expect(ledger.owes({ ticket: 0, position: at(1) }), 'a write is owed at once').to.equal(true);
    ledger.landed(ledger.mark(undefined, { ticket: 0, position: at(1) }));
    expect([3, 4].map((t) => ledger.recorded(t))).to.deep.equal([true, true]);
  });

  it('a graceful release writes no entry of its own and tells nobody', () => {
    const ledger = new DeliveryLedger([entry(4)], stored(1));
    ledger.track(0, at(2));
    let told = false;
    ledger.whenRecorded(0, () => { told = true; });
    ledger.release();
    expect(ledger.mark(stored(1), { ticket: 0, position: at(2) })).to.deep.equal({ entries: [entry(4)], own: undefined });
    expect(ledger.owes({ ticket: 0, position: at(2) })).to.equal(false);
    expect(ledger.recorded(0)).to.equal(false);
    expect(told).to.equal(false);
  });
});
