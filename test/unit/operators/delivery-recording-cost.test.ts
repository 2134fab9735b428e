import { expect } from 'chai';
import { processRecords } from '../../../src/index.js';
import type { KinsumerRecord } from '../../../src/types.js';
import { MemoryGroup } from '../../support/memory-group.js';

// What the delivery count (design §9.3) costs: a record's delivery is recorded in its checkpoint
// row before its handler call, but that recording rides the lane's commits (at most one per
// commitFrequencyMs while records flow), not a DynamoDB write per page read; a quiet shard's record
// is recorded at once (the lane was idle); `maxDeliveries: Infinity` records nothing and waits for
// nothing.
describe('the delivery count\'s cost: recordings ride the commits', function () {
  this.timeout(60_000);

  const options = { commitFrequencyMs: 1000, throttleDelayMs: 250, leaseTtlMs: 6000 };
  const writes = (group: MemoryGroup) => {
    const { calls } = group.members[0]?.store ?? { calls: { commit: 0, commitWithWrites: 0 } };
    return calls.commit + calls.commitWithWrites;
  };

  it('a busy shard under processRecords writes its row at most once per commitFrequencyMs while records flow (not once per page)', async () => {
    const group = new MemoryGroup(1, options);
    let handled = 0;
    group.join('a', { pipeline: processRecords(() => { handled += 1; }, { scheduler: group.scheduler }) });
    // Ten records every 250 ms: a page at every poll.
    const burst = () => group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    for (let i = 0; i < 20; i += 1) {
      burst();
      await group.scheduler.advanceBy(250);
    }
    const [fromWrites, fromHandled] = [writes(group), handled];
    for (let i = 0; i < 40; i += 1) {
      burst();
      await group.scheduler.advanceBy(250);
    }
    expect(handled - fromHandled, 'records handled in the 10 s measured').to.be.greaterThan(300);
    expect(writes(group) - fromWrites, 'row writes in 10 s of records arriving').to.be.at.most(11);
  });

  it('a quiet shard\'s record is recorded at once: handled within the idle poll (1 s) of its arrival, not a commit interval later', async () => {
    const group = new MemoryGroup(1, { ...options, commitFrequencyMs: 5000 });
    const handledAt = new Map<string, number>();
    const text = (record: KinsumerRecord) => new TextDecoder().decode(record.data);
    group.join('a', { pipeline: processRecords((record) => { handledAt.set(text(record), group.scheduler.now()); }, { scheduler: group.scheduler }) });
    group.stream.putRecords([{ partitionKey: 'k', data: 'r0' }]);
    await group.scheduler.until(() => handledAt.has('r0'), 'r0 handled', 30_000);
    await group.scheduler.advanceBy(10_000);
    const putAt = group.scheduler.now();
    group.stream.putRecords([{ partitionKey: 'k', data: 'r1' }]);
    await group.scheduler.until(() => handledAt.has('r1'), 'r1 handled', 30_000);
    expect((handledAt.get('r1') ?? 0) - putAt).to.be.at.most(1100);
  });

  it('maxDeliveries: Infinity waits for no write: the first record of a shard is handled before anything is committed', async () => {
    for (const [maxDeliveries, expected] of [[Infinity, 0], [5, 1]] as const) {
      const group = new MemoryGroup(1, options);
      let writesAtFirstCall: number | undefined;
      group.join('a', { pipeline: processRecords(() => { writesAtFirstCall ??= writes(group); }, { scheduler: group.scheduler, maxDeliveries }) });
      group.stream.putRecords([{ partitionKey: 'k', data: 'r0' }]);
      await group.scheduler.until(() => writesAtFirstCall !== undefined, 'the first handler call', 30_000);
      expect(writesAtFirstCall, `row writes before the first handler call, maxDeliveries ${maxDeliveries}`).to.equal(expected);
    }
  });
});
