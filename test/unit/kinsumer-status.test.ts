// consumer.status(), pause() and resume() (design §7.4), on virtual time with the real client over
// the in-memory backends.
import { expect } from 'chai';
import type { KinsumerEvent, KinsumerRecord } from '../../src/types.js';
import { FAST, MemoryGroup } from '../support/memory-group.js';

const text = (record: KinsumerRecord): string => new TextDecoder().decode(record.data);

describe('consumer.status() (virtual time)', function () {
  this.timeout(30_000);

  it('a synchronous snapshot: identity, state, leadership, members and, per held shard, token, checkpoint, in-flight, pending, lag and times', async () => {
    const group = new MemoryGroup(2);
    group.stream.putRecords(Array.from({ length: 20 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    const receivedAt = new Map<string, number>();
    // r3 is never acked: its shard keeps one record in flight and everything after it pending.
    const member = group.join('a', {
      extra: { clientName: 'worker-a' },
      ack: (record) => { receivedAt.set(text(record), group.scheduler.now()); return text(record) !== 'r3'; },
    });
    // The in-memory stream answers DescribeStreamSummary at once: its largest record is known from the start.
    expect(member.kinsumer.status()).to.deep.equal({
      clientId: 'a', clientName: 'worker-a', state: 'starting', leader: false, members: 0, shards: [], streams: [], connections: {}, maxRecordSizeKiB: 1024,
    });

    await group.scheduler.until(() => member.received.length === 20, 'every record', 20_000);
    await group.scheduler.advanceBy(2 * FAST.commitFrequencyMs);
    const tokens = new Map(member.events.flatMap((e) => (e.type === 'lease-acquired' ? [[e.shardId, e.fencingToken] as const] : [])));
    const status = member.kinsumer.status();
    expect(status).to.include({ clientId: 'a', clientName: 'worker-a', state: 'running', leader: true, members: 1 });
    expect(status.shards.map((s) => s.shardId)).to.deep.equal(['shardId-000000000000', 'shardId-000000000001']);
    for (const shard of status.shards) {
      const records = member.received.filter((r) => r.shardId === shard.shardId);
      const gap = records.findIndex((r) => text(r) === 'r3');
      const acked = gap < 0 ? records : records.slice(0, gap);
      const last = records.at(-1);
      const row = group.checkpoints.row(shard.shardId);
      expect(shard.fencingToken).to.equal(tokens.get(shard.shardId));
      expect(shard.checkpoint).to.deep.equal(acked.length === 0 ? undefined : { sequenceNumber: acked.at(-1)?.sequenceNumber });
      expect(row?.checkpoint).to.deep.equal(acked.length === 0 ? undefined : { type: 'position', position: { sequenceNumber: acked.at(-1)?.sequenceNumber } });
      expect(shard.inFlight).to.equal(gap < 0 ? 0 : 1);
      expect(shard.pending).to.equal(gap < 0 ? 0 : records.length - gap);
      expect(shard.millisBehindLatest).to.equal(0);
      expect(shard.lastRecordAt?.getTime()).to.equal(last === undefined ? undefined : receivedAt.get(text(last)));
      if (acked.length > 0) expect(shard.lastCheckpointAt).to.be.instanceOf(Date);
    }
    expect(status.shards.filter((s) => s.inFlight === 1)).to.have.length(1);
    // One stream: every shard of it, and its sum.
    expect(status.shards.map((s) => s.streamName)).to.deep.equal(['memory', 'memory']);
    expect(status.streams).to.deep.equal([{
      streamName: 'memory', shards: 2, pending: status.shards.reduce((n, s) => n + s.pending, 0), inFlight: 1, millisBehindLatest: 0,
    }]);

    group.join('b');
    await group.scheduler.until(() => member.kinsumer.status().members === 2, 'a second member seen', 10_000);

    const stopping = member.kinsumer.stop();
    expect(member.kinsumer.status().state).to.equal('stopping');
    let stopped = false;
    void stopping.then(() => { stopped = true; });
    await group.scheduler.until(() => stopped, 'stop()', 10_000);
    expect(member.kinsumer.status()).to.deep.include({ state: 'stopped', leader: false, shards: [] });
    await group.members[1]?.kinsumer.stop();
  });

  it('millisBehindLatest is what the last GetRecords said: a shard read behind its tip shows its lag', async () => {
    const group = new MemoryGroup(1, { maxInFlightRecords: 5 });
    group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    await group.scheduler.advanceBy(60_000);
    // Nothing acked: reading stops at 5 of 10 records, a minute behind the tip.
    const member = group.join('a', { ack: () => false });
    await group.scheduler.until(() => member.received.length === 5, 'five records', 10_000);
    const [shard] = member.kinsumer.status().shards;
    expect(shard?.millisBehindLatest).to.be.at.least(60_000);
    expect(shard).to.include({ inFlight: 5, pending: 5, checkpoint: undefined });
    let stopped = false;
    void member.kinsumer.stop().then(() => { stopped = true; });
    await group.scheduler.until(() => stopped, 'stop()', 10_000);
  });
});

describe('pause() and resume() (virtual time)', function () {
  this.timeout(30_000);

  it('while paused no GetRecords is sent and the lease is kept over several TTLs; resumed, reading goes on where it stopped', async () => {
    const group = new MemoryGroup(1);
    group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    const member = group.join('a');
    await group.scheduler.until(() => member.received.length === 10, 'the first ten', 10_000);
    const calls: string[] = [];
    group.stream.onCall((call) => calls.push(call.operation));
    member.kinsumer.pause();
    expect(member.kinsumer.status().state).to.equal('paused');
    group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: 'k', data: `r${10 + i}` })));
    await group.scheduler.advanceBy(4 * FAST.leaseTtlMs);
    expect(calls.filter((c) => c === 'getRecords')).to.deep.equal([]);
    expect(member.received).to.have.length(10);
    expect(member.events.filter((e) => e.type === 'lease-lost' || e.type === 'lease-acquired').map((e) => e.type)).to.deep.equal(['lease-acquired']);
    expect(group.owners().get('shardId-000000000000')).to.equal('a');

    member.kinsumer.resume();
    expect(member.kinsumer.status().state).to.equal('running');
    await group.scheduler.until(() => member.received.length === 20, 'the next ten', 10_000);
    expect(member.received.map(text)).to.deep.equal(Array.from({ length: 20 }, (_, i) => `r${i}`));
    await member.kinsumer.stop();
  });

  it('a shard captured while paused starts paused: its lease is taken and kept, nothing read until resume()', async () => {
    const group = new MemoryGroup(2);
    group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    const calls: string[] = [];
    group.stream.onCall((call) => calls.push(call.operation));
    const member = group.join('a');
    member.kinsumer.pause();
    await group.scheduler.advanceBy(3 * FAST.leaseTtlMs);
    expect(group.counts().get('a')).to.equal(2);
    expect(calls.filter((c) => c === 'getRecords' || c === 'getShardIterator')).to.deep.equal([]);
    expect(member.kinsumer.status().state).to.equal('paused');
    member.kinsumer.resume();
    await group.scheduler.until(() => member.received.length === 10, 'every record', 10_000);
    const lost: KinsumerEvent[] = member.events.filter((e) => e.type === 'lease-lost');
    expect(lost).to.deep.equal([]);
    await member.kinsumer.stop();
  });
});
