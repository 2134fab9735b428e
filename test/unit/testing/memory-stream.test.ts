import { expect } from 'chai';
import { type Observable, VirtualTimeScheduler, firstValueFrom, lastValueFrom } from 'rxjs';
import { classifyAwsError } from '../../../src/errors/aws-error-kind.js';
import { StreamNotFoundError } from '../../../src/errors/kinsumer-errors.js';
import type { IteratorStart } from '../../../src/ports/stream.js';
import { MemoryStream, awsError, type StreamCall } from '../../../src/testing/memory-stream.js';

const text = (data: Uint8Array) => Buffer.from(data).toString('utf8');
const failure = async (source: Observable<unknown>): Promise<Error> => {
  try {
    await lastValueFrom(source);
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the call to fail');
};

describe('MemoryStream', () => {
  let now: number;
  let stream: MemoryStream;
  beforeEach(() => {
    now = 1_700_000_000_000;
    stream = new MemoryStream({ clock: () => now });
  });

  const iterator = async (start: IteratorStart, shardId = 'shardId-000000000000') => (await firstValueFrom(stream.getShardIterator(shardId, start))).shardIterator;
  const read = async (start: IteratorStart, limit = 10_000, shardId?: string) => firstValueFrom(stream.getRecords(await iterator(start, shardId), limit));

  it('assigns 56-digit sequence numbers that grow within a shard', () => {
    const put = stream.putRecords(Array.from({ length: 20 }, (_, i) => ({ partitionKey: `k${i}`, data: `d${i}` })));
    for (const { sequenceNumber } of put) expect(sequenceNumber).to.match(/^\d{56}$/);
    const numbers = put.map((p) => BigInt(p.sequenceNumber));
    for (let i = 1; i < numbers.length; i += 1) expect((numbers[i] ?? 0n) > (numbers[i - 1] ?? 0n)).to.equal(true);
  });

  it('routes records by the MD5 of the partition key, or by the explicit hash key', () => {
    const two = new MemoryStream({ shardCount: 2, clock: () => now });
    const [low, high] = two.openShardIds();
    // MD5("a") = 0cc175b9...: the low half; MD5("b") = 92eb5ffe...: the high half.
    expect(two.putRecord('a', 'x').shardId).to.equal(low);
    expect(two.putRecord('b', 'x').shardId).to.equal(high);
    expect(two.putRecord('b', 'x', '0').shardId).to.equal(low);
    expect(two.putRecord('a', 'x', (2n ** 128n - 1n).toString()).shardId).to.equal(high);
  });

  it('GetRecords returns at most Limit records with a next iterator and MillisBehindLatest', async () => {
    stream.putRecords([{ partitionKey: 'p', data: 'one' }]);
    now += 500;
    stream.putRecords([{ partitionKey: 'p', data: 'two' }, { partitionKey: 'p', data: 'three' }]);
    now += 100;
    const first = await read({ type: 'TRIM_HORIZON' }, 1);
    expect(first.records.map((r) => text(r.data))).to.deep.equal(['one']);
    expect(first.millisBehindLatest, 'the oldest unread record arrived 100 ms ago').to.equal(100);
    const rest = await firstValueFrom(stream.getRecords(first.nextShardIterator ?? '', 10));
    expect(rest.records.map((r) => text(r.data))).to.deep.equal(['two', 'three']);
    expect(rest.millisBehindLatest).to.equal(0);
    expect(rest.nextShardIterator).to.be.a('string');
    expect(rest.childShardIds).to.equal(undefined);
  });

  it('iterators start at TRIM_HORIZON, LATEST, AT_TIMESTAMP, AT_ and AFTER_SEQUENCE_NUMBER', async () => {
    const early = stream.putRecords([{ partitionKey: 'p', data: 'a' }, { partitionKey: 'p', data: 'b' }]);
    now += 1000;
    const boundary = new Date(now);
    stream.putRecords([{ partitionKey: 'p', data: 'c' }]);
    const latest = await iterator({ type: 'LATEST' });
    stream.putRecords([{ partitionKey: 'p', data: 'd' }]);
    const data = async (start: IteratorStart) => (await read(start)).records.map((r) => text(r.data));
    expect(await data({ type: 'TRIM_HORIZON' })).to.deep.equal(['a', 'b', 'c', 'd']);
    expect((await firstValueFrom(stream.getRecords(latest, 10))).records.map((r) => text(r.data))).to.deep.equal(['d']);
    expect(await data({ type: 'AT_TIMESTAMP', timestamp: boundary })).to.deep.equal(['c', 'd']);
    const second = early[1]?.sequenceNumber ?? '';
    expect(await data({ type: 'AT_SEQUENCE_NUMBER', sequenceNumber: second })).to.deep.equal(['b', 'c', 'd']);
    expect(await data({ type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: second })).to.deep.equal(['c', 'd']);
  });

  it('refuses a sequence number of another shard, and a timestamp in the future', async () => {
    const two = new MemoryStream({ shardCount: 2, clock: () => now });
    const [low, high] = two.openShardIds();
    const put = two.putRecord('a', 'x');
    expect(put.shardId).to.equal(low);
    const error = await failure(two.getShardIterator(high ?? '', { type: 'AT_SEQUENCE_NUMBER', sequenceNumber: put.sequenceNumber }));
    expect(error.name).to.equal('InvalidArgumentException');
    const future = await failure(two.getShardIterator(low ?? '', { type: 'AT_TIMESTAMP', timestamp: new Date(now + 1) }));
    expect(future.name).to.equal('InvalidArgumentException');
  });

  it('an iterator expires after iteratorTtlMs on the stream clock', async () => {
    const short = new MemoryStream({ clock: () => now, iteratorTtlMs: 1000 });
    const fresh = (await firstValueFrom(short.getShardIterator('shardId-000000000000', { type: 'TRIM_HORIZON' }))).shardIterator;
    now += 1000;
    await firstValueFrom(short.getRecords(fresh, 1));
    now += 1;
    const error = await failure(short.getRecords(fresh, 1));
    expect(error.name).to.equal('ExpiredIteratorException');
    expect(classifyAwsError(error)).to.equal('transient');
  });

  it('a split closes the parent: new records go to the children, and the parent ends naming them', async () => {
    const [parent] = stream.openShardIds();
    stream.putRecords([{ partitionKey: 'a', data: 'before' }]);
    const children = stream.split(parent ?? '');
    stream.putRecords([{ partitionKey: 'a', data: 'after' }]);
    expect(stream.openShardIds()).to.deep.equal(children);
    const end = await read({ type: 'TRIM_HORIZON' }, 10, parent);
    expect(end.records.map((r) => text(r.data))).to.deep.equal(['before']);
    expect(end.nextShardIterator).to.equal(undefined);
    expect(end.childShardIds).to.deep.equal(children);
    const shards = await firstValueFrom(stream.listShards());
    expect(shards.map((s) => [s.shardId, s.open, s.parentShardIds])).to.deep.equal([
      [parent, false, []], [children[0], true, [parent]], [children[1], true, [parent]],
    ]);
    expect(BigInt(shards[1]?.endingHashKey ?? '0') + 1n).to.equal(BigInt(shards[2]?.startingHashKey ?? '-1'));
  });

  it('a merge names both parents; without reportChildShards the end names no children (as kinesalite)', async () => {
    const quiet = new MemoryStream({ shardCount: 2, clock: () => now, reportChildShards: false });
    const [a, b] = quiet.openShardIds();
    const child = quiet.merge(a ?? '', b ?? '');
    const shards = await firstValueFrom(quiet.listShards());
    expect(shards.find((s) => s.shardId === child)?.parentShardIds).to.deep.equal([a, b]);
    const end = await firstValueFrom(quiet.getRecords((await firstValueFrom(quiet.getShardIterator(a ?? '', { type: 'TRIM_HORIZON' }))).shardIterator, 10));
    expect(end.nextShardIterator).to.equal(undefined);
    expect(end.childShardIds).to.equal(undefined);
  });

  it('fails the next N calls of an operation with the given error, counting every call', async () => {
    stream.putRecords([{ partitionKey: 'p', data: 'x' }]);
    const start = await iterator({ type: 'TRIM_HORIZON' });
    stream.failNext('getRecords', 2, () => awsError('ProvisionedThroughputExceededException'));
    const first = await failure(stream.getRecords(start, 1));
    const second = await failure(stream.getRecords(start, 1));
    expect([first.name, second.name]).to.deep.equal(['ProvisionedThroughputExceededException', 'ProvisionedThroughputExceededException']);
    expect(first).to.not.equal(second);
    expect(classifyAwsError(first)).to.equal('transient');
    expect((await firstValueFrom(stream.getRecords(start, 1))).records).to.have.length(1);
    expect(stream.calls).to.deep.equal({ getShardIterator: 1, getRecords: 3, listShards: 0, describeSummary: 0 });
  });

  it('reports each call to listeners with its Limit and start', async () => {
    const calls: StreamCall[] = [];
    stream.onCall((call) => calls.push(call));
    await read({ type: 'LATEST' }, 7);
    expect(calls).to.deep.equal([
      { operation: 'getShardIterator', atMs: now, shardId: 'shardId-000000000000', start: { type: 'LATEST' } },
      { operation: 'getRecords', atMs: now, limit: 7 },
    ]);
  });

  it('refuses a Limit outside 1..10000 and a malformed iterator', async () => {
    const start = await iterator({ type: 'TRIM_HORIZON' });
    expect((await failure(stream.getRecords(start, 10_001))).name).to.equal('InvalidArgumentException');
    expect((await failure(stream.getRecords('bm90IGFuIGl0ZXJhdG9y', 1))).name).to.equal('InvalidArgumentException');
  });

  it('a deleted stream fails every call with StreamNotFoundError', async () => {
    stream.delete();
    const error = await failure(stream.listShards());
    expect(error).to.be.instanceOf(StreamNotFoundError);
    expect((error as StreamNotFoundError).stream).to.equal('memory-stream');
  });

  it('with latencyMs, answers on the scheduler after the latency; unsubscribing first means no answer', () => {
    const scheduler = new VirtualTimeScheduler();
    const slow = new MemoryStream({ clock: () => scheduler.now(), latencyMs: 40, scheduler });
    const answers: number[] = [];
    slow.listShards().subscribe(() => answers.push(scheduler.now()));
    const cancelled = slow.listShards().subscribe(() => answers.push(-1));
    scheduler.schedule(() => cancelled.unsubscribe(), 10);
    scheduler.flush();
    expect(answers).to.deep.equal([40]);
  });
});
