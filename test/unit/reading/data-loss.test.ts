import { expect } from 'chai';
import { MemoryFanOut } from '../../../src/testing/memory-fan-out.js';
import type { KinsumerEvent } from '../../../src/types.js';
import { MemoryGroup } from '../../support/memory-group.js';

const text = (data: Uint8Array) => new TextDecoder().decode(data);
const RETENTION_MS = 60_000;

/**
 * A group that read r0..r4 and checkpointed r4, then stopped for longer than the stream's retention
 * (60 s here): `lost-1..3`, put after the checkpoint, and r4 itself are trimmed; `kept` is not.
 */
async function expiredCheckpoint(): Promise<{ group: MemoryGroup; checkpoint: string; kept: string; keptAt: number }> {
  const group = new MemoryGroup(1, {}, { retentionMs: RETENTION_MS });
  const put = group.stream.putRecords(Array.from({ length: 5 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
  const first = group.join('first');
  await group.scheduler.until(() => group.checkpoints.rows()[0]?.checkpoint?.type === 'position', 'r4 checkpointed', 10_000);
  await group.stop(first, 60_000);
  await group.scheduler.advanceBy(30_000);
  group.stream.putRecords(['lost-1', 'lost-2', 'lost-3'].map((data) => ({ partitionKey: 'k', data })));
  await group.scheduler.advanceBy(50_000);
  const keptAt = group.scheduler.now();
  const [kept] = group.stream.putRecords([{ partitionKey: 'k', data: 'kept' }]);
  await group.scheduler.advanceBy(20_000);
  return { group, checkpoint: put[4]?.sequenceNumber ?? '', kept: kept?.sequenceNumber ?? '', keptAt };
}

const dataLost = (events: readonly KinsumerEvent[]) => events.filter((e) => e.type === 'data-lost');

// docs/data-loss.md: Kinesis positions a start from a trimmed sequence number at the oldest record it
// keeps, and says nothing; the in-memory stream does the same. kinsumer starts AT the checkpoint's
// record, so a first record that is not it says the checkpoint lies behind the trim horizon.
describe('data loss, said: a checkpoint behind the trim horizon (virtual time, whole client)', function () {
  this.timeout(30_000);

  it("'continue' (default): a data-lost event naming the checkpoint and the oldest record kept, an error in the log, and reading goes on from it", async () => {
    const { group, checkpoint, kept, keptAt } = await expiredCheckpoint();
    const errors: Array<[object, string | undefined]> = [];
    const logger = { debug() {}, info() {}, warn() {}, error: (obj: object, msg?: string) => { errors.push([obj, msg]); } };
    const second = group.join('second', { extra: { logger } });
    await group.scheduler.until(() => second.received.length === 1, 'the oldest record kept', 10_000);
    expect(second.received.map((r) => text(r.data))).to.deep.equal(['kept']);
    expect(dataLost(second.events)).to.deep.equal([{
      type: 'data-lost', shardId: 'shardId-000000000000', checkpoint: { sequenceNumber: checkpoint }, resumedAt: kept,
      resumedArrivedAt: new Date(keptAt), onDataLoss: 'continue',
    }]);
    expect(errors.map(([, msg]) => msg)).to.have.length(1);
    expect(errors[0]?.[1]).to.match(/checkpoint lies behind the trim horizon .* reading on from the oldest record kept/);
    await group.stop(second, 60_000);
  });

  it('fan-out: a subscription from the expired checkpoint says it too (the same check on the first event)', async () => {
    const { group, checkpoint, kept } = await expiredCheckpoint();
    group.stream.fanOut = new MemoryFanOut(group.stream, { scheduler: group.scheduler });
    const second = group.join('second', { extra: { readMode: 'fan-out' } });
    await group.scheduler.until(() => second.received.length === 1, 'the oldest record kept', 20_000);
    expect(second.received.map((r) => text(r.data))).to.deep.equal(['kept']);
    expect(dataLost(second.events).map((e) => e.type === 'data-lost' && [e.checkpoint.sequenceNumber, e.resumedAt])).to.deep.equal([[checkpoint, kept]]);
    await group.stop(second, 60_000);
  });

  it("'stop-shard': the shard's records$ errors with DataLostError, nothing of it is emitted, its checkpoint stays, and the lease is kept unread (not captured again at every check)", async () => {
    const { group, checkpoint, kept } = await expiredCheckpoint();
    const leaseErrors: unknown[] = [];
    const second = group.join('second', { extra: { onDataLoss: 'stop-shard' } });
    second.kinsumer.leases$.subscribe((lease) => lease.records$.subscribe({ error: (error: unknown) => leaseErrors.push(error) }));
    let iterators = 0;
    group.stream.onCall((call) => { iterators += call.operation === 'getShardIterator' ? 1 : 0; });
    await group.scheduler.until(() => dataLost(second.events).length === 1, 'the data loss said', 10_000);
    await group.scheduler.advanceBy(10 * 500 + 3000);
    expect(second.received).to.deep.equal([]);
    expect(leaseErrors.map((e) => (e as Error).name)).to.deep.equal(['DataLostError']);
    expect(leaseErrors[0]).to.deep.include({ shardId: 'shardId-000000000000', checkpoint: { sequenceNumber: checkpoint }, resumedAt: kept });
    expect(second.events.filter((e) => e.type === 'error'), 'said once, by data-lost').to.deep.equal([]);
    expect(iterators, 'one GetShardIterator: the lease is held, not captured again').to.equal(1);
    const row = group.checkpoints.rows()[0];
    expect([row?.ownerId, row?.checkpoint]).to.deep.equal(['second', { type: 'position', position: { sequenceNumber: checkpoint } }]);
    expect(second.kinsumer.status().shards.map((s) => s.stopped)).to.deep.equal(['data-lost']);
    await group.stop(second, 60_000);
    expect(group.checkpoints.rows()[0]?.checkpoint, 'released as it was').to.deep.equal({ type: 'position', position: { sequenceNumber: checkpoint } });
  });

  it('a checkpoint the stream still keeps: no event, and its record is not delivered again', async () => {
    const group = new MemoryGroup(1, {}, { retentionMs: RETENTION_MS });
    group.stream.putRecords(Array.from({ length: 3 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    const first = group.join('first');
    await group.scheduler.until(() => group.checkpoints.rows()[0]?.checkpoint?.type === 'position', 'r2 checkpointed', 10_000);
    await group.stop(first, 60_000);
    group.stream.putRecords([{ partitionKey: 'k', data: 'r3' }]);
    const second = group.join('second');
    await group.scheduler.until(() => second.received.length === 1, 'r3', 10_000);
    await group.scheduler.advanceBy(2_000);
    expect(second.received.map((r) => text(r.data))).to.deep.equal(['r3']);
    expect(dataLost(second.events)).to.deep.equal([]);
    await group.stop(second, 60_000);
  });
});
