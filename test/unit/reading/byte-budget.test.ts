import { expect } from 'chai';
import { ByteBudget } from '../../../src/reading/byte-budget.js';
import { HeldBytes } from '../../../src/reading/held-bytes.js';
import { ReadBudget, SHARD_READ_BYTES_PER_SECOND } from '../../../src/reading/read-budget.js';

describe('ByteBudget: one budget of payload bytes, shared by a client\'s shards', () => {
  it('a lone shard may use the whole budget; with two holding bytes, each its half, and never past the budget', () => {
    const budget = new ByteBudget(1000);
    const a = budget.join();
    const b = budget.join();
    expect(budget.roomFor(a), 'alone: the whole budget').to.equal(1000);
    a.set(900);
    expect(budget.roomFor(b), 'b would hold bytes too: half, but only 100 are left').to.equal(100);
    b.set(100);
    expect(budget.roomFor(a)).to.equal(-400);
    expect(budget.totalBytes).to.equal(1000);
    a.set(0);
    expect(budget.roomFor(b), 'a holds nothing: b may have it all').to.equal(900);
  });

  it('a shard holding nothing may always fetch (one record when the budget is spent); one holding bytes waits for a page worth a call', () => {
    const budget = new ByteBudget(1000);
    const [a, b] = [budget.join(), budget.join()];
    a.set(1000);
    expect(budget.mayFetch(b, 50)).to.equal(true);
    expect(budget.fetchLimit(b, 50, 10_000)).to.equal(1);
    expect(budget.fetchLimit(b, undefined, 10_000), 'no size known yet: one record').to.equal(1);
    b.set(50);
    expect(budget.mayFetch(b, 50), 'the budget is spent').to.equal(false);
    a.set(800);
    // b's fair share is 500: its room, 150 (what the client has left), holds records but not a page worth a call (half its share).
    expect(budget.roomFor(b)).to.equal(150);
    expect(budget.mayFetch(b, 50)).to.equal(false);
    a.set(200);
    expect(budget.roomFor(b)).to.equal(450);
    expect(budget.mayFetch(b, 50)).to.equal(true);
    expect(budget.fetchLimit(b, 50, 10_000)).to.equal(9);
    b.set(0);
    a.set(0);
    expect(budget.mayFetch(b, 50)).to.equal(true);
    expect(budget.fetchLimit(b, 50, 10_000)).to.equal(20);
    expect(budget.fetchLimit(b, 50, 7), 'never more than the count allows').to.equal(7);
  });

  it('a record is emitted while the emitted bytes stay within the budget, or alone', () => {
    const budget = new ByteBudget(1000);
    expect(budget.mayEmit(0, 5000)).to.equal(true);
    expect(budget.mayEmit(1, 5000)).to.equal(false);
    expect(budget.mayEmit(600, 400)).to.equal(true);
    expect(budget.mayEmit(600, 401)).to.equal(false);
  });

  it('a share that leaves holds nothing', () => {
    const budget = new ByteBudget(1000);
    const a = budget.join();
    a.set(700);
    a.leave();
    expect(budget.totalBytes).to.equal(0);
    expect(budget.roomFor(budget.join())).to.equal(1000);
  });
});

describe('HeldBytes: a shard\'s bytes from fetch to checkpoint', () => {
  it('a reservation, then the page, then records emitted and passed under the checkpoint', () => {
    const held = new HeldBytes();
    held.reserve(400);
    expect(held.total).to.equal(400);
    held.loaded(300);
    expect([held.total, held.emitted]).to.deep.equal([300, 0]);
    held.taken(100, true);
    held.taken(200, true);
    expect([held.total, held.emitted, held.registered]).to.deep.equal([300, 300, 2]);
    held.passed(1);
    expect([held.total, held.registered]).to.deep.equal([200, 1]);
    held.passed(5);
    expect(held.total).to.equal(0);
  });

  it('an aggregate is charged to its last sub-record: its bytes stay until every sub-record is passed', () => {
    const held = new HeldBytes();
    held.loaded(1000);
    held.taken(1000, false);
    held.taken(0, false);
    held.taken(0, true);
    expect([held.emitted, held.registered]).to.deep.equal([1000, 3]);
    held.passed(2);
    expect(held.total).to.equal(1000);
    held.passed(1);
    expect(held.total).to.equal(0);
  });

  it('the rest of a page dropped no longer counts; an aggregate begun stays charged to its last registered sub-record', () => {
    const held = new HeldBytes();
    held.loaded(1500);
    held.taken(1000, false);
    held.discarded();
    expect([held.total, held.emitted]).to.deep.equal([1000, 1000]);
    held.passed(1);
    expect(held.total).to.equal(0);
  });
});

describe('ReadBudget: a shard\'s 2 MiB/s of GetRecords', () => {
  it('a 10 MiB page: the next call waits five seconds from the page; small pages owe nothing', () => {
    const budget = new ReadBudget();
    expect(budget.readyAtMs).to.equal(Number.NEGATIVE_INFINITY);
    budget.spent(10 * SHARD_READ_BYTES_PER_SECOND / 2, 1000);
    expect(budget.readyAtMs).to.equal(6000);
    const small = new ReadBudget();
    small.spent(100 * 1024, 0);
    expect(small.readyAtMs, '100 KiB every 250 ms is 400 KiB/s').to.be.at.most(250);
  });

  it('pages read faster than the rate add up', () => {
    const budget = new ReadBudget(1000);
    budget.spent(500, 0);
    budget.spent(500, 100);
    expect(budget.readyAtMs).to.equal(1000);
    const unlimited = new ReadBudget(Number.POSITIVE_INFINITY);
    unlimited.spent(10 * 1024 * 1024, 0);
    expect(unlimited.readyAtMs, 'a server that never throttles').to.equal(0);
  });
});
