import { expect } from 'chai';
import fc from 'fast-check';
import { type Observable, VirtualTimeScheduler, defer } from 'rxjs';
import { createCheckpointer } from '../../../src/checkpoint/checkpointer.js';
import type { ShardTracker } from '../../../src/ports/shard-tracker.js';
import type { CheckpointWrite, HeldLease, LeaseStore, StoredCheckpoint } from '../../../src/ports/lease-store.js';
import type { Position } from '../../../src/ports/position.js';
import { LeaseLostError } from '../../../src/errors/kinsumer-errors.js';
import { MemoryLeaseStore } from '../../../src/testing/memory-lease-store.js';
import type { KinsumerEvent } from '../../../src/types.js';
import { advance } from '../../support/virtual-time.js';

/** Tracks a record and returns its ack, as a delivered record's ack() does with its ticket. */
function tracked(tracker: Pick<ShardTracker, 'track' | 'ack'>, position: Position): () => void {
  const ticket = tracker.track(position);
  return () => tracker.ack(ticket);
}

// fast-check's scheduler decides when each store write answers, relative to acks, to the passing
// of (virtual) time (which also sends renewals), to close() and to a rival capturing the lease:
// every interleaving it finds must keep the checkpoint exact and the writes one at a time.

const SHARD = 'shardId-000000000001';
const at = (n: number): Position => ({ sequenceNumber: (49590338271490256608559692538361571095921575989136588898n + BigInt(n)).toString() });
const stored = (n: number): StoredCheckpoint | undefined => (n === 0 ? undefined : { type: 'position', position: at(n) });
const COMMIT_MS = 100;
/** Short enough that renewals go out during a run and race the commits, the acks and close(). */
const RENEW_MS = 60;

interface Call {
  readonly op: 'commit' | 'renew' | 'release';
  readonly write: CheckpointWrite | undefined;
  /** The watermark of the acks made so far, when the write was sent. */
  readonly acked: StoredCheckpoint | undefined;
  /** How the store answered; `undefined` while in flight. */
  outcome?: 'ok' | Error;
}

/** The memory store, with every write's answer held back until fast-check's scheduler lets it through. */
function scheduledStore(inner: LeaseStore, s: fc.Scheduler, watermark: () => StoredCheckpoint | undefined) {
  const calls: Call[] = [];
  const applied: Array<StoredCheckpoint | undefined> = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const held = (op: Call['op'], write: CheckpointWrite | undefined, send: () => Observable<void>): Observable<void> => defer(() => {
    const call: Call = { op, write, acked: watermark() };
    calls.push(call);
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    let answered = false;
    const settle = () => {
      if (!answered) inFlight -= 1;
      answered = true;
    };
    return new Promise<void>((resolve, reject) => {
      void s.schedule(Promise.resolve(), `${op} answers`).then(() => send().subscribe({
        complete: () => {
          if (write?.checkpoint !== undefined) applied.push(write.checkpoint);
          call.outcome = 'ok';
          settle();
          resolve();
        },
        error: (error: unknown) => {
          call.outcome = error instanceof Error ? error : new Error(String(error));
          settle();
          reject(call.outcome);
        },
      }));
    });
  });
  const store: LeaseStore = {
    read: (id) => inner.read(id),
    readMany: (ids) => inner.readMany(ids),
    capture: (id) => inner.capture(id),
    commit: (lease, write) => held('commit', write, () => inner.commit(lease, write)),
    renew: (lease) => held('renew', undefined, () => inner.renew(lease)),
    resetCheckpoint: (id, checkpoint, options) => inner.resetCheckpoint(id, checkpoint, options),
    release: (lease, write) => held('release', write, () => inner.release(lease, write)),
  };
  return { store, calls, applied, maxInFlight: () => maxInFlight };
}

function watermarkOf(acked: readonly boolean[]): StoredCheckpoint | undefined {
  const gap = acked.indexOf(false);
  return stored(gap === -1 ? acked.length : gap);
}

async function capture(store: MemoryLeaseStore): Promise<HeldLease> {
  const held = await new Promise<HeldLease | undefined>((resolve) => { store.capture(SHARD).subscribe(resolve); });
  if (held === undefined) throw new Error('capture failed');
  return held;
}

/** A script: every ack (in some order), some passing of time, and maybe a close, all racing the writes. */
const scriptArb = fc.integer({ min: 1, max: 8 }).chain((records) => fc.record({
  records: fc.constant(records),
  ackOrder: fc.shuffledSubarray([...Array(records).keys()], { minLength: records }),
  ticks: fc.integer({ min: 0, max: 6 }),
}));

function positionOf(checkpoint: StoredCheckpoint | undefined): number {
  return checkpoint?.type === 'position' ? Number(BigInt(checkpoint.position.sequenceNumber) - BigInt(at(0).sequenceNumber)) : 0;
}

describe('checkpointer races (fast-check scheduler)', () => {
  it('an ack racing a commit or a renewal in flight is never lost: once things settle the row holds the last record', async () => {
    let runsWithRenewals = 0;
    await fc.assert(fc.asyncProperty(fc.scheduler(), scriptArb, async (s, script) => {
      const scheduler = new VirtualTimeScheduler();
      const memory = new MemoryLeaseStore({ clientId: 'me', leaseTtlMs: 60_000, now: () => scheduler.now() });
      const acked: boolean[] = Array<boolean>(script.records).fill(false);
      const { store, calls, applied, maxInFlight } = scheduledStore(memory, s, () => watermarkOf(acked));
      const checkpointer = createCheckpointer({
        store, lease: await capture(memory), commitFrequencyMs: COMMIT_MS, renewIntervalMs: RENEW_MS, scheduler, emit: () => undefined,
      });
      let failed: unknown;
      const run = checkpointer.run$.subscribe({ error: (e: unknown) => { failed = e; } });
      const acks = Array.from({ length: script.records }, (_, i) => tracked(checkpointer, at(i + 1)));
      for (const index of script.ackOrder) {
        void s.schedule(Promise.resolve(), `ack ${index + 1}`).then(() => {
          acked[index] = true;
          acks[index]?.();
        });
      }
      for (let i = 0; i < script.ticks; i += 1) void s.schedule(Promise.resolve(), 'tick').then(() => advance(scheduler, COMMIT_MS / 2));
      await s.waitAll();
      // Let the trailing commit and whatever waited behind a write in flight happen.
      for (let round = 0; round < 4; round += 1) {
        advance(scheduler, COMMIT_MS);
        await s.waitAll();
      }
      run.unsubscribe();
      expect(failed).to.equal(undefined);
      expect(memory.row(SHARD)?.checkpoint).to.deep.equal(stored(script.records));
      expect(maxInFlight(), 'one write at a time').to.equal(1);
      if (calls.some((c) => c.op === 'renew')) runsWithRenewals += 1;
      const order = applied.map(positionOf);
      expect(order, 'the stored position never moves backwards').to.deep.equal([...order].sort((a, b) => a - b));
      for (const call of calls.filter((c) => c.op === 'commit')) {
        expect(call.write?.checkpoint, 'each commit carries the position as it was when it was sent').to.deep.equal(call.acked);
      }
    }), { numRuns: 200 });
    expect(runsWithRenewals, 'runs in which renewals raced the rest').to.be.greaterThan(100);
  });

  it('close() racing commits and renewals: it waits for the write in flight, then the release writes the latest acked position and nothing follows', async () => {
    let runsWithRenewals = 0;
    await fc.assert(fc.asyncProperty(fc.scheduler(), scriptArb, async (s, script) => {
      const scheduler = new VirtualTimeScheduler();
      const memory = new MemoryLeaseStore({ clientId: 'me', leaseTtlMs: 60_000, now: () => scheduler.now() });
      const acked: boolean[] = Array<boolean>(script.records).fill(false);
      const { store, calls, maxInFlight } = scheduledStore(memory, s, () => watermarkOf(acked));
      const checkpointer = createCheckpointer({
        store, lease: await capture(memory), commitFrequencyMs: COMMIT_MS, renewIntervalMs: RENEW_MS, scheduler, emit: () => undefined,
      });
      let failed: unknown;
      const run = checkpointer.run$.subscribe({ error: (e: unknown) => { failed = e; } });
      const acks = Array.from({ length: script.records }, (_, i) => tracked(checkpointer, at(i + 1)));
      for (const index of script.ackOrder) {
        void s.schedule(Promise.resolve(), `ack ${index + 1}`).then(() => {
          acked[index] = true;
          acks[index]?.();
        });
      }
      for (let i = 0; i < script.ticks; i += 1) void s.schedule(Promise.resolve(), 'tick').then(() => advance(scheduler, COMMIT_MS / 2));
      let closed: Promise<void> | undefined;
      let ackedAtClose: StoredCheckpoint | undefined;
      void s.schedule(Promise.resolve(), 'close').then(() => {
        ackedAtClose = watermarkOf(acked);
        closed = checkpointer.close();
      });
      await s.waitAll();
      if (closed === undefined) throw new Error('close() was never called');
      // The release is sent a few microtasks after the write in flight answers: keep letting answers through until it settles.
      await s.waitFor(closed);
      await s.waitAll();
      run.unsubscribe();
      expect(failed).to.equal(undefined);
      const release = calls.findIndex((c) => c.op === 'release');
      expect(release, 'released').to.be.at.least(0);
      expect(calls.slice(release + 1), 'no write after the release').to.deep.equal([]);
      const releaseCall = calls[release];
      expect(releaseCall?.write?.checkpoint, 'the release writes the acks made until it was sent').to.deep.equal(releaseCall?.acked);
      expect(positionOf(releaseCall?.acked)).to.be.at.least(positionOf(ackedAtClose));
      const row = memory.row(SHARD);
      expect(row?.ownerId).to.equal(undefined);
      expect(row?.checkpoint).to.deep.equal(releaseCall?.acked);
      expect(maxInFlight(), 'one write at a time, the release included').to.equal(1);
      expect(run.closed).to.equal(true);
      if (calls.slice(0, release).some((c) => c.op === 'renew')) runsWithRenewals += 1;
    }), { numRuns: 200 });
    expect(runsWithRenewals, 'runs in which renewals raced close()').to.be.at.least(10);
  });

  it('a rival capture racing commits, renewals and close(): the write that meets it fails with LeaseLostError, nothing follows, close() resolves', async () => {
    await fc.assert(fc.asyncProperty(fc.scheduler(), scriptArb, async (s, script) => {
      const scheduler = new VirtualTimeScheduler();
      const memory = new MemoryLeaseStore({ clientId: 'me', leaseTtlMs: 60_000, now: () => scheduler.now() });
      const acked: boolean[] = Array<boolean>(script.records).fill(false);
      const { store, calls, maxInFlight } = scheduledStore(memory, s, () => watermarkOf(acked));
      const events: KinsumerEvent[] = [];
      const checkpointer = createCheckpointer({
        store, lease: await capture(memory), commitFrequencyMs: COMMIT_MS, renewIntervalMs: RENEW_MS, scheduler, emit: (e) => events.push(e),
      });
      let failed: unknown;
      const run = checkpointer.run$.subscribe({ error: (e: unknown) => { failed = e; } });
      const acks = Array.from({ length: script.records }, (_, i) => tracked(checkpointer, at(i + 1)));
      for (const index of script.ackOrder) {
        void s.schedule(Promise.resolve(), `ack ${index + 1}`).then(() => {
          acked[index] = true;
          acks[index]?.();
        });
      }
      for (let i = 0; i < script.ticks; i += 1) void s.schedule(Promise.resolve(), 'tick').then(() => advance(scheduler, COMMIT_MS / 2));
      let rowAtSteal: ReturnType<MemoryLeaseStore['row']>;
      void s.schedule(Promise.resolve(), 'steal').then(() => {
        const row = memory.row(SHARD);
        if (row === undefined) throw new Error('no row');
        rowAtSteal = { ...row, ownerId: 'rival', leaseCounter: row.leaseCounter + 1 };
        memory.table.put(rowAtSteal);
      });
      let closed: Promise<void> | undefined;
      void s.schedule(Promise.resolve(), 'close').then(() => { closed = checkpointer.close(); });
      await s.waitAll();
      if (closed === undefined) throw new Error('close() was never called');
      // Renewals (or the release) find the loss.
      for (let round = 0; round < 4; round += 1) {
        advance(scheduler, COMMIT_MS);
        await s.waitAll();
      }
      await s.waitFor(closed);
      run.unsubscribe();
      expect(maxInFlight(), 'one write at a time').to.equal(1);
      const released = calls.some((c) => c.op === 'release' && c.outcome === 'ok');
      const lost = events.filter((e) => e.type === 'lease-lost');
      if (released) {
        // The release landed before the rival's capture: nothing was lost.
        expect(lost).to.deep.equal([]);
        expect(failed).to.equal(undefined);
        return;
      }
      expect(lost, 'lease-lost once').to.have.length(1);
      expect(failed, 'run$ ends with the loss').to.be.instanceOf(LeaseLostError);
      const fenced = calls.findIndex((c) => c.outcome instanceof LeaseLostError);
      expect(fenced, 'a write met the rival').to.be.at.least(0);
      expect(calls.slice(fenced + 1), 'nothing written after the write that met the rival').to.deep.equal([]);
      expect(memory.row(SHARD), 'the rival\'s row is untouched').to.deep.equal(rowAtSteal);
    }), { numRuns: 200 });
  });
});
