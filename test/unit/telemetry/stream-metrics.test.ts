// A group that reads several streams, on virtual time (the real client over in-memory streams):
// every metric of a shard carries the shard's own stream (`kinsumer.stream`), leases held are
// counted per stream, and records and status() name their stream.
import { expect } from 'chai';
import { parseShardKey } from '../../../src/ports/stream-key.js';
import { MemoryStreams } from '../../../src/testing/memory-streams.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';
import { testMeter, valueOf } from '../../support/otel.js';

describe('metrics and status of a group over many streams (virtual time)', function () {
  this.timeout(30_000);

  it('kinsumer.stream is each shard\'s stream; leases held per stream; status() per stream', async () => {
    const meter = testMeter();
    const group = new MemoryGroup(1, { meterProvider: meter.provider });
    const streams = new MemoryStreams({ clock: () => group.scheduler.now() });
    streams.create('orders', { shardCount: 2 }).putRecords(Array.from({ length: 6 }, (_, i) => ({ partitionKey: `k${i}`, data: `o${i}` })));
    streams.create('payments').putRecords([{ partitionKey: 'k', data: 'p0' }, { partitionKey: 'k', data: 'p1' }]);
    const member = group.join('a', {
      extra: { streamName: undefined, streams: ['orders', 'payments'], streamCheckFrequencyMs: FAST.leaderActionFrequencyMs } as never,
      wrap: (ports) => ({ ...ports, stream: streams.port({ streams: ['orders', 'payments'], elapsedNow: () => group.scheduler.now(), scheduler: group.scheduler }) }),
    });
    await group.scheduler.until(() => member.received.length === 8, 'every record of both streams', 20_000);
    await group.scheduler.advanceBy(3 * FAST.commitFrequencyMs);

    const read = await meter.collect();
    const status = member.kinsumer.status();
    expect(status.shards).to.have.length(3);
    for (const { shardId, streamName } of status.shards) {
      expect(streamName).to.equal(parseShardKey(shardId)?.stream.streamName);
      const delivered = member.received.filter((r) => r.shardId === shardId);
      expect(delivered.every((r) => r.streamName === streamName), shardId).to.equal(true);
      expect(valueOf(read.get('kinsumer.records.delivered'), { 'kinsumer.stream': streamName, 'kinsumer.shard_id': shardId }), shardId).to.equal(delivered.length);
    }
    expect(read.get('kinsumer.leases.held')?.map((p) => [p.attributes['kinsumer.stream'], p.value]).sort()).to.deep.equal([['orders', 2], ['payments', 1]]);
    expect(status.streams.map((s) => [s.streamName, s.shards, s.pending])).to.deep.equal([['orders', 2, 0], ['payments', 1, 0]]);
    await group.stop(member);
  });
});
