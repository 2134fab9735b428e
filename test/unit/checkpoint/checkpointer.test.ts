import { expect } from 'chai';
import { Observable, ReplaySubject, VirtualTimeScheduler, firstValueFrom, mergeMap, of, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { type Checkpointer, createCheckpointer } from '../../../src/checkpoint/checkpointer.js';
import { KinsumerError, LeaseLostError } from '../../../src/errors/kinsumer-errors.js';
import type { ShardTracker } from '../../../src/ports/shard-tracker.js';
import type { CheckpointWrite, HeldLease, LeaseStore, StoredCheckpoint } from '../../../src/ports/lease-store.js';
import type { Position } from '../../../src/ports/position.js';
import { MemoryCheckpointTable, MemoryLeaseStore } from '../../../src/testing/memory-lease-store.js';
import type { KinsumerEvent, StatReceiver } from '../../../src/types.js';

/** Tracks a record and returns its ack, as a delivered record's ack() does with its ticket. */
function tracked(tracker: Pick<ShardTracker, 'track' | 'ack'>, position: Position): () => void {
  const ticket = tracker.track(position);
  return () => tracker.ack(ticket);
}

const SHARD = 'shardId-000000000000';
const at = (n: number): Position => ({ sequenceNumber: `4959033827149025660855969253836157109592157598913658${String(n).padStart(4, '0')}` });
const stored = (n: number): StoredCheckpoint => ({ type: 'position', position: at(n) });
const lease = (overrides: Partial<HeldLease> = {}): HeldLease => ({ shardId: SHARD, ownerId: 'me', leaseCounter: 1, checkpoint: undefined, finished: false, ...overrides });
const testScheduler = () => new TestScheduler((actual, expected) => { expect(actual).to.deep.equal(expected); });

type WriteOp = 'commit' | 'renew' | 'release';

/** A store whose writes answer as `answer` says (cold Observables on the test scheduler) and are logged as labels. */
function scriptedStore(answer: (op: WriteOp, attempt: number) => Observable<void>) {
  // Replays, so a write at frame 0 still reaches expectObservable's frame-0 subscription.
  const writes$ = new ReplaySubject<string>();
  const log: Array<{ op: WriteOp; write: CheckpointWrite | undefined }> = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const label = (op: WriteOp, write?: CheckpointWrite) => {
    const checkpoint = write?.checkpoint;
    const position = checkpoint?.type === 'position' ? ` ${Number(checkpoint.position.sequenceNumber.slice(-4))}` : '';
    const ranges = write?.acked?.map((r) => `${Number(r.from.sequenceNumber.slice(-4))}-${Number(r.to.sequenceNumber.slice(-4))}`).join(',');
    return `${op}${position}${ranges === undefined ? '' : ` acked ${ranges}`}${write?.finished === true ? ' finished' : ''}`;
  };
  const tracked = (op: WriteOp, write?: CheckpointWrite): Observable<void> => new Observable<void>((subscriber) => {
    log.push({ op, write });
    writes$.next(label(op, write));
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    // In flight until the answer arrives (or the caller gives up on it).
    let answered = false;
    const settle = () => {
      if (!answered) inFlight -= 1;
      answered = true;
    };
    const subscription = answer(op, log.filter((entry) => entry.op === op).length).subscribe({
      next: (value) => subscriber.next(value),
      error: (error: unknown) => { settle(); subscriber.error(error); },
      complete: () => { settle(); subscriber.complete(); },
    });
    return () => {
      settle();
      subscription.unsubscribe();
    };
  });
  const store: LeaseStore = {
    read: () => of(undefined),
    readMany: () => of([]),
    capture: () => of(undefined),
    commit: (_lease, write) => tracked('commit', write),
    renew: () => tracked('renew'),
    release: (_lease, write) => tracked('release', write),
    resetCheckpoint: () => of(undefined),
  };
  return { store, writes$, log, maxInFlight: () => maxInFlight };
}

function checkpointerOn(scheduler: TestScheduler | VirtualTimeScheduler, store: LeaseStore, events: KinsumerEvent[], held = lease(), stats: StatReceiver = {}): Checkpointer {
  return createCheckpointer({ store, lease: held, commitFrequencyMs: 100, renewIntervalMs: 500, scheduler, emit: (e) => events.push(e), stats });
}

describe('checkpointer', () => {
  describe('commit cadence (marbles)', () => {
    it('commits on the leading ack at once, then the latest position at the end of the window, then only renews', () => {
      const scheduler = testScheduler();
      scheduler.run(({ cold, expectObservable }) => {
        const { store, writes$ } = scriptedStore(() => of(undefined));
        const events: KinsumerEvent[] = [];
        let checkpoints = 0;
        const checkpointer = checkpointerOn(scheduler, store, events, lease(), { checkpoint: () => { checkpoints += 1; } });
        const acks = [1, 2, 3].map((n) => tracked(checkpointer, at(n)));
        cold('a 19ms b 29ms c').subscribe((k) => acks['abc'.indexOf(k)]?.());
        expectObservable(checkpointer.run$, '^ 1200ms !').toBe('-');
        expectObservable(writes$, '^ 1200ms !').toBe('a 99ms b 499ms c 499ms c', { a: 'commit 1', b: 'commit 3', c: 'renew' });
        scheduler.flush();
        expect(events.filter((e) => e.type === 'checkpoint')).to.deep.equal([
          { type: 'checkpoint', shardId: SHARD, checkpoint: at(1), finished: false },
          { type: 'checkpoint', shardId: SHARD, checkpoint: at(3), finished: false },
        ]);
        expect(checkpoints, 'StatReceiver.checkpoint per written position, not per renewal').to.equal(2);
      });
    });

    it('keeps one write in flight; the commit after it carries the position as it is when it starts', () => {
      const scheduler = testScheduler();
      scheduler.run(({ cold, expectObservable }) => {
        const scripted = scriptedStore(() => cold('150ms (a|)', { a: undefined }));
        const checkpointer = checkpointerOn(scheduler, scripted.store, []);
        const acks = [1, 2, 3].map((n) => tracked(checkpointer, at(n)));
        // ack 1 at 0 (leading commit, in flight until 150); ack 2 at 10 and ack 3 at 120 wait for it.
        cold('a 9ms b 109ms c').subscribe((k) => acks['abc'.indexOf(k)]?.());
        expectObservable(checkpointer.run$, '^ 900ms !').toBe('-');
        expectObservable(scripted.writes$, '^ 900ms !').toBe('a 149ms b 649ms c', { a: 'commit 1', b: 'commit 3', c: 'renew' });
        scheduler.flush();
        expect(scripted.maxInFlight()).to.equal(1);
      });
    });

    it('an ack behind a gap is committed as an acked range (§7.3), then nothing but renewals while nothing changes', () => {
      const scheduler = testScheduler();
      scheduler.run(({ cold, expectObservable }) => {
        const { store, writes$ } = scriptedStore(() => of(undefined));
        const checkpointer = checkpointerOn(scheduler, store, []);
        tracked(checkpointer, at(1));
        const second = tracked(checkpointer, at(2));
        cold('50ms a').subscribe(() => second());
        expectObservable(checkpointer.run$, '^ 1600ms !').toBe('-');
        expectObservable(writes$, '^ 1600ms !').toBe('50ms a 499ms b 499ms b 499ms b', { a: 'commit acked 2-2', b: 'renew' });
        expectObservable(checkpointer.acks$, '^ 1600ms !').toBe('50ms a', { a: undefined });
      });
    });

    it('writes Finished with the final commit once the last record is acked; finish() completes then', () => {
      const scheduler = testScheduler();
      scheduler.run(({ cold, expectObservable }) => {
        const { store, writes$ } = scriptedStore(() => of(undefined));
        const checkpointer = checkpointerOn(scheduler, store, [], lease({ checkpoint: stored(0) }));
        const [first, last] = [tracked(checkpointer, at(1)), tracked(checkpointer, at(2))];
        cold('a 249ms b').subscribe((k) => (k === 'a' ? first : last)?.());
        expectObservable(checkpointer.run$, '^ 400ms !').toBe('-');
        expectObservable(cold('30ms (a|)').pipe(mergeMap(() => checkpointer.finish(at(2))))).toBe('250ms |');
        expectObservable(writes$, '^ 400ms !').toBe('a 249ms b', { a: 'commit 1', b: 'commit 2 finished' });
      });
    });

    it('a shard that read nothing since the capture is finished at once', () => {
      const scheduler = testScheduler();
      scheduler.run(({ cold, expectObservable }) => {
        const { store, writes$ } = scriptedStore(() => cold('5ms (a|)', { a: undefined }));
        const checkpointer = checkpointerOn(scheduler, store, [], lease({ checkpoint: stored(7) }));
        expectObservable(checkpointer.run$, '^ 50ms !').toBe('-');
        expectObservable(cold('10ms (a|)').pipe(mergeMap(() => checkpointer.finish(undefined)))).toBe('15ms |');
        expectObservable(writes$, '^ 50ms !').toBe('10ms a', { a: 'commit 7 finished' });
      });
    });

    it('commits acks made before the loop started as soon as it starts', () => {
      const scheduler = testScheduler();
      scheduler.run(({ cold, expectObservable }) => {
        const { store, writes$ } = scriptedStore(() => of(undefined));
        const checkpointer = checkpointerOn(scheduler, store, []);
        tracked(checkpointer, at(1))();
        expectObservable(cold('20ms (a|)').pipe(mergeMap(() => checkpointer.run$)), '^ 100ms !').toBe('-');
        expectObservable(writes$, '^ 100ms !').toBe('20ms a', { a: 'commit 1' });
      });
    });
  });

  describe('faults', () => {
    it('a fenced commit loses the lease: run$ and finish() error with LeaseLostError, nothing more is written, close() does nothing', async () => {
      const scheduler = testScheduler();
      const events: KinsumerEvent[] = [];
      let checkpointer: Checkpointer | undefined;
      let scripted: ReturnType<typeof scriptedStore> | undefined;
      const lost = new LeaseLostError(SHARD);
      scheduler.run(({ cold, expectObservable }) => {
        scripted = scriptedStore(() => cold('10ms #', undefined, lost));
        const current = checkpointerOn(scheduler, scripted.store, events);
        checkpointer = current;
        const acks = [1, 2].map((n) => tracked(current, at(n)));
        cold('a 199ms b').subscribe((k) => acks['ab'.indexOf(k)]?.());
        expectObservable(checkpointer.run$).toBe('10ms #', undefined, lost);
        expectObservable(checkpointer.finish(at(2))).toBe('10ms #', undefined, lost);
        expectObservable(scripted.writes$, '^ 1000ms !').toBe('a', { a: 'commit 1' });
      });
      await checkpointer?.close();
      expect(scripted?.log.map((entry) => entry.op)).to.deep.equal(['commit']);
      expect(events.filter((e) => e.type !== 'retrying')).to.deep.equal([{ type: 'lease-lost', shardId: SHARD, error: lost }]);
    });

    it('retries a throttled commit with backoff, reports it, and carries on', () => {
      const scheduler = testScheduler();
      const events: KinsumerEvent[] = [];
      const throttled = Object.assign(new Error('slow down'), { name: 'ProvisionedThroughputExceededException', $metadata: { httpStatusCode: 400 } });
      let errored: unknown;
      let scripted: ReturnType<typeof scriptedStore> | undefined;
      scheduler.run(() => {
        scripted = scriptedStore((op, attempt) => (op === 'commit' && attempt <= 2 ? throwError(() => throttled) : of(undefined)));
        const checkpointer = checkpointerOn(scheduler, scripted.store, events);
        const run = checkpointer.run$.subscribe({ error: (e: unknown) => { errored = e; } });
        tracked(checkpointer, at(1))();
        scheduler.schedule(() => run.unsubscribe(), 2_000);
      });
      expect(errored).to.equal(undefined);
      expect(scripted?.log.filter((entry) => entry.op === 'commit')).to.have.length(3);
      expect(events.filter((e) => e.type === 'retrying').map((e) => (e.type === 'retrying' ? [e.operation, e.attempt, e.shardId] : []))).to.deep.equal([['commit', 1, SHARD], ['commit', 2, SHARD]]);
      expect(events.filter((e) => e.type === 'checkpoint')).to.have.length(1);
    });

    it('a fatal store error ends run$ with a KinsumerError that keeps the AWS error as cause', () => {
      const scheduler = testScheduler();
      const denied = Object.assign(new Error('no'), { name: 'AccessDeniedException', $metadata: { httpStatusCode: 400 } });
      let errored: unknown;
      scheduler.run(() => {
        const { store } = scriptedStore(() => throwError(() => denied));
        const checkpointer = checkpointerOn(scheduler, store, []);
        checkpointer.run$.subscribe({ error: (e: unknown) => { errored = e; } });
        tracked(checkpointer, at(1))();
      });
      expect(errored).to.be.instanceOf(KinsumerError);
      expect((errored as KinsumerError).cause).to.equal(denied);
    });
  });

  describe('a start to keep (LATEST or a timestamp, R2)', () => {
    const start: StoredCheckpoint = { type: 'AT_TIMESTAMP', timestamp: new Date(1_000) };

    it('is committed at once, and no record may be emitted (leaseConfirmed false) until that write succeeds', () => {
      const scheduler = testScheduler();
      const confirmedAt: Array<[number, boolean]> = [];
      scheduler.run(({ cold, expectObservable }) => {
        const scripted = scriptedStore(() => cold('40ms (a|)', { a: undefined }));
        const checkpointer = createCheckpointer({
          store: scripted.store, lease: lease({ checkpoint: { type: 'LATEST' } }), start, commitFrequencyMs: 100, renewIntervalMs: 500, scheduler, emit: () => undefined,
        });
        const run = checkpointer.run$.subscribe();
        for (const t of [0, 39, 40]) cold(`${t}ms a`).subscribe(() => confirmedAt.push([t, checkpointer.leaseConfirmed?.() ?? true]));
        expectObservable(checkpointer.confirmed$ ?? cold('-'), '^ 100ms !').toBe('40ms a', { a: undefined });
        cold('100ms a').subscribe(() => run.unsubscribe());
        scheduler.flush();
        expect(scripted.log.map((entry) => [entry.op, entry.write?.checkpoint])).to.deep.equal([['commit', start]]);
      });
      expect(confirmedAt).to.deep.equal([[0, false], [39, false], [40, true]]);
    });

    it('a release with nothing acked writes it', async () => {
      const scheduler = new VirtualTimeScheduler();
      const store = new MemoryLeaseStore({ clientId: 'me', leaseTtlMs: 3_000, now: () => scheduler.now() });
      const held = await firstValueFrom(store.capture(SHARD));
      if (held === undefined) throw new Error('capture failed');
      const checkpointer = createCheckpointer({ store, lease: held, start, commitFrequencyMs: 100, renewIntervalMs: 500, scheduler, emit: () => undefined });
      tracked(checkpointer, at(1));
      await checkpointer.close();
      expect(store.row(SHARD)).to.deep.include({ ownerId: undefined, checkpoint: start });
    });
  });

  describe('stall warning (shard-stalled)', () => {
    const STALL_MS = 1000;
    type Stall = Extract<KinsumerEvent, { type: 'shard-stalled' }> & { readonly atMs: number };
    /** A checkpointer whose shard-stalled events are logged with the virtual time they came at. */
    const stalledOn = (scheduler: TestScheduler, stalls: Stall[]) => createCheckpointer({
      store: scriptedStore(() => of(undefined)).store, lease: lease(), commitFrequencyMs: 100, renewIntervalMs: 500,
      stallWarningMs: STALL_MS, scheduler, emit: (e) => { if (e.type === 'shard-stalled') stalls.push({ ...e, atMs: scheduler.now() }); },
    });

    it('records pending behind an unacked one for stallWarningMs: reported with the oldest record, again every stallWarningMs, until the watermark moves', () => {
      const scheduler = testScheduler();
      const stalls: Stall[] = [];
      scheduler.run(({ cold }) => {
        const checkpointer = stalledOn(scheduler, stalls);
        const acks = [1, 2, 3].map((n) => tracked(checkpointer, at(n)));
        const run = checkpointer.run$.subscribe();
        // 2 and 3 acked at once, 1 only at 3500 ms: the watermark is stuck from 0 to 3500.
        acks[1]?.();
        acks[2]?.();
        cold('3500ms a').subscribe(() => acks[0]?.());
        cold('9000ms a').subscribe(() => run.unsubscribe());
      });
      expect(stalls).to.deep.equal([1000, 2000, 3000].map((sinceMs) => ({
        type: 'shard-stalled', shardId: SHARD, oldest: at(1), pending: 3, sinceMs, atMs: sinceMs,
      })));
    });

    it('the clock starts when the watermark last moved, or when records became pending, never earlier', () => {
      const scheduler = testScheduler();
      const stalls: Stall[] = [];
      scheduler.run(({ cold }) => {
        const checkpointer = stalledOn(scheduler, stalls);
        const run = checkpointer.run$.subscribe();
        const acks: Array<() => void> = [];
        // Idle until 2500 ms, then 1 and 2 arrive; 1 is acked at 3200 ms (the watermark moves), 2 never.
        cold('2500ms a').subscribe(() => { acks.push(tracked(checkpointer, at(1)), tracked(checkpointer, at(2))); });
        cold('3200ms a').subscribe(() => acks[0]?.());
        cold('5000ms a').subscribe(() => run.unsubscribe());
      });
      expect(stalls).to.deep.equal([{ type: 'shard-stalled', shardId: SHARD, oldest: at(2), pending: 1, sinceMs: 1000, atMs: 4200 }]);
    });

    it('an idle shard (nothing pending) and a shard whose watermark keeps moving are never reported', () => {
      const scheduler = testScheduler();
      const stalls: Stall[] = [];
      scheduler.run(({ cold }) => {
        const idle = stalledOn(scheduler, stalls);
        const busy = stalledOn(scheduler, stalls);
        const runs = [idle.run$.subscribe(), busy.run$.subscribe()];
        // The busy shard always has records pending, but its oldest is acked every 600 ms.
        const acks = Array.from({ length: 12 }, (_, i) => tracked(busy, at(i + 1)));
        for (let i = 0; i < 12; i += 1) cold(`${600 * (i + 1)}ms a`).subscribe(() => acks[i]?.());
        cold('10000ms a').subscribe(() => { for (const run of runs) run.unsubscribe(); });
      });
      expect(stalls).to.deep.equal([]);
    });
  });

  describe('lease renewal (W2)', () => {
    it('an idle shard keeps its lease while run$ is subscribed; without renewal another client takes it after the TTL', () => {
      const ttl = 3_000;
      for (const renewing of [true, false]) {
        const scheduler = testScheduler();
        let taken: HeldLease | undefined;
        scheduler.run(({ cold }) => {
          const table = new MemoryCheckpointTable();
          const mine = new MemoryLeaseStore({ clientId: 'me', leaseTtlMs: ttl, now: () => scheduler.now(), table });
          const other = new MemoryLeaseStore({ clientId: 'other', leaseTtlMs: ttl, now: () => scheduler.now(), table });
          mine.capture(SHARD).subscribe((held) => {
            if (held === undefined) throw new Error('capture failed');
            const checkpointer = createCheckpointer({ store: mine, lease: held, commitFrequencyMs: 100, renewIntervalMs: ttl / 3, scheduler, emit: () => undefined });
            if (renewing) {
              const run = checkpointer.run$.subscribe();
              scheduler.schedule(() => run.unsubscribe(), 4 * ttl);
            }
          });
          // The other client watches the row from one TTL on (expiry is by its own observation).
          cold(`${ttl}ms a`).subscribe(() => other.read(SHARD).subscribe());
          cold(`${3 * ttl}ms a`).subscribe(() => other.capture(SHARD).subscribe((held) => { taken = held; }));
        });
        if (renewing) expect(taken, 'renewed lease').to.equal(undefined);
        else expect(taken?.ownerId, 'abandoned lease').to.equal('other');
      }
    });
  });

  describe('close', () => {
    for (const running of [true, false]) {
      it(`${running ? 'with the lane running' : 'with nothing running the lane'}: the row has no owner and holds the latest acked position; run$ completes; close() is idempotent`, async () => {
        const scheduler = new VirtualTimeScheduler();
        const store = new MemoryLeaseStore({ clientId: 'me', leaseTtlMs: 3_000, now: () => scheduler.now() });
        const held = await firstValueFrom(store.capture(SHARD));
        if (held === undefined) throw new Error('capture failed');
        const events: KinsumerEvent[] = [];
        const checkpointer = checkpointerOn(scheduler, store, events, held);
        const run = running ? checkpointer.run$.subscribe() : undefined;
        const acks = [1, 2, 3, 4].map((n) => tracked(checkpointer, at(n)));
        // Out of order, with a gap at 3: the latest acked position is 2.
        for (const index of [1, 0, 3]) acks[index]?.();
        await Promise.all([checkpointer.close(), checkpointer.close()]);
        expect(store.row(SHARD)).to.deep.include({ ownerId: undefined, checkpoint: stored(2), lastOwnerId: 'me', finished: false });
        expect(events.at(-1)).to.deep.equal({ type: 'lease-released', shardId: SHARD, checkpoint: at(2), finished: false });
        if (run !== undefined) expect(run.closed, 'run$ completes after the release').to.equal(true);
        await checkpointer.close();
        expect(store.calls.release, 'close() is idempotent').to.equal(1);
        const writes = () => store.calls.commit + store.calls.renew + store.calls.release;
        const before = writes();
        acks[2]?.();
        scheduler.flush();
        expect(writes(), 'a late ack (or time passing) writes nothing').to.equal(before);
      });
    }

    it('a throttled release is retried on the scheduler\'s clock and reported', async () => {
      const scheduler = new VirtualTimeScheduler();
      const store = new MemoryLeaseStore({ clientId: 'me', leaseTtlMs: 3_000, now: () => scheduler.now() });
      const held = await new Promise<HeldLease | undefined>((resolve) => { store.capture(SHARD).subscribe(resolve); });
      if (held === undefined) throw new Error('capture failed');
      const events: KinsumerEvent[] = [];
      const checkpointer = checkpointerOn(scheduler, store, events, held);
      tracked(checkpointer, at(1))();
      store.failNext(Object.assign(new Error('slow down'), { name: 'ProvisionedThroughputExceededException' }), ['release']);
      const closing = checkpointer.close();
      let done = false;
      void closing.then(() => { done = true; });
      // Virtual time only moves when the test moves it: step it until the backoff timer has fired.
      for (let step = 0; step < 100 && !done; step += 1) {
        await Promise.resolve();
        scheduler.schedule(() => undefined, 10);
        scheduler.maxFrames = scheduler.now() + 10;
        scheduler.flush();
      }
      await closing;
      expect(store.calls.release).to.equal(2);
      expect(store.row(SHARD)).to.deep.include({ ownerId: undefined, checkpoint: stored(1) });
      expect(events.map((e) => (e.type === 'retrying' ? `retrying ${e.operation}` : e.type))).to.deep.equal(['retrying release', 'lease-released']);
    });

    it('close() writes Finished with the release when the Go rule allows it', async () => {
      const scheduler = new VirtualTimeScheduler();
      const store = new MemoryLeaseStore({ clientId: 'me', leaseTtlMs: 3_000, now: () => scheduler.now() });
      const held = await new Promise<HeldLease | undefined>((resolve) => { store.capture(SHARD).subscribe(resolve); });
      if (held === undefined) throw new Error('capture failed');
      const checkpointer = checkpointerOn(scheduler, store, [], held);
      tracked(checkpointer, at(1))();
      let completed = false;
      checkpointer.finish(at(1)).subscribe({ complete: () => { completed = true; } });
      await checkpointer.close();
      expect(store.row(SHARD)).to.deep.include({ ownerId: undefined, checkpoint: stored(1), finished: true });
      expect(completed).to.equal(true);
      expect(checkpointer.finishedWritten()).to.equal(true);
    });

    it('a release that finds the lease taken reports lease-lost, ends run$ with LeaseLostError, and resolves', async () => {
      const scheduler = new VirtualTimeScheduler();
      const table = new MemoryCheckpointTable();
      const store = new MemoryLeaseStore({ clientId: 'me', leaseTtlMs: 3_000, now: () => scheduler.now(), table });
      const held = await new Promise<HeldLease | undefined>((resolve) => { store.capture(SHARD).subscribe(resolve); });
      if (held === undefined) throw new Error('capture failed');
      const events: KinsumerEvent[] = [];
      const checkpointer = checkpointerOn(scheduler, store, events, held);
      let runError: unknown;
      checkpointer.run$.subscribe({ error: (e: unknown) => { runError = e; } });
      tracked(checkpointer, at(1))(); // the leading commit still succeeds
      tracked(checkpointer, at(2))();
      const row = table.row(SHARD);
      if (row === undefined) throw new Error('no row');
      table.put({ ...row, ownerId: 'thief', leaseCounter: 2 });
      await checkpointer.close();
      expect(table.row(SHARD)).to.deep.include({ ownerId: 'thief', checkpoint: stored(1) });
      expect(events.map((e) => e.type)).to.deep.equal(['checkpoint', 'lease-lost']);
      expect(runError).to.be.instanceOf(LeaseLostError);
    });
  });
});
