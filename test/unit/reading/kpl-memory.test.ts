import { expect } from 'chai';
import { aggregate } from '../../support/kpl-aggregate.js';
import { alive, collectGarbage } from '../../support/garbage.js';
import { MemoryGroup } from '../../support/memory-group.js';
import { watchViews, watchableBytes } from '../../support/watched-bytes.js';

// R18 (review-4): the bound "at most 2 × maxInFlightRecords records of a shard reachable" holds for
// KPL aggregates too. A GetRecords page asks for at most `room` Kinesis records, but one aggregate
// holds hundreds of user records: they must not all become records the moment the page arrives.
// Each user record the reader makes holds a view of its aggregate's bytes (its payload); the
// aggregates are put as bytes whose every view is watched (support/watched-bytes.ts), so a
// WeakRef per view, after a full collection, counts the user records alive — delivered or not.
describe('KPL aggregates and the memory bound (R18, WeakRef after GC, virtual time)', function () {
  this.timeout(30_000);

  it('keeps at most 2 × maxInFlightRecords user records of a shard alive while the application holds the first ones', async () => {
    const MAX_IN_FLIGHT = 2;
    const group = new MemoryGroup(1, { maxInFlightRecords: MAX_IN_FLIGHT });
    const views: WeakRef<Uint8Array>[] = [];
    const aggregates = [0, 1].map((a) => aggregate(Array.from({ length: 500 }, (_, i) => ({ partitionKey: `k${i % 7}`, data: `agg${a}-user${i}` }))))
      .map((put) => ({ ...put, data: watchableBytes(put.data) }));
    group.stream.putRecords(aggregates);
    for (const { data } of aggregates) watchViews(data, (view) => views.push(new WeakRef(view)));
    // The application holds what it gets and never acks: nothing moves the watermark.
    const member = group.join('a', { ack: () => false });
    await group.scheduler.until(() => member.received.length >= MAX_IN_FLIGHT, 'the first records delivered', 10_000);
    await group.scheduler.advanceBy(2_000);
    expect(member.received.map((r) => new TextDecoder().decode(r.data)), 'delivered').to.deep.equal(['agg0-user0', 'agg0-user1']);
    await collectGarbage();
    expect(alive(views), `user records alive (their payloads), ${member.received.length} held by the application`).to.be.at.most(2 * MAX_IN_FLIGHT);
    member.subscription.unsubscribe();
    await group.stop(member);
  });
});
