import { expect } from 'chai';
import type { RawRecord } from '../../src/ports/stream.js';
import { unpackRecords } from '../../src/reading/unpack-page.js';
import { aggregate } from '../support/kpl-aggregate.js';
import type { ProcessView } from './checker-state.js';
import { type MemoryHost, MemoryProbe } from './memory-probe.js';

// The memory probe on hand-made heaps (test/sim/checker.test.ts has its delivered-record rules):
// user records made of an aggregate and never delivered count (R18), and a count over the bound is
// taken again after the event loop turned before it fails (review-4 §2), while what stays held
// fails every round.

const MAX_IN_FLIGHT = 2;
const BOUND = 2 * MAX_IN_FLIGHT;

class Host implements MemoryHost {
  checks = 0;
  readonly stats = { memoryChecks: 0, peakRetainedPercent: 0 };
  readonly failures: string[] = [];
  fail(_invariant: 'retained-memory', _atMs: number, message: string): void {
    this.failures.push(message);
  }
}

const process: ProcessView = { label: 'a#1', clientId: 'a', skewMs: 0, status: () => 'running' };
let shards = 0;

/** Watches `records` as delivered (in a function of its own: a suspended test's frame keeps no loop variable alive). */
function watchAll(probe: MemoryProbe, shardId: string, records: readonly object[]): void {
  for (const record of records) probe.watch(process, shardId, record);
}

const records = (count: number) => Array.from({ length: count }, (_, i) => ({ i }));

/** The user records a reader makes of an aggregate of `count` put to `shardId` (as the producer puts it, watched). */
function unpacked(probe: MemoryProbe, shardId: string, count: number): object[] {
  const bytes = probe.aggregateBytes(aggregate(Array.from({ length: count }, (_, i) => ({ partitionKey: 'k', data: `u${i}` }))).data);
  probe.aggregatePut(shardId, bytes);
  const raw: RawRecord = { sequenceNumber: '1000', partitionKey: 'k', data: bytes, approximateArrivalTimestamp: new Date(0) };
  return unpackRecords([raw], undefined, { shardId, leaseSignal: undefined }).records;
}

/**
 * Runs `release` between the probe's first collection and its second: the probe collects right
 * after one turn of the event loop; an immediate queued from an immediate runs in the next turn,
 * before the probe's own second turn (queued after it) and its pause.
 */
const betweenCollections = (release: () => void) => setImmediate(() => setImmediate(release));

describe('the simulator\'s memory probe', function () {
  this.timeout(20_000);

  it('counts the user records a reader made of an aggregate and never delivered: at most the room under maxInFlightRecords (R18)', async () => {
    const shardId = `s${(shards += 1)}`;
    const host = new Host();
    const probe = new MemoryProbe(host, MAX_IN_FLIGHT);
    const page = unpacked(probe, shardId, MAX_IN_FLIGHT);
    await probe.measure(0);
    expect(host.failures, 'a page of the whole room').to.deep.equal([]);
    page.push(...unpacked(probe, shardId, 1));
    await probe.measure(0);
    expect(host.failures).to.have.length(1);
    expect(host.failures[0]).to.match(new RegExp(`the readers of ${shardId} keep ${MAX_IN_FLIGHT + 1} user records of KPL aggregates reachable that were never delivered`));
    expect(page).to.have.length(MAX_IN_FLIGHT + 1);
  });

  it('delivered records count once, and with the undelivered ones at most 2 × maxInFlightRecords', async () => {
    const shardId = `s${(shards += 1)}`;
    const host = new Host();
    const probe = new MemoryProbe(host, MAX_IN_FLIGHT);
    const delivered = unpacked(probe, shardId, BOUND - 1);
    watchAll(probe, shardId, delivered);
    const waiting = unpacked(probe, shardId, 1);
    await probe.measure(0);
    expect(host.failures, 'the delivered ones are not counted again as undelivered').to.deep.equal([]);
    waiting.push(...unpacked(probe, shardId, 1));
    await probe.measure(0);
    expect(host.failures.map((f) => /keep 2 user records .* never delivered .* beside 3 delivered and kept/.test(f))).to.deep.equal([true]);
    expect([delivered.length, waiting.length]).to.deep.equal([BOUND - 1, 2]);
  });

  it('garbage one collection leaves is collected again after the event loop turned: no failure', async () => {
    const shardId = `s${(shards += 1)}`;
    const host = new Host();
    const probe = new MemoryProbe(host, MAX_IN_FLIGHT);
    // Held past the first collection, let go before the next (no simulated step between).
    let held: object[] | undefined = records(3 * BOUND);
    watchAll(probe, shardId, held);
    betweenCollections(() => { held = undefined; });
    await probe.measure(0);
    expect(host.failures).to.deep.equal([]);
    expect(held).to.equal(undefined);
  });

  it('a record held through every collection fails, with the first count beside the last', async () => {
    const shardId = `s${(shards += 1)}`;
    const host = new Host();
    const probe = new MemoryProbe(host, MAX_IN_FLIGHT);
    const kept = records(BOUND + 1);
    // Held through the first collection only: the first count is higher.
    let briefly: object[] | undefined = records(2);
    watchAll(probe, shardId, kept);
    watchAll(probe, shardId, briefly);
    betweenCollections(() => { briefly = undefined; });
    await probe.measure(0);
    expect(host.failures).to.have.length(1);
    expect(host.failures[0]).to.match(new RegExp(`a#1 keeps ${BOUND + 1} records of ${shardId} reachable .*; ${BOUND + 3} at the first of 3 collections, ${BOUND + 1} at the last`));
    expect([kept.length, briefly]).to.deep.equal([BOUND + 1, undefined]);
  });
});
