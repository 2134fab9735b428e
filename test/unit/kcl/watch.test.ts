// The fleet watch on virtual time: a KCL worker renews every lease it holds every
// failoverTime/3 - epsilon (3308 ms with the defaults), so a watch of the default 15000 ms always
// sees a live fleet's counters move, and a stopped fleet's never.
import { expect } from 'chai';
import { type Observable, asyncScheduler, defer, firstValueFrom, of } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { DEFAULT_KCL_WATCH_MS } from '../../../src/kcl/kcl-options.js';
import { movedKeys, readTwice } from '../../../src/kcl/watch.js';

/** A KCL fleet's lease counters on virtual time: each lease renewed every `renewMs`, from its own phase, until `stopsAtMs`. */
function fleet(scheduler: TestScheduler, leases: readonly string[], renewMs: number, stopsAtMs = Number.POSITIVE_INFINITY, phaseMs = 0): () => Observable<Map<string, string>> {
  return () => defer(() => {
    const now = Math.min(scheduler.now(), stopsAtMs);
    return of(new Map(leases.map((key, i) => [key, String(Math.floor((now + phaseMs + i * 1000) / renewMs))])));
  });
}

function watchOn(read: () => Observable<Map<string, string>>, scheduler: TestScheduler, watchMs = DEFAULT_KCL_WATCH_MS): { moved: string[]; watchedMs: number } {
  let result: { moved: string[]; watchedMs: number } | undefined;
  scheduler.run(() => {
    readTwice(read, (first) => (first.size > 0 ? `${first.size} leases` : undefined), watchMs, scheduler)
      .subscribe(({ before, after, watchedMs }) => { result = { moved: [...movedKeys(before, after)].sort(), watchedMs }; });
  });
  if (result === undefined) throw new Error('the watch did not end');
  return result;
}

describe('fleet watch (virtual time)', () => {
  const scheduler = () => new TestScheduler((a, b) => { expect(a).to.deep.equal(b); });

  it('sees every lease of a live fleet move within the default watch, whatever the phase of its renewals', () => {
    for (let phaseMs = 0; phaseMs < 3308; phaseMs += 250) {
      const s = scheduler();
      const outcome = watchOn(fleet(s, ['shardId-000000000000', 'shardId-000000000001'], 3308, Number.POSITIVE_INFINITY, phaseMs), s);
      expect(outcome, `renewals at phase ${phaseMs} ms`).to.deep.equal({ moved: ['shardId-000000000000', 'shardId-000000000001'], watchedMs: DEFAULT_KCL_WATCH_MS });
    }
  });

  it('sees nothing move in a stopped fleet', () => {
    const s = scheduler();
    expect(watchOn(fleet(s, ['shardId-000000000000'], 3308, 0), s)).to.deep.equal({ moved: [], watchedMs: DEFAULT_KCL_WATCH_MS });
  });

  it('sees a lease that came or went as moved (shard sync created one, cleanup deleted one)', () => {
    expect([...movedKeys(new Map([['a', '1'], ['b', '1']]), new Map([['a', '1'], ['c', '0']]))].sort()).to.deep.equal(['b', 'c']);
  });

  it('does not wait when there is nothing to watch', () => {
    const s = scheduler();
    expect(watchOn(() => of(new Map<string, string>()), s)).to.deep.equal({ moved: [], watchedMs: 0 });
  });

  it('a watch shorter than the fleet\'s renewal interval can miss it: why --watch-ms must exceed failoverTimeMillis / 3', () => {
    // failoverTimeMillis 60000: renewals every ~20 s; a 15 s watch that falls between two of them sees nothing.
    const s = scheduler();
    expect(watchOn(fleet(s, ['shardId-000000000000'], 20_000), s).moved).to.deep.equal([]);
    const t = scheduler();
    expect(watchOn(fleet(t, ['shardId-000000000000'], 20_000), t, 21_000).moved).to.deep.equal(['shardId-000000000000']);
  });

  it('waits for onWatch before the wait starts (a test drives the fleet from it)', async () => {
    const order: string[] = [];
    let reads = 0;
    const result = await firstValueFrom(readTwice(() => defer(() => { reads += 1; order.push(`read ${reads}`); return of(reads); }), () => 'x', 1, asyncScheduler, async () => {
      order.push('onWatch start');
      await new Promise((resolve) => setImmediate(resolve));
      order.push('onWatch end');
    }));
    expect(order).to.deep.equal(['read 1', 'onWatch start', 'onWatch end', 'read 2']);
    expect(result).to.deep.include({ before: 1, after: 2 });
  });
});
