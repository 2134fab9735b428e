// OpenTelemetry metrics (design §7.4) on virtual time: the real client over the in-memory backends,
// read through the SDK's metric reader. Every value is checked against what the test put, acked
// and saw on events$ / status().
import { readFileSync } from 'node:fs';
import { metrics } from '@opentelemetry/api';
import { expect } from 'chai';
import { NEVER, firstValueFrom, of } from 'rxjs';
import { processRecords } from '../../../src/index.js';
import type { FanOutPort, ShardEvent } from '../../../src/ports/stream.js';
import { useOtelLoader } from '../../../src/telemetry/otel-api.js';
import { MemoryLeaseStore } from '../../../src/testing/memory-lease-store.js';
import type { KinsumerEvent, KinsumerRecord } from '../../../src/types.js';
import { aliveAfterCollections } from '../../support/garbage.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';
import { type Point, testMeter, testTracer, valueOf } from '../../support/otel.js';

const text = (record: KinsumerRecord): string => new TextDecoder().decode(record.data);
const sum = (points: readonly Point[] | undefined): number => (points ?? []).reduce((total, p) => total + p.value, 0);
const STREAM = { 'kinsumer.stream': 'memory' };
const shard = (shardId: string) => ({ ...STREAM, 'kinsumer.shard_id': shardId });

/** Checkpoints written, per shard, as events$ reported them (a commit or a release that stored a position). */
function checkpointsByShard(events: readonly KinsumerEvent[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const event of events) {
    if ((event.type === 'checkpoint' || event.type === 'lease-released') && event.checkpoint !== undefined) {
      counts.set(event.shardId, (counts.get(event.shardId) ?? 0) + 1);
    }
  }
  return counts;
}

async function stopAll(group: MemoryGroup): Promise<void> {
  let stopped = 0;
  for (const member of group.members) void member.kinsumer.stop().finally(() => { stopped += 1; });
  await group.scheduler.until(() => stopped === group.members.length, 'every member stopped', 20_000);
}

describe('OpenTelemetry metrics (virtual time)', function () {
  this.timeout(30_000);

  it('counts records delivered and acked and checkpoints written per shard, and reports pending, lag and leases held from status()', async () => {
    const meter = testMeter();
    const group = new MemoryGroup(2, { meterProvider: meter.provider });
    group.stream.putRecords(Array.from({ length: 20 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    // r3 is never acked: its shard keeps it unacked, and every record after it pending.
    const member = group.join('a', { ack: (record) => text(record) !== 'r3' });
    await group.scheduler.until(() => member.received.length === 20, 'every record', 20_000);
    await group.scheduler.advanceBy(3 * FAST.commitFrequencyMs);

    const read = await meter.collect();
    // The scope names the package's version, as OpenTelemetry's instrumentation scopes should.
    const { version } = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(await meter.scopes()).to.deep.equal([{ name: 'kinsumer', version }]);
    const status = member.kinsumer.status();
    expect(status.shards).to.have.length(2);
    const written = checkpointsByShard(member.events);
    for (const { shardId, pending, millisBehindLatest } of status.shards) {
      const received = member.received.filter((r) => r.shardId === shardId);
      const unacked = received.filter((r) => text(r) === 'r3').length;
      expect(valueOf(read.get('kinsumer.records.delivered'), shard(shardId)), `delivered on ${shardId}`).to.equal(received.length);
      expect(valueOf(read.get('kinsumer.records.acked'), shard(shardId)), `acked on ${shardId}`).to.equal(received.length - unacked);
      expect(written.get(shardId), `checkpoint events of ${shardId}`).to.be.greaterThan(0);
      expect(valueOf(read.get('kinsumer.checkpoints.written'), shard(shardId)), `checkpoints of ${shardId}`).to.equal(written.get(shardId));
      expect(valueOf(read.get('kinsumer.shard.pending'), shard(shardId)), `pending on ${shardId}`).to.equal(pending);
      expect(valueOf(read.get('kinsumer.shard.millis_behind_latest'), shard(shardId))).to.equal(millisBehindLatest);
    }
    expect(sum(read.get('kinsumer.records.delivered'))).to.equal(20);
    expect(sum(read.get('kinsumer.records.acked'))).to.equal(19);
    expect(status.shards.map((s) => s.pending).filter((p) => p > 0)).to.have.length(1);
    expect(read.get('kinsumer.leases.held')).to.deep.equal([{ attributes: STREAM, value: 2 }]);

    await stopAll(group);
    const after = await meter.collect();
    // The releases are checkpoints too; a stopped client reports its final values: no lease, nothing pending, the totals.
    const all = checkpointsByShard(member.events);
    for (const [shardId, count] of all) {
      expect(valueOf(after.get('kinsumer.checkpoints.written'), shard(shardId))).to.equal(count);
      expect(valueOf(after.get('kinsumer.shard.pending'), shard(shardId))).to.equal(0);
    }
    expect(sum(after.get('kinsumer.checkpoints.written'))).to.be.greaterThan(sum(read.get('kinsumer.checkpoints.written')));
    expect(after.get('kinsumer.leases.held')).to.deep.equal([{ attributes: STREAM, value: 0 }]);
    expect(sum(after.get('kinsumer.records.delivered'))).to.equal(20);
  });

  // R13 (review-3 scratch test otel-retain): the batch callback of a stopped client stayed registered
  // until a collection, holding the whole Kinsumer through status(); with a pull exporter nobody
  // scrapes, forever. It now keeps only the final figures, taken at the stop.
  it('R13: stopped clients are not kept by a meter nobody collects; the next collection still reports their final figures', async () => {
    const meter = testMeter();
    const group = new MemoryGroup(1, { meterProvider: meter.provider });
    // In a function of its own, so that no frame of the test still holds the last client when it is weighed.
    const runAndStop = async (i: number): Promise<WeakRef<object>> => {
      // Each client reads four records of its own (the same final totals, whichever client's report comes last).
      group.stream.putRecords(Array.from({ length: 4 }, (_, j) => ({ partitionKey: 'k', data: `c${i}-r${j}` })));
      const member = group.join(`c${i}`);
      await group.scheduler.until(() => member.received.length === 4 && member.kinsumer.status().shards[0]?.pending === 0, `c${i} reads its four records`, 20_000);
      await stopAll(group);
      group.members.length = 0;
      return new WeakRef(member.kinsumer);
    };
    const clients: WeakRef<object>[] = [];
    for (let i = 0; i < 5; i += 1) clients.push(await runAndStop(i));
    expect(await aliveAfterCollections(clients), 'stopped clients still reachable').to.equal(0);
    // Nobody collected meanwhile: the final figures are all still there (the totals, no lease, nothing pending).
    const read = await meter.collect();
    expect(sum(read.get('kinsumer.records.delivered'))).to.equal(4);
    expect(read.get('kinsumer.leases.held')?.map((p) => p.value)).to.deep.equal([0]);
    expect(sum(read.get('kinsumer.shard.pending'))).to.equal(0);
  });

  it('keeps counting a shard across its leases: lost to a reset and taken again, delivered and acked go on growing', async () => {
    const meter = testMeter();
    const group = new MemoryGroup(1, { meterProvider: meter.provider });
    group.stream.putRecords(Array.from({ length: 4 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    const member = group.join('a');
    const shardId = 'shardId-000000000000';
    await group.scheduler.until(() => member.received.length === 4 && member.kinsumer.status().shards[0]?.checkpoint !== undefined, 'four records checkpointed', 10_000);
    // An operator's forced reset to TRIM_HORIZON fences the lease: lost, taken again, the four read again.
    const operator = new MemoryLeaseStore({ clientId: 'operator', leaseTtlMs: FAST.leaseTtlMs, now: () => group.scheduler.now(), table: group.checkpoints });
    await firstValueFrom(operator.resetCheckpoint(shardId, undefined, { force: true }), { defaultValue: undefined });
    await group.scheduler.until(() => member.received.length === 8, 'the four again under a new lease', 20_000);
    await group.scheduler.advanceBy(2 * FAST.commitFrequencyMs);
    expect(member.events.filter((e) => e.type === 'lease-lost')).to.have.length(1);
    const read = await meter.collect();
    expect(valueOf(read.get('kinsumer.records.delivered'), shard(shardId))).to.equal(8);
    expect(valueOf(read.get('kinsumer.records.acked'), shard(shardId))).to.equal(8);
    await stopAll(group);
  });

  it('kinsumer.shard.millis_behind_latest is what the last GetRecords said, per shard', async () => {
    const meter = testMeter();
    const group = new MemoryGroup(1, { meterProvider: meter.provider, maxInFlightRecords: 5 });
    group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    await group.scheduler.advanceBy(60_000);
    // Nothing acked: reading stops at 5 of 10 records, a minute behind the tip.
    const member = group.join('a', { ack: () => false });
    await group.scheduler.until(() => member.received.length === 5, 'five records', 10_000);
    const behind = member.kinsumer.status().shards[0]?.millisBehindLatest;
    expect(behind).to.be.at.least(60_000);
    const read = await meter.collect();
    expect(read.get('kinsumer.shard.millis_behind_latest')).to.deep.equal([{ attributes: shard('shardId-000000000000'), value: behind }]);
    expect(valueOf(read.get('kinsumer.shard.pending'), shard('shardId-000000000000'))).to.equal(5);
    expect(valueOf(read.get('kinsumer.records.acked'), shard('shardId-000000000000'))).to.equal(0);
    await stopAll(group);
  });

  it('kinsumer.shard.millis_behind_latest comes from the fan-out events in fan-out mode', async () => {
    const meter = testMeter();
    const group = new MemoryGroup(1, { meterProvider: meter.provider, readMode: 'fan-out' });
    group.stream.putRecords([{ partitionKey: 'k', data: 'r0' }]);
    const shardId = 'shardId-000000000000';
    // One event with the shard's record and a lag of 4321 ms, then nothing more.
    let pulls = 0;
    const fanOut: FanOutPort = {
      describeConsumer: (consumerName) => of({ consumerName, consumerArn: 'arn:aws:kinesis:us-east-1:000000000000:stream/memory/consumer/c:1', status: 'ACTIVE' }),
      registerConsumer: () => NEVER,
      deregisterConsumer: () => NEVER,
      subscribeToShard: () => of({
        next: () => {
          pulls += 1;
          if (pulls > 1) return NEVER;
          const event: ShardEvent = { records: group.stream.records(shardId), continuationSequenceNumber: '1', millisBehindLatest: 4321, childShardIds: undefined };
          return of(event);
        },
      }),
    };
    const member = group.join('a', { wrap: (ports) => ({ ...ports, stream: Object.assign(Object.create(ports.stream) as object, { fanOut }) as typeof ports.stream }) });
    await group.scheduler.until(() => member.received.length === 1, 'the record', 10_000);
    const read = await meter.collect();
    expect(read.get('kinsumer.shard.millis_behind_latest')).to.deep.equal([{ attributes: shard(shardId), value: 4321 }]);
    expect(valueOf(read.get('kinsumer.records.delivered'), shard(shardId))).to.equal(1);
    await stopAll(group);
  });

  it('kinsumer.aws.retries counts each retrying event, with its shard and operation', async () => {
    const meter = testMeter();
    const group = new MemoryGroup(1, { meterProvider: meter.provider });
    group.stream.putRecords([{ partitionKey: 'k', data: 'r0' }]);
    const member = group.join('a');
    const throttled = () => Object.assign(new Error('slow down'), { name: 'ProvisionedThroughputExceededException' });
    member.store.failNext(throttled(), ['commit']);
    member.store.failNext(throttled(), ['commit']);
    await group.scheduler.until(() => member.events.some((e) => e.type === 'checkpoint'), 'a checkpoint after the retries', 10_000);
    const retrying = member.events.filter((e) => e.type === 'retrying');
    expect(retrying.map((e) => (e.type === 'retrying' ? e.operation : ''))).to.deep.equal(['commit', 'commit']);
    const read = await meter.collect();
    expect(read.get('kinsumer.aws.retries')).to.deep.equal([{ attributes: { ...shard('shardId-000000000000'), 'kinsumer.operation': 'commit' }, value: 2 }]);
    await stopAll(group);
  });

  describe('through the global providers', () => {
    afterEach(() => {
      metrics.disable();
    });

    it('records through the global meter provider when no meterProvider is given', async () => {
      const meter = testMeter();
      metrics.setGlobalMeterProvider(meter.provider);
      const group = new MemoryGroup(1);
      group.stream.putRecords(Array.from({ length: 3 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
      const member = group.join('a');
      await group.scheduler.until(() => member.received.length === 3, 'three records', 10_000);
      expect(valueOf((await meter.collect()).get('kinsumer.records.delivered'), shard('shardId-000000000000'))).to.equal(3);
      await stopAll(group);
    });

    it('without @opentelemetry/api (unresolvable), builds no telemetry object and records nothing, and the client runs as before', async () => {
      const meter = testMeter();
      metrics.setGlobalMeterProvider(meter.provider);
      const tracing = testTracer();
      let loads = 0;
      const restore = useOtelLoader(() => { loads += 1; return undefined; });
      try {
        const group = new MemoryGroup(1, { tracerProvider: tracing.provider });
        group.stream.putRecords(Array.from({ length: 3 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
        const member = group.join('a', { pipeline: processRecords(() => undefined) });
        await group.scheduler.until(() => member.kinsumer.status().shards[0]?.checkpoint !== undefined && member.received.length === 3, 'three records processed and checkpointed', 10_000);
        expect(loads).to.equal(1);
        // The client's only telemetry object: never built without the API.
        expect((member.kinsumer as unknown as { metrics: unknown }).metrics).to.equal(undefined);
        expect((await meter.collect()).size).to.equal(0);
        expect(tracing.exporter.getFinishedSpans()).to.deep.equal([]);
        await stopAll(group);
      } finally {
        restore();
      }
    });
  });
});
