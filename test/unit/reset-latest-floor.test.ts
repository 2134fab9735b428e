import { expect } from 'chai';
import { firstValueFrom } from 'rxjs';
import type { KinsumerRecord } from '../../src/types.js';
import { MemoryGroup } from '../support/memory-group.js';

const dataOf = (records: readonly KinsumerRecord[]) => records.map((r) => new TextDecoder().decode(r.data));

// Found by the simulator (seeds 67, 68, 104): a LATEST start is kept as AT_TIMESTAMP of its capture
// less a five-minute margin for client clock skew, so a hand-off before the first new record reads
// from five minutes back. After an operator's reset to LATEST, that re-delivered records the group
// had acked before the reset — after a graceful hand-off, where nothing acked may come again. A reset
// to LATEST now keeps the checkpoint it replaces as a floor: nothing at or before it is read again.
describe('a reset to LATEST keeps the replaced checkpoint as a floor (virtual time)', function () {
  this.timeout(60_000);

  it('a graceful hand-off after a reset to LATEST delivers none of the records acked before the reset', async () => {
    const group = new MemoryGroup(1);
    const [shard] = group.stream.shardIds() as [string];
    const put = group.stream.putRecords(['r0', 'r1', 'r2'].map((data) => ({ partitionKey: 'k', data })));
    const a = group.join('a');
    const last = put.at(-1)?.sequenceNumber;
    const checkpointed = () => a.events.some((e) => e.type === 'checkpoint' && e.checkpoint?.sequenceNumber === last);
    await group.scheduler.until(() => dataOf(a.received).length === 3 && checkpointed(), 'a reads and commits r0-r2', 20_000);
    // The operator: every shard to LATEST, while a holds it (forced).
    await firstValueFrom(a.store.resetCheckpoint(shard, { type: 'LATEST' }, { force: true }), { defaultValue: undefined });
    await group.scheduler.until(() => a.events.filter((e) => e.type === 'lease-acquired').length === 2, 'a captures again, at LATEST', 20_000);
    await group.scheduler.advanceBy(1_000);
    // A deploy before any new record: a hands the shard to b gracefully.
    let stopped = false;
    void a.kinsumer.stop().then(() => { stopped = true; });
    await group.scheduler.until(() => stopped, 'a stops', 20_000);
    const b = group.join('b');
    await group.scheduler.until(() => group.owners().get(shard) === 'b', 'b captures', 20_000);
    group.stream.putRecords([{ partitionKey: 'k', data: 'after' }]);
    await group.scheduler.until(() => dataOf(b.received).includes('after'), 'b reads the new record', 20_000);
    expect(dataOf(b.received)).to.deep.equal(['after']);
    await b.kinsumer.stop();
  });
});
