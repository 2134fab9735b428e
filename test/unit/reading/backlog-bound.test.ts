import { expect } from 'chai';
import { MemoryGroup, type Member } from '../../support/memory-group.js';

const text = (data: Uint8Array) => new TextDecoder().decode(data);

/** stop() waits (the drain bound) for an ack that never comes: let virtual time run meanwhile. */
async function stopOnVirtualTime(group: MemoryGroup, member: Member): Promise<void> {
  let stopped = false;
  void member.kinsumer.stop().then(() => { stopped = true; });
  await group.scheduler.until(() => stopped, 'stop() to resolve', 20_000);
}

// R1, from outside (review-2 Appendix A1): one record the application never acks. Records acked
// after it cannot move the checkpoint past it, so they stay pending; reading must stop at
// maxInFlightRecords pending records instead of reading the whole shard into memory.
describe('backlog bound: a record that is never acked (virtual time, whole client)', function () {
  this.timeout(30_000);

  it('with maxInFlightRecords 100 and the first record never acked, reads and emits no more than 100 of 2,000 records', async () => {
    const group = new MemoryGroup(1, { maxInFlightRecords: 100 });
    const a = group.join('a', { ack: (record) => text(record.data) !== 'r0' });
    for (let batch = 0; batch < 4; batch += 1) {
      group.stream.putRecords(Array.from({ length: 500 }, (_, i) => ({ partitionKey: 'k', data: `r${batch * 500 + i}` })));
    }
    await group.scheduler.advanceBy(60_000);
    expect(a.received.length).to.equal(100);
    expect(a.received.map((r) => text(r.data))).to.deep.equal(Array.from({ length: 100 }, (_, i) => `r${i}`));
    // The checkpoint cannot pass r0: nothing is stored, and a crash now would replay at most these 100.
    expect(group.checkpoints.rows()[0]?.checkpoint).to.equal(undefined);
    await stopOnVirtualTime(group, a);
  });

  it('reports the stall on events$ (shard-stalled naming r0) and logs it at warn, every stallWarningMs', async () => {
    const warnings: Array<[object, string | undefined]> = [];
    const logger = { debug() {}, info() {}, warn: (obj: object, msg?: string) => { warnings.push([obj, msg]); }, error() {} };
    const group = new MemoryGroup(1, { maxInFlightRecords: 100, stallWarningMs: 10_000 });
    const a = group.join('a', { ack: (record) => text(record.data) !== 'r0', extra: { logger } });
    const [first] = group.stream.putRecords(Array.from({ length: 300 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    await group.scheduler.until(() => a.received.length === 100, '100 records', 10_000);
    await group.scheduler.advanceBy(35_000);
    const stalls = a.events.filter((e) => e.type === 'shard-stalled');
    expect(stalls.length).to.equal(3);
    expect(stalls.map((e) => e.type === 'shard-stalled' && [e.shardId, e.oldest, e.pending])).to.deep.equal(
      Array.from({ length: 3 }, () => [first?.shardId, { sequenceNumber: first?.sequenceNumber }, 100]),
    );
    expect(stalls.map((e) => e.type === 'shard-stalled' && e.sinceMs)).to.deep.equal([10_000, 20_000, 30_000]);
    const logged = warnings.filter(([, msg]) => msg?.includes('stalled') === true);
    expect(logged).to.have.length(3);
    expect(logged[0]?.[0]).to.deep.include({ shardId: first?.shardId, pending: 100, sinceMs: 10_000 });
    await stopOnVirtualTime(group, a);
  });
});
