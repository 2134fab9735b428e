// The stream set (kinesis/stream-set.ts) on in-memory streams: several streams behind one StreamPort
// whose shard ids are keys, every call routed to the stream its key names and to no other.
import { expect } from 'chai';
import { asyncScheduler, firstValueFrom, of, throwError } from 'rxjs';
import { KinsumerError, StreamGoneError, StreamNotFoundError } from '../../../src/errors/kinsumer-errors.js';
import { stopsTheClient } from '../../../src/errors/fault-scope.js';
import { parseShardKey } from '../../../src/ports/stream-key.js';
import type { StreamPort } from '../../../src/ports/stream.js';
import { MemoryFanOut } from '../../../src/testing/memory-fan-out.js';
import { StreamSet } from '../../../src/kinesis/stream-set.js';
import { awsError } from '../../../src/testing/memory-stream.js';
import { MemoryStreams } from '../../../src/testing/memory-streams.js';
import { QUIET } from '../../support/memory-group.js';
import { SteppedScheduler } from '../../support/stepped-scheduler.js';

const decoder = new TextDecoder();
const CREATED_MS = 1_733_300_000_000;

/** A world on one clock: streams, and the sets of the group's processes over them. */
function world() {
  let nowMs = CREATED_MS;
  const streams = new MemoryStreams({ clock: () => nowMs });
  return {
    streams,
    advance: (ms: number) => { nowMs += ms; },
    set: (list: readonly string[] | (() => Promise<readonly string[]>), checkMs = 60_000) => streams.port({ streams: list, streamCheckFrequencyMs: checkMs }),
  };
}

async function read(port: StreamPort, key: string): Promise<string[]> {
  const issued = await firstValueFrom(port.getShardIterator(key, { type: 'TRIM_HORIZON' }));
  const page = await firstValueFrom(port.getRecords(issued.shardIterator, 100));
  return page.records.map((r) => decoder.decode(r.data));
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

describe('a stream set: the group\'s streams behind one StreamPort (design §9.2)', () => {
  it('lists every shard of every stream under its key, parents keyed too; reads route to the stream a key names', async () => {
    const w = world();
    w.streams.create('orders', { shardCount: 1 });
    w.streams.create('payments', { shardCount: 2 });
    const [low] = w.streams.get('orders').split('shardId-000000000000');
    w.streams.get('orders').putRecords([{ partitionKey: 'k', data: 'order-1' }], { shardId: low });
    w.streams.get('payments').putRecords([{ partitionKey: 'k', data: 'payment-1' }], { shardId: 'shardId-000000000000' });
    const set = w.set(['orders', 'payments']);
    const shards = await firstValueFrom(set.listShards());
    const orders = `000000000000:orders:${CREATED_MS / 1000}`;
    const payments = `000000000000:payments:${CREATED_MS / 1000}`;
    expect(shards.map((s) => s.shardId)).to.deep.equal([
      `${orders}:shardId-000000000000`, `${orders}:shardId-000000000001`, `${orders}:shardId-000000000002`,
      `${payments}:shardId-000000000000`, `${payments}:shardId-000000000001`,
    ]);
    expect(shards[1]?.parentShardIds).to.deep.equal([`${orders}:shardId-000000000000`]);
    expect(await read(set, `${orders}:${low}`)).to.deep.equal(['order-1']);
    expect(await read(set, `${payments}:shardId-000000000000`)).to.deep.equal(['payment-1']);
  });

  it('the end of a closed shard names its children by key', async () => {
    const w = world();
    w.streams.create('orders');
    const set = w.set(['orders']);
    const [key] = (await firstValueFrom(set.listShards())).map((s) => s.shardId);
    w.streams.get('orders').split('shardId-000000000000');
    const issued = await firstValueFrom(set.getShardIterator(key ?? '', { type: 'TRIM_HORIZON' }));
    const page = await firstValueFrom(set.getRecords(issued.shardIterator, 10));
    expect(page.nextShardIterator).to.equal(undefined);
    expect(page.childShardIds?.map((child) => parseShardKey(child)?.shardId)).to.deep.equal(['shardId-000000000001', 'shardId-000000000002']);
    expect(page.childShardIds?.every((child) => child.startsWith(`000000000000:orders:${CREATED_MS / 1000}:`))).to.equal(true);
  });

  it('a stream that does not exist has no shards and fails nothing; it is read once it exists (looked for at every listing)', async () => {
    const w = world();
    w.streams.create('orders');
    const set = w.set(['orders', 'later']);
    expect((await firstValueFrom(set.listShards())).map((s) => parseShardKey(s.shardId)?.stream.streamName)).to.deep.equal(['orders']);
    w.streams.create('later');
    expect((await firstValueFrom(set.listShards())).map((s) => parseShardKey(s.shardId)?.stream.streamName)).to.deep.equal(['orders', 'later']);
  });

  it('asks a streams function at most every streamCheckFrequencyMs; a stream it adds is listed at the next check; a failed call is a retriable fault and the list stands', async () => {
    const w = world();
    w.streams.create('orders');
    w.streams.create('payments');
    let list = ['orders'];
    let calls = 0;
    let failNext = false;
    const set = w.set(() => {
      calls += 1;
      return failNext ? Promise.reject(new Error('the registry is down')) : Promise.resolve(list);
    }, 60_000);
    const names = async () => (await firstValueFrom(set.listShards())).map((s) => parseShardKey(s.shardId)?.stream.streamName);
    expect(await names()).to.deep.equal(['orders']);
    list = ['orders', 'payments'];
    w.advance(59_999);
    expect(await names()).to.deep.equal(['orders']);
    expect(calls).to.equal(1);
    w.advance(1);
    expect(await names()).to.deep.equal(['orders', 'payments']);
    expect(calls).to.equal(2);
    failNext = true;
    w.advance(60_000);
    const error = await failure(firstValueFrom(set.listShards()));
    expect(error).to.be.instanceOf(KinsumerError);
    expect((error as KinsumerError).retriable).to.equal(true);
    expect(stopsTheClient(error)).to.equal(false);
    // Not recorded as a check: the next listing asks again, and meanwhile nothing was dropped.
    failNext = false;
    list = ['payments'];
    expect(await names()).to.deep.equal(['payments']);
    expect(calls).to.equal(4);
  });

  it('an answer that is not a list of streams fails the listing (the last list stands)', async () => {
    const w = world();
    w.streams.create('orders');
    let answer: unknown = ['orders'];
    const set = w.set(() => Promise.resolve(answer as string[]), 60_000);
    await firstValueFrom(set.listShards());
    answer = ['orders', 'or/ders'];
    w.advance(60_000);
    expect(await failure(firstValueFrom(set.listShards()))).to.be.instanceOf(KinsumerError);
  });

  it('a stream deleted and created again is another stream: new keys; the old keys and the old iterators read nothing of it and fail their shard only (StreamGoneError)', async () => {
    const w = world();
    w.streams.create('orders');
    w.streams.get('orders').putRecords([{ partitionKey: 'k', data: 'old' }]);
    const set = w.set(['orders'], 60_000);
    const [oldKey = ''] = (await firstValueFrom(set.listShards())).map((s) => s.shardId);
    const held = await firstValueFrom(set.getShardIterator(oldKey, { type: 'TRIM_HORIZON' }));
    w.streams.delete('orders');
    w.advance(30_000);
    w.streams.create('orders').putRecords([{ partitionKey: 'k', data: 'new' }]);
    // The held iterator was issued by the deleted stream: its stream is gone, for this shard only.
    const error = await failure(firstValueFrom(set.getRecords(held.shardIterator, 10)));
    expect(error).to.be.instanceOf(StreamGoneError);
    expect(stopsTheClient(error)).to.equal(false);
    // "Not found" made the set look again before the next use: the old key is another stream's.
    expect(await failure(firstValueFrom(set.getShardIterator(oldKey, { type: 'TRIM_HORIZON' })))).to.be.instanceOf(StreamGoneError);
    const [newKey = ''] = (await firstValueFrom(set.listShards())).map((s) => s.shardId);
    expect(newKey).not.to.equal(oldKey);
    expect(parseShardKey(newKey)?.stream.creationEpoch).to.equal(BigInt((CREATED_MS + 30_000) / 1000));
    expect(await read(set, newKey)).to.deep.equal(['new']);
  });

  it('a position the stream refuses (InvalidArgumentException: perhaps another stream\'s) makes the set look again at the next use: a stream created again is then gone for the old key', async () => {
    const w = world();
    w.streams.create('orders');
    const set = w.set(['orders'], 60_000);
    const [oldKey = ''] = (await firstValueFrom(set.listShards())).map((s) => s.shardId);
    w.streams.delete('orders');
    w.advance(30_000);
    // Kinesis refuses the old stream's sequence numbers on the new one; the in-memory stream is told to.
    w.streams.create('orders').failNext('getShardIterator', 1, awsError('InvalidArgumentException'));
    const start = { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: '49590000000000000000000000000000000000000000000000001024' } as const;
    expect((await failure(firstValueFrom(set.getShardIterator(oldKey, start))))).to.have.property('name', 'InvalidArgumentException');
    expect(await failure(firstValueFrom(set.getShardIterator(oldKey, { type: 'TRIM_HORIZON' })))).to.be.instanceOf(StreamGoneError);
  });

  it('the stream check finds a stream created again even when no call of this process met the gap', async () => {
    const w = world();
    w.streams.create('orders');
    const set = w.set(['orders'], 60_000);
    const [oldKey] = (await firstValueFrom(set.listShards())).map((s) => s.shardId);
    w.streams.delete('orders');
    w.advance(60_000);
    w.streams.create('orders');
    const [newKey] = (await firstValueFrom(set.listShards())).map((s) => s.shardId);
    expect(newKey).not.to.equal(oldKey);
  });

  it('a process that never listed (not the leader) routes a key by the listed names; a key of a stream no name lists is gone', async () => {
    const w = world();
    w.streams.create('orders').putRecords([{ partitionKey: 'k', data: 'o' }]);
    w.streams.create('payments');
    const [key = ''] = (await firstValueFrom(w.set(['orders']).listShards())).map((s) => s.shardId);
    expect(await read(w.set([w.streams.arn('orders')]), key)).to.deep.equal(['o']);
    const elsewhere = w.set(['payments']);
    expect(await failure(firstValueFrom(elsewhere.getShardIterator(key, { type: 'TRIM_HORIZON' })))).to.be.instanceOf(StreamGoneError);
    // A one-stream group's shard id is no key at all.
    expect(await failure(firstValueFrom(elsewhere.getShardIterator('shardId-000000000000', { type: 'TRIM_HORIZON' })))).to.be.instanceOf(KinsumerError);
  });

  it('a stream dropped from the list is not listed any more, but a lease still held reads on until it is given up', async () => {
    const w = world();
    w.streams.create('orders').putRecords([{ partitionKey: 'k', data: 'o' }]);
    w.streams.create('payments');
    let list = ['orders', 'payments'];
    const set = w.set(() => Promise.resolve(list), 60_000);
    const [key = ''] = (await firstValueFrom(set.listShards())).map((s) => s.shardId);
    const held = await firstValueFrom(set.getShardIterator(key, { type: 'TRIM_HORIZON' }));
    list = ['payments'];
    w.advance(60_000);
    expect((await firstValueFrom(set.listShards())).map((s) => parseShardKey(s.shardId)?.stream.streamName)).to.deep.equal(['payments']);
    const page = await firstValueFrom(set.getRecords(held.shardIterator, 10));
    expect(page.records.map((r) => decoder.decode(r.data))).to.deep.equal(['o']);
  });

  it('a stream listed by name and by ARN is read once', async () => {
    const w = world();
    w.streams.create('orders', { shardCount: 2 });
    const shards = await firstValueFrom(w.set(['orders', w.streams.arn('orders')]).listShards());
    expect(shards).to.have.length(2);
  });

  it('fan-out: each stream\'s own consumer is registered at its first subscription, and events come from the stream the key names', async () => {
    const scheduler = new SteppedScheduler();
    const streams = new MemoryStreams({ clock: () => scheduler.now() });
    for (const name of ['orders', 'payments']) {
      const stream = streams.create(name);
      stream.fanOut = new MemoryFanOut(stream, { scheduler });
      stream.putRecords([{ partitionKey: 'k', data: `${name}-1` }]);
    }
    const set = streams.port({ streams: ['orders', 'payments'], scheduler });
    const keys = (await firstValueFrom(set.listShards())).map((s) => s.shardId);
    const fanOut = set.fanOut;
    if (fanOut === undefined) throw new Error('a stream set has fan-out');
    const consumer = await firstValueFrom(fanOut.describeConsumer('app'));
    const received: string[] = [];
    for (const key of keys) {
      let got: string[] | undefined;
      const subscription = fanOut.subscribeToShard(consumer?.consumerArn ?? '', key, { type: 'TRIM_HORIZON' }).subscribe((pull) => {
        pull.next().subscribe((event) => { got = event?.records.map((r) => decoder.decode(r.data)) ?? []; });
      });
      await scheduler.until(() => got !== undefined, `the first event of ${key}`, 10_000);
      subscription.unsubscribe();
      received.push(...(got ?? []));
    }
    expect(received).to.deep.equal(['orders-1', 'payments-1']);
    for (const name of ['orders', 'payments']) {
      expect(await firstValueFrom((streams.get(name).fanOut as MemoryFanOut).describeConsumer('app')), name).to.have.property('status', 'ACTIVE');
    }
  });

  it('a stream being created (or deleted) has no shards, and does not fail the listing of the others; listed once ACTIVE', async () => {
    // A hand-made source: a stream that stays CREATING is what no local server keeps (they take 50 ms).
    const w = world();
    const orders = w.streams.create('orders');
    let status = 'CREATING';
    let listed = 0;
    const set = new StreamSet({
      streams: ['orders', 'fresh'], streamCheckFrequencyMs: 60_000, elapsedNow: () => 0, logger: QUIET, scheduler: asyncScheduler, emit: () => undefined,
      open: (entry) => (entry === 'orders' ? { port: orders, identify: () => of({ streamArn: w.streams.arn('orders'), createdAt: new Date(CREATED_MS), status: 'ACTIVE' }) } : {
        port: {
          streamLabel: 'fresh',
          getShardIterator: (shardId, start) => orders.getShardIterator(shardId, start),
          getRecords: (iterator, limit) => orders.getRecords(iterator, limit),
          listShards: () => {
            listed += 1;
            return status === 'ACTIVE' ? orders.listShards() : throwError(() => awsError('ResourceInUseException'));
          },
        },
        identify: () => of({ streamArn: w.streams.arn('fresh'), createdAt: new Date(CREATED_MS), status }),
      }),
    });
    const names = async () => (await firstValueFrom(set.listShards())).map((s) => parseShardKey(s.shardId)?.stream.streamName);
    expect(await names()).to.deep.equal(['orders']);
    expect(await names()).to.deep.equal(['orders']);
    expect(listed).to.equal(0);
    status = 'ACTIVE';
    expect(await names()).to.deep.equal(['orders', 'fresh']);
  });

  it('StreamGoneError is a fault of its shard, StreamNotFoundError one of the group', () => {
    expect(stopsTheClient(new StreamGoneError('orders', 'k'))).to.equal(false);
    expect(stopsTheClient(new StreamNotFoundError('orders'))).to.equal(true);
  });
});
