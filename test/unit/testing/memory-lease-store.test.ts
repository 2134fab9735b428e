import { expect } from 'chai';
import { TestScheduler } from 'rxjs/testing';
import { LeaseLostError } from '../../../src/errors/kinsumer-errors.js';
import type { HeldLease, StoredCheckpoint } from '../../../src/ports/lease-store.js';
import { MemoryCheckpointTable, MemoryLeaseStore } from '../../../src/testing/memory-lease-store.js';

const SHARD = 'shardId-000000000002';
const at = (sequenceNumber: string): StoredCheckpoint => ({ type: 'position', position: { sequenceNumber } });
const testScheduler = () => new TestScheduler((actual, expected) => { expect(actual).to.deep.equal(expected); });

describe('MemoryLeaseStore', () => {
  it('with latency, two clients capturing at once: exactly one wins, and the write lands when the call answers', () => {
    const scheduler = testScheduler();
    scheduler.run(({ expectObservable }) => {
      const table = new MemoryCheckpointTable();
      const options = { leaseTtlMs: 1000, now: () => scheduler.now(), table, latencyMs: 10, scheduler };
      const a = new MemoryLeaseStore({ clientId: 'a', ...options });
      const b = new MemoryLeaseStore({ clientId: 'b', ...options });
      // Both read the empty row at 0; a's write lands first, so b's "unchanged since my read" fails.
      expectObservable(a.capture(SHARD)).toBe('10ms (a|)', { a: { shardId: SHARD, ownerId: 'a', leaseCounter: 1, checkpoint: undefined, finished: false } });
      expectObservable(b.capture(SHARD)).toBe('10ms (u|)', { u: undefined });
      scheduler.schedule(() => { expect(table.row(SHARD), 'nothing written before the answer').to.equal(undefined); }, 5);
    });
  });

  it('keeps the checkpoint and Finished on capture, fences on owner and counter, keeps Finished and sets LastOwnerID on release', () => {
    let now = 1_000_000;
    const table = new MemoryCheckpointTable();
    table.put({ shardId: SHARD, checkpoint: { type: 'LATEST' }, ownerId: 'old', ownerName: 'h', lastUpdateNs: 1n, finished: true, leaseCounter: 4, lastOwnerId: undefined });
    const a = new MemoryLeaseStore({ clientId: 'a', leaseTtlMs: 1000, now: () => now, table });
    let lease: HeldLease | undefined;
    // The old owner's row must stand still for a TTL under a's eyes first.
    a.capture(SHARD).subscribe((held) => { lease = held; });
    expect(lease).to.equal(undefined);
    now += 1000;
    a.capture(SHARD).subscribe((held) => { lease = held; });
    expect(lease).to.deep.equal({ shardId: SHARD, ownerId: 'a', leaseCounter: 5, checkpoint: { type: 'LATEST' }, finished: true });
    if (lease === undefined) throw new Error('capture failed');
    let error: unknown;
    a.commit({ ...lease, leaseCounter: 4 }, { checkpoint: at('9'), finished: false }).subscribe({ error: (e: unknown) => { error = e; } });
    expect(error).to.be.instanceOf(LeaseLostError);
    now += 10;
    a.release(lease, { checkpoint: at('9'), finished: false }).subscribe();
    expect(table.row(SHARD)).to.deep.equal({
      shardId: SHARD, checkpoint: at('9'), ownerId: undefined, ownerName: undefined, lastUpdateNs: 1_001_010_000_000n, finished: true, leaseCounter: 5, lastOwnerId: 'a',
      // The release moved the checkpoint (LATEST to 9): when, as progress.
      checkpointUpdateNs: 1_001_010_000_000n,
    });
    expect(a.calls).to.deep.include({ capture: 2, commit: 1, release: 1 });
  });

  it('an owned lease is available to another client once that client has seen its row unchanged for the TTL, on its own clock', () => {
    let aNow = 5_000_000;
    let bNow = 0; // b's clock is far behind a's: only its own differences count
    const table = new MemoryCheckpointTable();
    const a = new MemoryLeaseStore({ clientId: 'a', leaseTtlMs: 1000, now: () => aNow, table });
    const b = new MemoryLeaseStore({ clientId: 'b', leaseTtlMs: 1000, now: () => bNow, table });
    const results: Array<HeldLease | undefined> = [];
    let held: HeldLease | undefined;
    a.capture(SHARD).subscribe((lease) => { held = lease; });
    if (held === undefined) throw new Error('capture failed');
    b.capture(SHARD).subscribe((lease) => results.push(lease)); // first seen at 0
    bNow = 999;
    b.capture(SHARD).subscribe((lease) => results.push(lease));
    aNow += 500;
    a.renew(held).subscribe();
    bNow = 1500;
    b.capture(SHARD).subscribe((lease) => results.push(lease)); // changed: seen anew at 1500
    bNow = 2499;
    b.capture(SHARD).subscribe((lease) => results.push(lease));
    bNow = 2500;
    b.capture(SHARD).subscribe((lease) => results.push(lease));
    expect(results.map((r) => r?.ownerId)).to.deep.equal([undefined, undefined, undefined, undefined, 'b']);
  });

  it('a process captures again at once a lease it holds itself, but not one another process with the same clientId holds (R8)', () => {
    const table = new MemoryCheckpointTable();
    const first = new MemoryLeaseStore({ clientId: 'same', leaseTtlMs: 1000, now: () => 0, table });
    const second = new MemoryLeaseStore({ clientId: 'same', leaseTtlMs: 1000, now: () => 0, table });
    const tokens: Array<number | undefined> = [];
    first.capture(SHARD).subscribe((lease) => tokens.push(lease?.leaseCounter));
    second.capture(SHARD).subscribe((lease) => tokens.push(lease?.leaseCounter));
    first.capture(SHARD).subscribe((lease) => tokens.push(lease?.leaseCounter));
    expect(tokens).to.deep.equal([1, undefined, 2]);
  });

  it('failNext fails the next matching call with the given error, without touching the table; faults queue in order', () => {
    const table = new MemoryCheckpointTable();
    const a = new MemoryLeaseStore({ clientId: 'a', leaseTtlMs: 1000, now: () => 0, table });
    const first = new Error('first');
    const second = new Error('second');
    a.failNext(first);
    a.failNext(second, ['release']);
    const errors: unknown[] = [];
    a.read(SHARD).subscribe({ error: (e: unknown) => errors.push(e) }); // reads are not writes: unaffected
    a.capture(SHARD).subscribe({ error: (e: unknown) => errors.push(e) });
    expect(table.row(SHARD)).to.equal(undefined);
    let lease: HeldLease | undefined;
    a.capture(SHARD).subscribe((held) => { lease = held; });
    if (lease === undefined) throw new Error('capture failed');
    a.commit(lease, { checkpoint: at('1'), finished: false }).subscribe({ error: (e: unknown) => errors.push(e) });
    a.release(lease, { checkpoint: at('2'), finished: false }).subscribe({ error: (e: unknown) => errors.push(e) });
    expect(errors).to.deep.equal([first, second]);
    expect(table.row(SHARD)).to.deep.include({ ownerId: 'a', checkpoint: at('1') });
  });
});
