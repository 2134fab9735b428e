import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { type StreamCall, awsError } from '../../../src/testing/memory-stream.js';
import { MemoryGroup } from '../../support/memory-group.js';

const MiB = 1024 * 1024;

// Records up to 10 MiB (UpdateMaxRecordSize, design §9.1) on the in-memory stream, which enforces
// the shard's 2 MiB/s read budget here as Kinesis does (ProvisionedThroughputExceededException).
describe('10 MiB records (virtual time, whole client, a read budget of 2 MiB/s per shard)', function () {
  this.timeout(30_000);

  it('are delivered byte for byte; the page spends the read budget and the next GetRecords waits for it (~5 s): no retrying', async () => {
    const group = new MemoryGroup(1, {}, { maxRecordSizeKiB: 10240, readBytesPerSecond: 2 * MiB });
    const big = randomBytes(10 * MiB - 1);
    const [put] = group.stream.putRecords([{ partitionKey: 'k', data: big }, { partitionKey: 'k', data: 'small' }]);
    const calls: StreamCall[] = [];
    group.stream.onCall((call) => { if (call.operation === 'getRecords') calls.push(call); });
    const a = group.join('a');
    await group.scheduler.until(() => a.received.length === 1, 'the 10 MiB record', 10_000);
    const [first] = a.received;
    expect(first?.sequenceNumber).to.equal(put?.sequenceNumber);
    expect(Buffer.from(first?.data ?? new Uint8Array()).equals(big), 'byte for byte').to.equal(true);
    await group.scheduler.until(() => a.received.length === 2, 'the record after it', 20_000);
    // The first call returned the 10 MiB record; the second is the next one.
    const gapMs = (calls[1]?.atMs ?? 0) - (calls[0]?.atMs ?? 0);
    expect(gapMs, 'the next call waits for the budget the 10 MiB page spent').to.be.within(4_990, 5_300);
    expect(a.events.filter((e) => e.type === 'retrying'), 'pacing, not a fault').to.deep.equal([]);
    await group.stop(a, 60_000);
  });

  it('throttled anyway (another reader spent the budget): a retry, and reading goes on (the failed call\'s reserved bytes are let go)', async () => {
    const group = new MemoryGroup(1, { maxInFlightBytes: 16 * MiB }, { maxRecordSizeKiB: 10240, readBytesPerSecond: 2 * MiB });
    group.stream.putRecords([{ partitionKey: 'k', data: new Uint8Array(10 * MiB - 1) }, { partitionKey: 'k', data: 'small' }]);
    let calls = 0;
    group.stream.onCall((call) => {
      calls += call.operation === 'getRecords' ? 1 : 0;
      // The call after the 10 MiB page fails (a listener runs before the call is answered).
      if (calls === 2 && call.operation === 'getRecords') group.stream.failNext('getRecords', 1, () => awsError('ProvisionedThroughputExceededException'));
    });
    const a = group.join('a');
    await group.scheduler.until(() => a.received.length === 2, 'both records', 20_000);
    expect(a.events.filter((e) => e.type === 'retrying').map((e) => e.type === 'retrying' && e.operation)).to.deep.equal(['GetRecords']);
    await group.stop(a, 60_000);
  });

  it('status() shows the stream\'s maxRecordSizeKiB (DescribeStreamSummary)', async () => {
    const group = new MemoryGroup(1, {}, { maxRecordSizeKiB: 10240 });
    const a = group.join('a');
    await group.scheduler.until(() => a.kinsumer.status().maxRecordSizeKiB !== undefined, 'the stream described', 10_000);
    expect(a.kinsumer.status().maxRecordSizeKiB).to.equal(10240);
    await group.stop(a, 60_000);
  });
});
