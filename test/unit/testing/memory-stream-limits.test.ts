import { expect } from 'chai';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import type { IteratorStart } from '../../../src/ports/stream.js';
import { MemoryStream } from '../../../src/testing/memory-stream.js';

const text = (data: Uint8Array) => Buffer.from(data).toString('utf8');
const MiB = 1024 * 1024;

// Kinesis's limits as the in-memory stream models them: the largest record (MaxRecordSizeInKiB),
// GetRecords' 10 MiB page, a shard's 2 MiB/s read budget, and retention (docs/data-loss.md).
describe('MemoryStream: record size, page size, read budget, retention', () => {
  let now: number;
  beforeEach(() => { now = 1_700_000_000_000; });

  const iterator = async (stream: MemoryStream, start: IteratorStart) => (await firstValueFrom(stream.getShardIterator('shardId-000000000000', start))).shardIterator;

  it('takes records up to MaxRecordSizeInKiB (payload and key together; 1024 unless raised) and says it in describeSummary', async () => {
    const stream = new MemoryStream({ clock: () => now });
    expect(await firstValueFrom(stream.describeSummary())).to.deep.equal({ retentionPeriodHours: 24, maxRecordSizeKiB: 1024 });
    stream.putRecord('k', new Uint8Array(MiB - 1));
    expect(() => stream.putRecord('k', new Uint8Array(MiB))).to.throw(/exceeds the stream's MaxRecordSizeInKiB of 1024/).with.property('name', 'InvalidArgumentException');
    expect(() => stream.updateMaxRecordSize(10241)).to.throw(/between 1024 and 10240/);
    stream.updateMaxRecordSize(10240);
    stream.putRecord('k', new Uint8Array(10 * MiB - 1));
    expect(() => stream.putRecord('k', new Uint8Array(10 * MiB))).to.throw(/10240/);
    expect((await firstValueFrom(stream.describeSummary())).maxRecordSizeKiB).to.equal(10240);
  });

  it('a page holds at most 10 MiB of payload, or one record larger than that', async () => {
    const stream = new MemoryStream({ clock: () => now, maxRecordSizeKiB: 10240 });
    stream.putRecords(Array.from({ length: 6 }, () => ({ partitionKey: 'k', data: new Uint8Array(3 * MiB) })));
    const first = await firstValueFrom(stream.getRecords(await iterator(stream, { type: 'TRIM_HORIZON' }), 10_000));
    expect(first.records, '3 records of 3 MiB: a fourth would pass 10 MiB').to.have.length(3);
    const big = new MemoryStream({ clock: () => now, maxRecordSizeKiB: 10240 });
    big.putRecords([{ partitionKey: 'k', data: new Uint8Array(10 * MiB - 1) }, { partitionKey: 'k', data: 'xx' }]);
    expect((await firstValueFrom(big.getRecords(await iterator(big, { type: 'TRIM_HORIZON' }), 10_000))).records).to.have.length(1);
  });

  it('with a read budget, a GetRecords before the last page is paid for is throttled; paid, it goes through', async () => {
    const stream = new MemoryStream({ clock: () => now, maxRecordSizeKiB: 10240, readBytesPerSecond: 2 * MiB });
    stream.putRecords([{ partitionKey: 'k', data: new Uint8Array(10 * MiB - 1) }, { partitionKey: 'k', data: 'after' }]);
    const page = await firstValueFrom(stream.getRecords(await iterator(stream, { type: 'TRIM_HORIZON' }), 10_000));
    now += 4_900;
    const throttled: unknown = await lastValueFrom(stream.getRecords(page.nextShardIterator ?? '', 10_000)).then(() => undefined, (error: unknown) => error);
    expect((throttled as Error | undefined)?.name).to.equal('ProvisionedThroughputExceededException');
    now += 100;
    const next = await firstValueFrom(stream.getRecords(page.nextShardIterator ?? '', 10_000));
    expect(next.records.map((r) => text(r.data))).to.deep.equal(['after']);
  });

  describe('retention: records older than it are trimmed, and a start behind the trim horizon is positioned at the oldest record kept', () => {
    const retentionMs = 60_000;
    let stream: MemoryStream;
    let sequenceNumbers: string[];
    beforeEach(() => {
      stream = new MemoryStream({ clock: () => now, retentionMs });
      sequenceNumbers = ['old-1', 'old-2'].map((data) => stream.putRecord('k', data).sequenceNumber);
      now += 30_000;
      sequenceNumbers.push(stream.putRecord('k', 'kept').sequenceNumber);
      now += 40_000;
    });
    const data = async (start: IteratorStart) => (await firstValueFrom(stream.getRecords(await iterator(stream, start), 10_000))).records.map((r) => text(r.data));

    it('TRIM_HORIZON, AT_TIMESTAMP before the horizon, AT_ and AFTER_SEQUENCE_NUMBER of a trimmed record: the oldest kept, no error', async () => {
      expect(await data({ type: 'TRIM_HORIZON' })).to.deep.equal(['kept']);
      expect(await data({ type: 'AT_TIMESTAMP', timestamp: new Date(now - 3_600_000) })).to.deep.equal(['kept']);
      expect(await data({ type: 'AT_SEQUENCE_NUMBER', sequenceNumber: sequenceNumbers[0] ?? '' })).to.deep.equal(['kept']);
      expect(await data({ type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: sequenceNumbers[0] ?? '' }), 'old-2 was trimmed too').to.deep.equal(['kept']);
      expect(await data({ type: 'AT_SEQUENCE_NUMBER', sequenceNumber: sequenceNumbers[2] ?? '' })).to.deep.equal(['kept']);
      expect(stream.positionOf('shardId-000000000000', { type: 'TRIM_HORIZON' })).to.equal(2);
    });

    it('an iterator taken before the trim reads on from the oldest record kept', async () => {
      now -= 40_000;
      const held = await iterator(stream, { type: 'TRIM_HORIZON' });
      now += 40_000;
      expect((await firstValueFrom(stream.getRecords(held, 10_000))).records.map((r) => text(r.data))).to.deep.equal(['kept']);
    });
  });
});
