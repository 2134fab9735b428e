import { expect } from 'chai';
import { firstValueFrom, fromEvent, take, timer } from 'rxjs';
import { type KinsumerRecord, type ProcessedRecord, type ProcessRecordsOptions, processRecords } from '../../../src/index.js';
import { MemoryGroup, type Member } from '../../support/memory-group.js';
import { aggregate } from '../../support/kpl-aggregate.js';
import { seededRandom } from '../../support/seeded-random.js';
import { comparePositions } from '../../../src/checkpoint/sequence-number.js';
import { type Position } from '../../../src/ports/position.js';

const text = (data: Uint8Array) => new TextDecoder().decode(data);
const asPosition = (record: KinsumerRecord): Position => (record.subSequenceNumber === undefined
  ? { sequenceNumber: record.sequenceNumber } : { sequenceNumber: record.sequenceNumber, subSequenceNumber: record.subSequenceNumber });
const positionOf = (record: KinsumerRecord) => `${record.sequenceNumber}/${record.subSequenceNumber ?? '-'}`;

// §7.3 on a real client (coordinator, leases, checkpointer, reader) over the in-memory stream and
// tables, on virtual time: records completed out of order, a graceful hand-off while one record is
// still stuck (so the watermark stays behind it), and the next owner must not get any record the
// first owner acked again.
describe('acked ranges: a new owner skips what the previous one acked beyond the watermark (virtual time)', function () {
  this.timeout(60_000);

  /** Runs `member`'s records through processRecords, writing down what it acked; `stuck` waits until its lease ends. */
  function consume(group: MemoryGroup, member: Member, stuck: (record: KinsumerRecord) => boolean, options: ProcessRecordsOptions) {
    const random = seededRandom(member.id.length * 31 + 7);
    const acked: ProcessedRecord[] = [];
    const handled: KinsumerRecord[] = [];
    let failed: unknown;
    const subscription = member.kinsumer.records$.pipe(processRecords(async (record, { signal }) => {
      handled.push(record);
      if (stuck(record)) {
        await firstValueFrom(fromEvent(signal, 'abort').pipe(take(1)));
        return;
      }
      // Varied delays: completion order is nothing like sequence order.
      await firstValueFrom(timer(5 + Math.floor(random() * 200), group.scheduler));
    }, { ...options, scheduler: group.scheduler })).subscribe({ next: (p) => acked.push(p), error: (error: unknown) => { failed = error; } });
    return { acked, handled, subscription, failed: () => failed };
  }

  async function handOff(records: { partitionKey: string; data: string | Uint8Array }[], userRecords: number, isStuck: (record: KinsumerRecord) => boolean, options: ProcessRecordsOptions) {
    const group = new MemoryGroup(1, { maxInFlightRecords: 400 });
    const [shard] = group.stream.shardIds() as [string];
    group.stream.putRecords(records, { shardId: shard });
    // The members' own subscribers ack nothing: the operator does.
    const a = group.join('a', { ack: () => false });
    const first = consume(group, a, isStuck, options);
    await group.scheduler.until(() => first.acked.length >= 150, 'the first owner acked 150 records', 30_000);
    let stopped = false;
    void a.kinsumer.stop().then(() => { stopped = true; });
    await group.scheduler.until(() => stopped, 'the first owner\'s graceful stop', 30_000);
    expect(first.failed()).to.equal(undefined);
    const released = a.events.find((e) => e.type === 'lease-released');
    expect(released, 'a graceful release').to.not.equal(undefined);
    expect(group.checkpoints.row(shard)?.acked?.length, 'the release wrote acked ranges beyond the stuck record').to.be.above(0);

    const b = group.join('b', { ack: () => false });
    const second = consume(group, b, () => false, options);
    const everyRecord = () => new Set([...first.acked, ...second.acked].map((p) => positionOf(p.record))).size === userRecords;
    await group.scheduler.until(everyRecord, 'every record acked by one owner or the other', 30_000);
    expect(second.failed()).to.equal(undefined);
    second.subscription.unsubscribe();
    first.subscription.unsubscribe();
    void b.kinsumer.stop();
    return { first, second, a, b };
  }

  it("processRecords ordering 'none' concurrency 16, varied delays, a graceful hand-off mid-run: no record the first owner acked is delivered again", async () => {
    const records = Array.from({ length: 600 }, (_, i) => ({ partitionKey: `k${i % 50}`, data: `r${i}` }));
    const { first, b } = await handOff(records, 600, (record) => text(record.data) === 'r40', { ordering: 'none', concurrency: 16 });
    const ackedFirst = new Set(first.acked.map((p) => positionOf(p.record)));
    expect(ackedFirst.size, 'the first owner acked records beyond the stuck one').to.be.above(100);
    const again = b.received.filter((record) => ackedFirst.has(positionOf(record))).map((record) => text(record.data));
    expect(again, 'acked records delivered again to the next owner').to.deep.equal([]);
    expect(text(b.received[0]?.data ?? new Uint8Array()), 'the stuck record goes to the next owner first').to.equal('r40');
  });

  it('KPL aggregates: sub-records acked beyond the watermark are skipped one by one, the others delivered', async () => {
    // 120 aggregates of 5 sub-records; the stuck one sits in the middle of aggregate 8.
    const aggregates = Array.from({ length: 120 }, (_, i) => aggregate(Array.from({ length: 5 }, (_, j) => ({ partitionKey: `k${(i * 5 + j) % 40}`, data: `u${i}.${j}` }))));
    const { first, b } = await handOff(aggregates, 600, (record) => text(record.data) === 'u8.2', { ordering: 'partitionKey', concurrency: 16 });
    const ackedFirst = new Set(first.acked.map((p) => positionOf(p.record)));
    expect(ackedFirst.size).to.be.above(100);
    expect(first.acked.every((p) => p.record.subSequenceNumber !== undefined), 'sub-records').to.equal(true);
    const again = b.received.filter((record) => ackedFirst.has(positionOf(record))).map((record) => text(record.data));
    expect(again, 'acked sub-records delivered again to the next owner').to.deep.equal([]);
    expect(text(b.received[0]?.data ?? new Uint8Array()), 'the stuck sub-record goes to the next owner first').to.equal('u8.2');
  });
  it('a crash: the next owner skips the records in the ranges of the last commit, and gets every other record', async () => {
    const group = new MemoryGroup(1, { maxInFlightRecords: 400 });
    const [shard] = group.stream.shardIds() as [string];
    const put = group.stream.putRecords(Array.from({ length: 600 }, (_, i) => ({ partitionKey: `k${i % 50}`, data: `r${i}` })), { shardId: shard });
    const last = put.at(-1)?.sequenceNumber;
    const a = group.join('a', { ack: () => false });
    const first = consume(group, a, (record) => text(record.data) === 'r40', { ordering: 'partitionKey', concurrency: 16 });
    await group.scheduler.until(() => first.acked.length >= 150 && (group.checkpoints.row(shard)?.acked?.length ?? 0) > 0, 'ranges committed', 30_000);
    // The process dies: nothing it does reaches the stream or the tables again.
    a.pause();
    const crashed = group.checkpoints.row(shard);
    const ranges = crashed?.acked ?? [];
    const underCheckpoint = (record: KinsumerRecord) => crashed?.checkpoint?.type === 'position' && comparePositions(asPosition(record), crashed.checkpoint.position) <= 0;
    const inRanges = (record: KinsumerRecord) => ranges.some((r) => comparePositions(r.from, asPosition(record)) <= 0 && comparePositions(asPosition(record), r.to) <= 0);
    const b = group.join('b', { ack: () => false });
    const second = consume(group, b, () => false, { ordering: 'partitionKey', concurrency: 16 });
    const checkpointOf = () => {
      const checkpoint = group.checkpoints.row(shard)?.checkpoint;
      return checkpoint?.type === 'position' ? checkpoint.position.sequenceNumber : undefined;
    };
    await group.scheduler.until(() => group.checkpoints.row(shard)?.ownerId === 'b' && checkpointOf() === last, 'the next owner\'s checkpoint at the last record', 60_000);
    expect(second.failed()).to.equal(undefined);
    const committedAsAcked = first.acked.filter((p) => inRanges(p.record)).map((p) => text(p.record.data));
    expect(committedAsAcked.length, 'records the crashed owner had committed as acked ranges').to.be.above(50);
    expect(b.received.filter((record) => inRanges(record)).map((record) => text(record.data)), 'delivered again').to.deep.equal([]);
    const committed = first.acked.filter((p) => underCheckpoint(p.record)).map((p) => text(p.record.data));
    const seen = new Set([...b.received.map((record) => text(record.data)), ...committedAsAcked, ...committed]);
    expect(seen.size, 'every record: delivered to the next owner, or committed as acked (checkpoint or ranges)').to.equal(600);
    second.subscription.unsubscribe();
    first.subscription.unsubscribe();
  });
});
