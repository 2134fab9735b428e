import { expect } from 'chai';
import { NEVER, firstValueFrom } from 'rxjs';
import { createCheckpointer } from '../../../src/checkpoint/checkpointer.js';
import type { LeaseStore } from '../../../src/ports/lease-store.js';
import type { Position } from '../../../src/ports/position.js';
import { MemoryLeaseStore } from '../../../src/testing/memory-lease-store.js';
import type { KinsumerEvent } from '../../../src/types.js';
import { skewedScheduler } from '../../support/skewed-scheduler.js';
import { SteppedScheduler } from '../../support/stepped-scheduler.js';

// R10 (review-3): the checkpointer's "for how long" — the zombie guard and the stall warning — on
// a host whose wall clock steps. The scheduler's now() is that wall clock (as asyncScheduler's is
// Date.now()), its timers keep the real pace (setTimeout); the clock option's elapsedNow is the
// monotonic clock the guard must be timed on.
describe('the checkpointer on a stepping wall clock (R10, virtual time)', () => {
  const RENEW_MS = 5000;
  const SHARD = 'shardId-000000000000';
  const at = (n: number): Position => ({ sequenceNumber: `4959033827149025660855969253836157109592157598913658${String(n).padStart(4, '0')}` });

  async function setup(store: (memory: MemoryLeaseStore) => LeaseStore) {
    const base = new SteppedScheduler();
    const step = { ms: 0 };
    const wall = skewedScheduler(base, () => step.ms);
    const memory = new MemoryLeaseStore({ clientId: 'me', leaseTtlMs: 3 * RENEW_MS, now: () => base.now() });
    const lease = await firstValueFrom(memory.capture(SHARD));
    if (lease === undefined) throw new Error('capture failed');
    const events: Array<KinsumerEvent & { readonly atMs: number }> = [];
    const checkpointer = createCheckpointer({
      store: store(memory), lease, commitFrequencyMs: 1000, renewIntervalMs: RENEW_MS, stallWarningMs: 10_000,
      scheduler: wall, clock: { wallNow: () => wall.now(), elapsedNow: () => base.now() },
      emit: (event) => events.push({ ...event, atMs: base.now() }),
    });
    const running = checkpointer.run$.subscribe();
    return { base, step, checkpointer, events, stop: () => running.unsubscribe() };
  }

  it('a 60 s backward step keeps leaseConfirmed() true no longer than two renewal intervals after the last confirmed write (review scratch test 2)', async () => {
    // Partitioned: no renewal or commit ever answers.
    const { base, step, checkpointer, stop } = await setup((memory) => Object.assign(Object.create(memory) as LeaseStore, { renew: () => NEVER, commit: () => NEVER }));
    await base.advanceBy(2 * RENEW_MS - 1);
    expect(checkpointer.leaseConfirmed?.(), 'within two renewal intervals').to.equal(true);
    await base.advanceBy(1);
    expect(checkpointer.leaseConfirmed?.(), 'two renewal intervals without a confirmation').to.equal(false);
    step.ms = -60_000;
    await base.advanceBy(30_000);
    expect(checkpointer.leaseConfirmed?.(), '41 s without renewal, the wall clock stepped back 60 s').to.equal(false);
    stop();
  });

  it('a 60 s backward step delays no stall warning: shard-stalled comes stallWarningMs after the last progress', async () => {
    const { base, step, checkpointer, events, stop } = await setup((memory) => memory);
    const startMs = base.now();
    checkpointer.track(at(1));
    await base.advanceBy(1000);
    step.ms = -60_000;
    await base.advanceBy(12_000);
    expect(events.filter((e) => e.type === 'shard-stalled').map((e) => [e.type === 'shard-stalled' ? e.sinceMs : 0, e.atMs - startMs]))
      .to.deep.equal([[10_000, 10_000]]);
    stop();
  });
});
