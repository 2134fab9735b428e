import { DescribeTableCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { firstValueFrom, take, toArray } from 'rxjs';
import {
  Kinsumer, KinsumerError, ShutdownTimeoutError, StreamNotFoundError, TableNotFoundError, createTables, kinsumer,
  type KinsumerEvent, type KinsumerOptions,
} from '../../src/index.js';
import { createStream, localDynamoDbClient, putRecords } from '../../src/testing/index.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';
import { FAST, MemoryGroup } from '../support/memory-group.js';

describe('Kinsumer lifecycle (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  async function setup(options: { tables?: boolean; stream?: boolean } = {}): Promise<KinsumerOptions> {
    const streamName = uniqueName('life');
    const applicationName = uniqueName('app');
    if (options.stream ?? true) await createStream(local().kinesis, streamName, 2);
    if (options.tables ?? true) await createTables({ dynamodb: local().dynamodb, applicationName });
    return { ...FAST, streamName, applicationName, kinesis: local().kinesis, dynamodb: local().dynamodb };
  }

  it('fails with TableNotFoundError naming the table when tables are missing', async () => {
    const options = await setup({ tables: false });
    const consumer = new Kinsumer(options);
    const error = await firstValueFrom(consumer.records$).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(TableNotFoundError);
    expect((error as TableNotFoundError).table).to.match(/_clients$|_checkpoints$|_metadata$/);
    await consumer.stop();
  });

  it('creates missing tables with createTables: true, then reads', async () => {
    const options = await setup({ tables: false });
    await putRecords(local().kinesis, String(options.streamName), [{ partitionKey: 'a', data: 'x' }]);
    const consumer = new Kinsumer({ ...options, createTables: true });
    const record = await firstValueFrom(consumer.records$);
    record.ack();
    expect(new TextDecoder().decode(record.data)).to.equal('x');
    const table = await local().dynamodb.send(new DescribeTableCommand({ TableName: `${options.applicationName}_checkpoints` }));
    expect(table.Table?.TableStatus).to.equal('ACTIVE');
    await consumer.stop();
  });

  it('fails with StreamNotFoundError when the stream does not exist', async () => {
    const options = await setup({ stream: false });
    const consumer = new Kinsumer(options);
    const error = await firstValueFrom(consumer.leases$).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(StreamNotFoundError);
    expect((error as StreamNotFoundError).cause).to.have.property('name', 'ResourceNotFoundException');
    await consumer.stop();
  });

  it('stop() before any subscription resolves at once and makes the instance unusable', async () => {
    const consumer = new Kinsumer(await setup());
    await consumer.stop();
    await consumer.stop();
    const error = await firstValueFrom(consumer.records$).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(KinsumerError);
    expect((error as Error).message).to.contain('stopped');
  });

  it('stop() twice (and during start) returns the same completion; every lease is released and the client row deleted', async () => {
    const options = await setup();
    const consumer = new Kinsumer({ ...options, clientId: 'twice' });
    const events: KinsumerEvent[] = [];
    consumer.events$.subscribe((e) => events.push(e));
    consumer.records$.subscribe((r) => r.ack());
    const duringStart = consumer.stop();
    await eventually(() => true, 'a tick');
    const again = consumer.stop();
    expect(again).to.equal(duringStart);
    await Promise.all([duringStart, again]);
    const acquired = events.filter((e) => e.type === 'lease-acquired').map((e) => (e.type === 'lease-acquired' ? e.shardId : ''));
    const released = events.filter((e) => e.type === 'lease-released').map((e) => (e.type === 'lease-released' ? e.shardId : ''));
    expect(released.sort()).to.deep.equal(acquired.sort());
  });

  it('the last unsubscribe stops gracefully: the acked position is committed and the lease released', async () => {
    const options = await setup();
    await putRecords(local().kinesis, String(options.streamName), Array.from({ length: 10 }, (_, i) => ({ partitionKey: 'same', data: `r${i}` })));
    const consumer = new Kinsumer({ ...options, clientId: 'unsub' });
    const released: KinsumerEvent[] = [];
    consumer.events$.subscribe((e) => { if (e.type === 'lease-released') released.push(e); });
    const records = await firstValueFrom(consumer.records$.pipe(take(4), toArray()));
    for (const r of records) r.ack();
    const last = records[3];
    // The other shard (no records) may be released first: wait for the release of the records' shard.
    const shardRelease = await eventually(() => released.find((e) => e.type === 'lease-released' && e.shardId === last?.shardId), 'its release after the unsubscribe');
    expect(shardRelease?.type === 'lease-released' ? shardRelease.checkpoint?.sequenceNumber : undefined).to.equal(last?.sequenceNumber);
    await consumer.stop();
  });

  it('kinsumer(): a cold Observable; unsubscribing stops its client and a new subscription starts a fresh one', async () => {
    // Nobody awaits a stop started by an unsubscribe: the test sees each client's leave end (its
    // row deleted, then its group-epoch bump answered) on the wire, so no call outlives the test.
    const dynamodb = localDynamoDbClient(local());
    const deleted = new Set<string>();
    const bumpedAfterLeaving = new Set<string>();
    dynamodb.middlewareStack.add((next, context) => async (args) => {
      const input = args.input as { TableName?: string; Key?: Record<string, { S?: string }>; ExpressionAttributeValues?: Record<string, { S?: string }> };
      const clientId = input.Key?.ID?.S;
      const bumper = input.Key?.Key?.S === 'GroupEpoch' ? input.ExpressionAttributeValues?.[':me']?.S : undefined;
      const leftBefore = bumper !== undefined && deleted.has(bumper);
      const answer = await next(args);
      if (context.commandName === 'DeleteItemCommand' && input.TableName?.endsWith('_clients') && clientId !== undefined) deleted.add(clientId);
      if (leftBefore) bumpedAfterLeaving.add(bumper);
      return answer;
    }, { step: 'initialize' });
    const options = { ...(await setup()), dynamodb };
    await putRecords(local().kinesis, String(options.streamName), [{ partitionKey: 'a', data: 'one' }]);
    const records$ = kinsumer(options);
    const first = await firstValueFrom(records$);
    first.ack();
    await putRecords(local().kinesis, String(options.streamName), [{ partitionKey: 'a', data: 'two' }]);
    const second = await firstValueFrom(records$);
    second.ack();
    expect(new TextDecoder().decode(second.data)).to.be.oneOf(['one', 'two']);
    expect(() => kinsumer({ ...options, throttleDelayMs: 1 })).to.throw(/throttleDelayMs/);
    // Each unsubscribe started a graceful stop: the clients leave, and their leases are released.
    const rows = async () => (await local().dynamodb.send(new ScanCommand({ TableName: `${options.applicationName}_checkpoints`, ConsistentRead: true }))).Items ?? [];
    await eventually(async () => (await rows()).length > 0 && (await rows()).every((row) => row.OwnerID === undefined), 'every lease released');
    await eventually(async () => ((await local().dynamodb.send(new ScanCommand({ TableName: `${options.applicationName}_clients`, ConsistentRead: true }))).Items ?? []).length === 0, 'client rows deleted');
    await eventually(() => deleted.size === 2 && [...deleted].every((id) => bumpedAfterLeaving.has(id)), 'both clients\' leaves to end');
    dynamodb.destroy();
  });
});

describe('stop() bounded by shutdownTimeoutMs (virtual time, in-memory stores)', () => {
  it('rejects with ShutdownTimeoutError when the releases cannot be written, naming what is pending', async () => {
    const group = new MemoryGroup(2, { shutdownTimeoutMs: 2000 });
    const member = group.join('a');
    await group.scheduler.until(() => group.counts().get('a') === 2, 'a holds both shards', 20_000);
    member.pause();
    const stopped = member.kinsumer.stop().then(() => undefined, (e: unknown) => e);
    await group.scheduler.advanceBy(2500);
    const error = await stopped;
    expect(error).to.be.instanceOf(ShutdownTimeoutError);
    expect((error as ShutdownTimeoutError).message).to.contain('shardId-000000000000');
    member.resume();
    await group.scheduler.advanceBy(FAST.leaseTtlMs);
  });
});
