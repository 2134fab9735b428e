import { expect } from 'chai';
import { NEVER } from 'rxjs';
import type { StreamPort } from '../../../src/ports/stream.js';
import type { KinsumerRecord } from '../../../src/types.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';

const text = (record: KinsumerRecord) => new TextDecoder().decode(record.data);
const dataOf = (records: readonly KinsumerRecord[]) => records.map(text);

// R2 (review-2 Appendix A2): a shard first read from LATEST (or a timestamp) must keep that start
// when it changes hands before anything was acked. Otherwise the next owner starts at a new
// LATEST and every record put in between is skipped: lost records at every deploy of a quiet stream.
describe('LATEST hand-off before the first ack (virtual time, whole clients)', function () {
  this.timeout(60_000);

  it('graceful: a record put between the release and the new owner\'s capture is delivered by the new owner', async () => {
    const group = new MemoryGroup(2, { initialPosition: 'LATEST' });
    const a = group.join('a');
    await group.scheduler.until(() => group.counts().get('a') === 2, 'a holds both shards', 20_000);
    let handedOff: string | undefined;
    a.kinsumer.events$.subscribe((event) => {
      if (event.type !== 'lease-released' || handedOff !== undefined) return;
      handedOff = event.shardId;
      group.stream.putRecords([{ partitionKey: 'k', data: 'gap' }], { shardId: event.shardId });
    });
    const b = group.join('b');
    await group.scheduler.until(() => handedOff !== undefined && group.owners().get(handedOff) === 'b', 'b captures the released shard', 20_000);
    group.stream.putRecords([{ partitionKey: 'k', data: 'after' }], { shardId: handedOff ?? '' });
    await group.scheduler.until(() => dataOf(b.received).includes('after'), 'b reads on', 20_000);
    expect(dataOf(b.received)).to.deep.equal(['gap', 'after']);
    await group.stopAll();
  });

  // R12 (review-3 scratch test latest-prestart): the start kept for a LATEST group was the capture's
  // client clock less five minutes, so a hand-off before the first record delivered what was put in
  // the five minutes before the group started. It is now the stream's clock at the first iterator.
  it('R12: a fresh LATEST group, a graceful hand-off before the first record: records put a minute before it started are not delivered', async () => {
    const group = new MemoryGroup(1, { initialPosition: 'LATEST' });
    const [shard] = group.stream.shardIds() as [string];
    group.stream.putRecords(['old0', 'old1', 'old2'].map((data) => ({ partitionKey: 'k', data })));
    await group.scheduler.advanceBy(60_000);
    const a = group.join('a');
    await group.scheduler.until(() => group.owners().get(shard) === 'a', 'a captures', 20_000);
    await group.scheduler.advanceBy(2_000);
    await group.stop(a);
    const b = group.join('b');
    await group.scheduler.until(() => group.owners().get(shard) === 'b', 'b captures', 20_000);
    group.stream.putRecords([{ partitionKey: 'k', data: 'new' }]);
    await group.scheduler.until(() => dataOf(b.received).includes('new'), 'b reads the new record', 20_000);
    expect([dataOf(a.received), dataOf(b.received)], 'a, b').to.deep.equal([[], ['new']]);
    await b.kinsumer.stop();
  });

  // Found by the simulator's 2,000-seed run (seeds 346, 490, 865, 1162: before-start): the start
  // kept at capture was the client's clock less five minutes until the first iterator's answer
  // raised it, a write of its own. An owner that crashed or froze in between handed the
  // five-minute-early start on. The kept start is now taken from the capture's answer (DynamoDB's
  // Date), a moment before the iterator was asked for.
  it('R12: an owner frozen after its LATEST capture, before its first iterator answered: the next owner delivers no record put a minute before', async () => {
    const group = new MemoryGroup(1, { initialPosition: 'LATEST' });
    const [shard] = group.stream.shardIds() as [string];
    group.stream.putRecords(['old0', 'old1'].map((data) => ({ partitionKey: 'k', data })));
    await group.scheduler.advanceBy(60_000);
    const a = group.join('a', {
      wrap: (ports) => ({ ...ports, stream: Object.assign(Object.create(ports.stream) as StreamPort, { getShardIterator: () => NEVER }) }),
    });
    await group.scheduler.until(() => group.checkpoints.row(shard)?.checkpoint?.type === 'AT_TIMESTAMP', 'a captures and keeps its start', 20_000);
    a.pause();
    const b = group.join('b');
    await group.scheduler.until(() => group.owners().get(shard) === 'b', 'b takes the shard over', 4 * FAST.leaseTtlMs);
    group.stream.putRecords([{ partitionKey: 'k', data: 'new' }]);
    await group.scheduler.until(() => dataOf(b.received).includes('new'), 'b reads the new record', 20_000);
    expect(dataOf(b.received)).to.deep.equal(['new']);
    await b.kinsumer.stop();
  });

  it('crash: a record put while the owner is frozen is delivered after the take-over', async () => {
    const group = new MemoryGroup(1, { initialPosition: 'LATEST' });
    const a = group.join('a');
    await group.scheduler.until(() => group.counts().get('a') === 1, 'a holds the shard', 20_000);
    await group.scheduler.advanceBy(1000);
    a.pause();
    group.stream.putRecords([{ partitionKey: 'k', data: 'while-frozen' }]);
    const b = group.join('b');
    await group.scheduler.until(() => group.owners().get('shardId-000000000000') === 'b', 'b takes the shard over', 4 * FAST.leaseTtlMs);
    group.stream.putRecords([{ partitionKey: 'k', data: 'after' }]);
    await group.scheduler.until(() => dataOf(b.received).includes('after'), 'b reads on', 20_000);
    expect(dataOf(b.received)).to.deep.equal(['while-frozen', 'after']);
    expect(dataOf(a.received)).to.deep.equal([]);
    await b.kinsumer.stop();
  });

  for (const skewMs of [120_000, -120_000]) {
    it(`crash with the first owner's clock ${skewMs > 0 ? 'ahead' : 'behind'} by ${Math.abs(skewMs) / 60_000} minutes: nothing put while it was frozen is skipped`, async () => {
      const group = new MemoryGroup(1, { initialPosition: 'LATEST' });
      const a = group.join('a', { skewMs: skewMs });
      await group.scheduler.until(() => group.counts().get('a') === 1, 'a holds the shard', 20_000);
      await group.scheduler.advanceBy(1000);
      a.pause();
      group.stream.putRecords([{ partitionKey: 'k', data: 'while-frozen' }]);
      const b = group.join('b');
      // Until the lease-expiry rule stops comparing clocks (R4), a clock ahead also delays the take-over.
      await group.scheduler.until(() => group.owners().get('shardId-000000000000') === 'b', 'b takes the shard over', Math.max(0, skewMs) + 4 * FAST.leaseTtlMs, 500);
      group.stream.putRecords([{ partitionKey: 'k', data: 'after' }]);
      await group.scheduler.until(() => dataOf(b.received).includes('after'), 'b reads on', 20_000);
      expect(dataOf(b.received)).to.deep.equal(['while-frozen', 'after']);
      await b.kinsumer.stop();
    });
  }

  it('crash after a record was delivered and not acked: the start is taken from the stream\'s own arrival time, whatever the owner\'s clock says', async () => {
    // Ten minutes ahead: beyond any margin a client clock could be given. The first record's
    // arrival timestamp (the stream's clock) replaces the guess.
    const skewMs = 600_000;
    const group = new MemoryGroup(1, { initialPosition: 'LATEST' });
    const a = group.join('a', { skewMs: skewMs, ack: () => false });
    await group.scheduler.until(() => group.counts().get('a') === 1, 'a holds the shard', 20_000);
    group.stream.putRecords([{ partitionKey: 'k', data: 'first' }]);
    await group.scheduler.until(() => a.received.length === 1, 'a delivers the first record', 20_000);
    await group.scheduler.advanceBy(1000);
    a.pause();
    group.stream.putRecords([{ partitionKey: 'k', data: 'while-frozen' }]);
    const b = group.join('b');
    await group.scheduler.until(() => group.owners().get('shardId-000000000000') === 'b', 'b takes the shard over', skewMs + 4 * FAST.leaseTtlMs, 1000);
    await group.scheduler.until(() => b.received.length >= 2, 'b reads', 20_000);
    expect(dataOf(b.received)).to.deep.equal(['first', 'while-frozen']);
    await b.kinsumer.stop();
  });

  it('a timestamp start is stored with the first lease write, before anything was read', async () => {
    const timestamp = new Date(1_764_000_000_000 - 3_600_000);
    const group = new MemoryGroup(1, { initialPosition: { timestamp } });
    const a = group.join('a');
    await group.scheduler.until(() => group.counts().get('a') === 1, 'a holds the shard', 20_000);
    await group.scheduler.advanceBy(100);
    expect(group.checkpoints.rows()[0]?.checkpoint).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp });
    await a.kinsumer.stop();
  });
});
