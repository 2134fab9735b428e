import { expect } from 'chai';
import { TooManyDeliveriesError, processBatches, processRecords } from '../../../src/index.js';
import { CrashingFleet, checkpointOf, never, records, text } from '../../support/crashing-fleet.js';
import { MemoryGroup } from '../../support/memory-group.js';

// Design §9.3 "Poison that crashes the process": the checkpoint row counts the deliveries of the
// records after its checkpoint, across owners and restarts, so a record that kills its process
// stops looping.
describe('poison that crashes the process (a consumer group on virtual time)', function () {
  this.timeout(60_000);

  // Commits far apart: the acks of the records before the poison are never written before it kills the process.
  const slowCommits = { commitFrequencyMs: 5000, leaseTtlMs: 6000 };

  it('a record that kills its process, in the middle of a page, reaches onFailure after maxDeliveries (5) sessions; only it, and every other record is handled', async () => {
    const group = new MemoryGroup(1, slowCommits);
    const put = group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    const fleet = new CrashingFleet(group, (record) => text(record) === 'r4', records(group));
    fleet.start();
    await group.scheduler.until(() => checkpointOf(group) === put.at(-1)?.sequenceNumber, 'the checkpoint at the last record', 300_000);

    expect(fleet.errors).to.deep.equal([]);
    expect(fleet.calls.get('r4'), 'handler calls on the poison record').to.equal(5);
    expect(fleet.deadLetters.map((f) => [text(f.record), f.record.deliveryCount, (f.error as Error).name, f.attempts])).to.deep.equal([['r4', 6, 'TooManyDeliveriesError', 0]]);
    expect([...fleet.processed].sort()).to.deep.equal(['r0', 'r1', 'r2', 'r3', 'r5', 'r6', 'r7', 'r8', 'r9']);
    expect(fleet.sessions).to.have.length(6);
  });

  it('processBatches: the batch that held it, then the record alone in a batch of its own; the records after it, delivered before, one at a time', async () => {
    const group = new MemoryGroup(1, slowCommits);
    const put = group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    const batches: string[][] = [];
    const fleet = new CrashingFleet(group, (record) => text(record) === 'r5', (handle, onFailure) => processBatches(async (batch) => {
      batches.push(batch.map(text));
      await handle(batch);
    }, { maxSize: 4, scheduler: group.scheduler, maxDeliveries: 3, ...(onFailure === undefined ? {} : { onFailure }) }));
    fleet.start();
    await group.scheduler.until(() => checkpointOf(group) === put.at(-1)?.sequenceNumber, 'the checkpoint at the last record', 300_000);

    expect(fleet.errors).to.deep.equal([]);
    expect(fleet.calls.get('r5'), 'batch calls holding the poison record').to.equal(3);
    expect(fleet.deadLetters.map((f) => [text(f.record), f.record.deliveryCount])).to.deep.equal([['r5', 4]]);
    expect([...fleet.processed].sort()).to.deep.equal(['r0', 'r1', 'r2', 'r3', 'r4', 'r6', 'r7', 'r8', 'r9']);
    // The first session's batches (the reader's first page is one record: maxInFlightBytes learns
    // the records' size from it); after it died, every record it had delivered beyond its last
    // checkpoint one at a time: those before r5 again, r5 alone until dead-lettered, r6 to r9.
    const first = batches.findIndex((batch) => batch.includes('r5'));
    expect(batches[first]?.length, 'r5 first in a batch with others').to.be.greaterThan(1);
    expect(batches.slice(first + 1).every((batch) => batch.length === 1), JSON.stringify(batches)).to.equal(true);
  });

  it('without onFailure the output errors with TooManyDeliveriesError, naming the count, and the record is not acked', async () => {
    const group = new MemoryGroup(1, slowCommits);
    group.stream.putRecords(Array.from({ length: 3 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    const fleet = new CrashingFleet(group, (record) => text(record) === 'r1', (handle) => processRecords((record) => handle([record]), {
      scheduler: group.scheduler, maxDeliveries: 2,
    }), { onFailure: false });
    fleet.start();
    await group.scheduler.until(() => fleet.errors.length > 0, 'the output errors', 300_000);
    const [error] = fleet.errors;
    expect(error).to.be.instanceOf(TooManyDeliveriesError);
    expect([(error as TooManyDeliveriesError).deliveryCount, (error as TooManyDeliveriesError).maxDeliveries]).to.deep.equal([3, 2]);
    expect(fleet.calls.get('r1')).to.equal(2);
  });

  it('a record it receives long after its last write to the row waits for a write recording it before its handler call: maxDeliveries (5) calls, then onFailure', async () => {
    const group = new MemoryGroup(1, slowCommits);
    group.stream.putRecords([{ partitionKey: 'k', data: 'r0' }]);
    const fleet = new CrashingFleet(group, (record) => text(record) === 'r1', records(group));
    fleet.start();
    await group.scheduler.until(() => checkpointOf(group) !== undefined && fleet.processed.has('r0'), 'r0 handled and committed', 60_000);
    // Long after the session's writes: at the tip, the poison arrives on its own.
    await group.scheduler.advanceBy(1000);
    const [poison] = group.stream.putRecords([{ partitionKey: 'k', data: 'r1' }]);
    await group.scheduler.until(() => checkpointOf(group) === poison?.sequenceNumber, 'the checkpoint past the poison', 300_000);
    expect(fleet.calls.get('r1')).to.equal(5);
    expect(fleet.deadLetters.map((f) => f.record.deliveryCount)).to.deep.equal([6]);
  });

  it('a graceful hand-off is not counted: the next owner delivers the record it was handling once more, deliveryCount 1', async () => {
    const group = new MemoryGroup(1, { ...slowCommits, shutdownTimeoutMs: 1000 });
    group.stream.putRecords([{ partitionKey: 'k', data: 'r0' }]);
    const counts: number[] = [];
    const first = group.join('a', { pipeline: processRecords(async (record) => { counts.push(record.deliveryCount); await never(); }, { scheduler: group.scheduler }) });
    await group.scheduler.until(() => counts.length === 1, 'the first delivery', 30_000);
    await group.stop(first);
    group.join('b', { pipeline: processRecords((record) => { counts.push(record.deliveryCount); }, { scheduler: group.scheduler }) });
    await group.scheduler.until(() => counts.length === 2, 'the second delivery', 30_000);
    expect(counts).to.deep.equal([1, 1]);
  });
});
