import { createServer, connect, type Server, type Socket } from 'node:net';
import { DescribeStreamConsumerCommand } from '@aws-sdk/client-kinesis';
import { expect } from 'chai';
import { type Subscription, asyncScheduler, concatMap, firstValueFrom } from 'rxjs';
import { readFanOut } from '../../../src/reading/fan-out-reader.js';
import { Kinsumer, type KinsumerEvent, type KinsumerRecord } from '../../../src/index.js';
import { KinesisStream } from '../../../src/kinesis/kinesis.js';
import { ensureConsumer } from '../../../src/reading/stream-consumer.js';
import { createStream, localKinesisClient, openShardIds, putRecords, type LocalAws } from '../../../src/testing/index.js';
import { FAST } from '../../support/memory-group.js';
import { eventually, uniqueName, useLocalAws } from '../../support/local.js';
import { TestTracker } from '../../support/test-tracker.js';

// Enhanced fan-out against kinesis-local (kinesis-mock, a child process) and dynalite. What the
// server cannot do is tested on virtual time in test/unit/reading/fan-out-reader.test.ts and said so
// there: it pushes one event a second, always ends a subscription after 5 minutes (so renewal is
// exercised here by a shorter renewAfterMs of the reader's own), and never reports the end of a
// split parent (ChildShards, no ContinuationSequenceNumber).

const decoder = new TextDecoder();
const text = (record: KinsumerRecord) => decoder.decode(record.data);
const payloads = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => ({ partitionKey: `k${i % 4}`, data: `${prefix}-${i}` }));

/** A TCP relay whose open connections can be cut at will: a dropped subscription, as the client sees it. */
async function startRelay(target: string): Promise<{ endpoint: string; cut(): number; stop(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((inbound) => {
    const outbound = connect(Number(port), hostname);
    const pair: [Socket, Socket] = [inbound, outbound];
    pairs.add(pair);
    inbound.pipe(outbound).pipe(inbound);
    const close = () => { inbound.destroy(); outbound.destroy(); pairs.delete(pair); };
    inbound.on('error', close).on('close', close);
    outbound.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('relay has no address');
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    cut() {
      const count = pairs.size;
      for (const [inbound, outbound] of pairs) { inbound.resetAndDestroy(); outbound.destroy(); }
      pairs.clear();
      return count;
    },
    stop: () => new Promise<void>((resolve) => {
      for (const [inbound, outbound] of pairs) { inbound.destroy(); outbound.destroy(); }
      server.close(() => resolve());
    }),
  };
}

/** A shard read through readFanOut with an acking (or not) consumer. */
function reader(local: LocalAws, streamName: string, shardId: string, options: { maxInFlightRecords?: number; renewAfterMs?: number; autoAck?: boolean; endpoint?: string } = {}) {
  const kinesis = options.endpoint === undefined ? local.kinesis : localKinesisClient(local, { endpoint: options.endpoint, maxAttempts: 1 });
  const stream = new KinesisStream(kinesis, { streamName });
  const tracker = new TestTracker();
  const received: KinsumerRecord[] = [];
  const events: KinsumerEvent[] = [];
  const state = { mostInFlight: 0, error: undefined as unknown };
  const emit = (event: KinsumerEvent) => events.push(event);
  const subscription: Subscription = readFanOut({
    shardId, fanOut: stream.fanOut, tracker, emit, scheduler: asyncScheduler,
    consumerArn$: ensureConsumer({ port: stream.fanOut, consumerName: `${streamName}-consumer`, scheduler: asyncScheduler, emit }),
    start: { type: 'TRIM_HORIZON' },
    maxInFlightRecords: options.maxInFlightRecords ?? 1000,
    ...(options.renewAfterMs === undefined ? {} : { renewAfterMs: options.renewAfterMs }),
  }).subscribe({
    next: (record) => {
      received.push(record);
      state.mostInFlight = Math.max(state.mostInFlight, tracker.inFlight());
      if (options.autoAck !== false) record.ack();
    },
    error: (error: unknown) => { state.error = error; },
  });
  return {
    tracker, received, events, state,
    retries: () => events.filter((e): e is Extract<KinsumerEvent, { type: 'retrying' }> => e.type === 'retrying'),
    stop() {
      subscription.unsubscribe();
      if (kinesis !== local.kinesis) kinesis.destroy();
    },
  };
}

describe('enhanced fan-out on kinesis-local + dynalite', function () {
  this.timeout(180_000);
  const local = useLocalAws({ kinesis: 'kinesis-local', dynamodb: 'dynalite' });

  async function stream(shards = 1): Promise<{ name: string; shardIds: string[] }> {
    const name = uniqueName('fan');
    await createStream(local().kinesis, name, shards);
    return { name, shardIds: await openShardIds(local().kinesis, name) };
  }

  it('registers the consumer and reads the shard\'s records in order through SubscribeToShard', async () => {
    const { name, shardIds } = await stream();
    const shardId = shardIds[0] as string;
    const before = await putRecords(local().kinesis, name, payloads('a', 25));
    const r = reader(local(), name, shardId);
    try {
      await eventually(() => r.received.length >= 25, '25 records');
      const after = await putRecords(local().kinesis, name, payloads('b', 15));
      await eventually(() => r.received.length >= 40, '40 records');
      expect(r.received.map((x) => x.sequenceNumber)).to.deep.equal([...before, ...after].map((p) => p.sequenceNumber));
      expect(r.received.map(text)).to.deep.equal([...payloads('a', 25), ...payloads('b', 15)].map((p) => p.data));
      expect(r.received.every((x) => x.shardId === shardId)).to.equal(true);
      const { ConsumerDescription } = await local().kinesis.send(new DescribeStreamConsumerCommand({
        StreamARN: (await firstValueFrom(new KinesisStream(local().kinesis, { streamName: name }).describeSummary())).streamArn,
        ConsumerName: `${name}-consumer`,
      }));
      expect(ConsumerDescription?.ConsumerStatus).to.equal('ACTIVE');
      expect(r.state.error).to.equal(undefined);
    } finally {
      r.stop();
    }
  });

  it('R12: a LATEST subscription names the stream\'s clock (its answer\'s Date header, less a second) as the group\'s start', async () => {
    const { name, shardIds } = await stream();
    const shardId = shardIds[0] as string;
    const kinesis = new KinesisStream(local().kinesis, { streamName: name });
    const tracker = new TestTracker();
    const starts: number[] = [];
    tracker.streamStart = (streamTime: Date) => { starts.push(streamTime.getTime()); };
    const emit = () => undefined;
    const consumerArn$ = ensureConsumer({ port: kinesis.fanOut, consumerName: `${name}-consumer`, scheduler: asyncScheduler, emit });
    await firstValueFrom(consumerArn$);
    const before = Date.now();
    const subscription = readFanOut({
      shardId, fanOut: kinesis.fanOut, tracker, emit, scheduler: asyncScheduler, consumerArn$, start: { type: 'LATEST' }, maxInFlightRecords: 10,
    }).subscribe();
    try {
      await eventually(() => starts.length > 0, 'the stream\'s clock told');
      expect(starts[0]).to.be.within(before - 2000, Date.now() - 1000);
    } finally {
      subscription.unsubscribe();
    }
  });

  it('resumes after dropped subscriptions without losing or repeating a record', async () => {
    const { name, shardIds } = await stream();
    const relay = await startRelay(local().endpoints.kinesis);
    const r = reader(local(), name, shardIds[0] as string, { endpoint: relay.endpoint });
    const put: string[] = [];
    try {
      for (let round = 0; round < 3; round += 1) {
        put.push(...(await putRecords(local().kinesis, name, payloads(`r${round}`, 10))).map((p) => p.sequenceNumber));
        await eventually(() => r.received.length >= put.length, `${put.length} records`);
        // Mid-subscription: the client's connection is reset under it.
        expect(relay.cut()).to.be.greaterThan(0);
      }
      put.push(...(await putRecords(local().kinesis, name, payloads('last', 10))).map((p) => p.sequenceNumber));
      await eventually(() => r.received.length >= put.length, `${put.length} records`, 60_000);
      expect(r.received.map((x) => x.sequenceNumber)).to.deep.equal(put);
      // Each drop was retried (and kinesis-local may refuse the new subscription for a while: ResourceInUseException).
      expect(r.retries().length).to.be.at.least(3);
      expect(r.retries().every((e) => e.operation === 'SubscribeToShard')).to.equal(true);
      expect(r.state.error).to.equal(undefined);
    } finally {
      r.stop();
      await relay.stop();
    }
  });

  it('renews subscriptions (here every 3 s) while records keep coming, losing and repeating none', async () => {
    const { name, shardIds } = await stream();
    const r = reader(local(), name, shardIds[0] as string, { renewAfterMs: 3000 });
    const put: string[] = [];
    try {
      for (let round = 0; round < 4; round += 1) {
        put.push(...(await putRecords(local().kinesis, name, payloads(`n${round}`, 5))).map((p) => p.sequenceNumber));
        await eventually(() => r.received.length >= put.length, `${put.length} records`, 60_000);
        const renewals = r.retries().length;
        // Past the next renewal: kinesis-local refuses the new subscription for ~3 s after the abort.
        await eventually(() => r.retries().length > renewals, 'a renewal', 60_000);
      }
      expect(r.received.map((x) => x.sequenceNumber)).to.deep.equal(put);
      expect(r.retries().every((e) => e.error.name === 'ResourceInUseException')).to.equal(true);
    } finally {
      r.stop();
    }
  });

  it('holds at most maxInFlightRecords unacked, however many records wait on the shard', async () => {
    const { name, shardIds } = await stream();
    const put = (await putRecords(local().kinesis, name, payloads('bp', 60))).map((p) => p.sequenceNumber);
    const r = reader(local(), name, shardIds[0] as string, { maxInFlightRecords: 7, autoAck: false });
    try {
      await eventually(() => r.received.length === 7 && r.tracker.ackWaits > 0, '7 records, then a wait for acks');
      // Ack one at a time, as the records come.
      while (r.received.length < put.length) {
        await eventually(() => r.tracker.inFlight() > 0, 'a record to ack', 30_000);
        r.tracker.ackFirst(1);
        await new Promise((resolve) => setImmediate(resolve));
      }
      r.tracker.ackAll();
      expect(r.received.map((x) => x.sequenceNumber)).to.deep.equal(put);
      expect(r.state.mostInFlight).to.equal(7);
    } finally {
      r.stop();
    }
  });

  it('a Kinsumer in fan-out mode registers its consumer and delivers every shard\'s records in order', async () => {
    const { name, shardIds } = await stream(2);
    const app = uniqueName('fanapp');
    // Its own client, to see which Kinesis operations the library sends.
    const kinesis = localKinesisClient(local());
    const sent: string[] = [];
    kinesis.middlewareStack.add((next, context) => (args) => {
      sent.push(String(context.commandName));
      return next(args);
    }, { step: 'initialize' });
    const kinsumer = new Kinsumer({
      ...FAST, streamName: name, applicationName: app, readMode: 'fan-out', createTables: true,
      kinesis, dynamodb: local().dynamodb,
    });
    const events: KinsumerEvent[] = [];
    const received: KinsumerRecord[] = [];
    kinsumer.events$.subscribe((event) => events.push(event));
    const subscription = kinsumer.records$.pipe(concatMap(async (record) => {
      received.push(record);
      record.ack();
      await Promise.resolve();
    })).subscribe();
    try {
      const put = await putRecords(local().kinesis, name, payloads('e2e', 40));
      await eventually(() => received.length >= 40, '40 records', 90_000);
      for (const shardId of shardIds) {
        const expected = put.filter((p) => p.shardId === shardId).map((p) => p.sequenceNumber);
        expect(received.filter((x) => x.shardId === shardId).map((x) => x.sequenceNumber)).to.deep.equal(expected);
      }
      expect(new Set(received.map(text)).size).to.equal(40);
      // The checkpoints follow the acks, as in polling mode.
      await eventually(() => shardIds.every((shardId) => events.some((e) => e.type === 'checkpoint' && e.shardId === shardId)), 'a checkpoint of each shard');
      expect(events.filter((e) => e.type === 'error')).to.deep.equal([]);
      const arn = (await firstValueFrom(new KinesisStream(local().kinesis, { streamName: name }).describeSummary())).streamArn;
      const { ConsumerDescription } = await local().kinesis.send(new DescribeStreamConsumerCommand({ StreamARN: arn, ConsumerName: app }));
      expect(ConsumerDescription?.ConsumerStatus).to.equal('ACTIVE');
      expect(sent.filter((c) => c === 'SubscribeToShardCommand').length).to.be.at.least(2);
      expect(sent.filter((c) => c === 'GetRecordsCommand' || c === 'GetShardIteratorCommand')).to.deep.equal([]);
    } finally {
      subscription.unsubscribe();
      await kinsumer.stop();
      kinesis.destroy();
    }
  });
});
