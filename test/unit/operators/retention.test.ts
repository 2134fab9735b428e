import { expect } from 'chai';
import { type OperatorFunction, firstValueFrom, map, pipe, tap, timer } from 'rxjs';
import { type KinsumerRecord, processBatches, processRecords } from '../../../src/index.js';
import { Fifo } from '../../../src/operators/fifo.js';
import { alive, collectGarbage } from '../../support/garbage.js';
import { MemoryGroup } from '../../support/memory-group.js';

// R11 (review-3) and design §8.3: per shard, at most 2 × maxInFlightRecords records are reachable
// after a garbage collection, whatever the operator and its concurrency — the records the reader
// holds (its last page, at most the room under maxInFlightRecords) and the ones the operator holds
// (emitted, not yet under the watermark). Counted with a WeakRef to every record delivered.
describe('memory of the processing operators (R11, WeakRef after GC, virtual time)', function () {
  this.timeout(60_000);
  const MAX_IN_FLIGHT = 50;

  it('a Fifo keeps no reference to what it handed out', async () => {
    const fifo = new Fifo<object>();
    const refs: WeakRef<object>[] = [];
    for (let i = 0; i < 100; i += 1) {
      const item = { i };
      refs.push(new WeakRef(item));
      fifo.push(item);
    }
    for (let i = 0; i < 90; i += 1) fifo.shift();
    await collectGarbage();
    expect([alive(refs), fifo.length], 'reachable, still queued').to.deep.equal([10, 10]);
  });

  // Each operator with a handler slower than the reader (it refills the room every 200 ms), so the
  // shard never runs dry and its queues are never dropped as idle; emits how many records each output settled.
  type Counting = (scheduler: MemoryGroup['scheduler']) => OperatorFunction<KinsumerRecord, number>;
  const operators: ReadonlyArray<[string, Counting]> = [
    ["processRecords, ordering 'shard'", (scheduler) => pipe(processRecords(() => firstValueFrom(timer(50, scheduler)).then(() => undefined), { scheduler }), map(() => 1))],
    ["processRecords, ordering 'partitionKey', concurrency 8", (scheduler) => pipe(processRecords(() => firstValueFrom(timer(100, scheduler)).then(() => undefined), { ordering: 'partitionKey', concurrency: 8, scheduler }), map(() => 1))],
    ["processRecords, ordering 'none', concurrency 16", (scheduler) => pipe(processRecords(() => firstValueFrom(timer(500, scheduler)).then(() => undefined), { ordering: 'none', concurrency: 16, scheduler }), map(() => 1))],
    ['processBatches, maxSize 10', (scheduler) => pipe(
      processBatches(() => firstValueFrom(timer(300, scheduler)).then(() => undefined), { maxSize: 10, maxWaitMs: 10, scheduler }),
      map((batch) => batch.records.length),
    )],
  ];

  for (const [label, operator] of operators) {
    it(`${label}: a busy shard keeps at most 2 × maxInFlightRecords records reachable`, async () => {
      const group = new MemoryGroup(1, { maxInFlightRecords: MAX_IN_FLIGHT });
      group.stream.putRecords(Array.from({ length: 3000 }, (_, i) => ({ partitionKey: `k${i % 7}`, data: `payload-${i}-${'x'.repeat(100)}` })));
      const member = group.join('a', { ack: () => false });
      const refs: WeakRef<object>[] = [];
      let processed = 0;
      const subscription = member.kinsumer.records$.pipe(
        tap((record) => { refs.push(new WeakRef(record)); }),
        operator(group.scheduler),
        tap((count) => { processed += count; }),
      ).subscribe();
      // Only the operator's pipeline holds records: the member's own subscriber (it keeps `received`) goes.
      member.subscription.unsubscribe();
      await group.scheduler.until(() => processed >= 900, '900 records processed', 120_000, 100);
      await collectGarbage();
      const reachable = alive(refs);
      expect(refs.length - processed, 'delivered and not yet processed: the shard is busy').to.be.above(0);
      expect(reachable, `records reachable of ${refs.length} delivered, ${processed} processed`).to.be.at.most(2 * MAX_IN_FLIGHT);
      subscription.unsubscribe();
      await group.stop(member);
    });
  }
});
