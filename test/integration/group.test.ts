import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { concatMap } from 'rxjs';
import { Kinsumer, createTables, type KinsumerEvent, type KinsumerRecord, type KinsumerSettings, type StreamRef } from '../../src/index.js';
import {
  adjacentOpenShards, createStream, listShards, mergeShards, openShardIds, putRecords, splitShard, type LocalAws,
} from '../../src/testing/index.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';
import { FAST } from '../support/memory-group.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readAckLogs } from '../support/ack-log.js';
import { WorkerProcess } from '../../examples/demo/fleet.js';

const decoder = new TextDecoder();
// One process, one thread: a shared counter orders every receipt of every in-process client.
let receipts = 0;

/** An in-process client that acks each record as it arrives, and what it saw. */
class Client {
  readonly kinsumer: Kinsumer;
  readonly received: KinsumerRecord[] = [];
  /** Global receipt order of each received record. */
  readonly order: number[] = [];
  readonly events: KinsumerEvent[] = [];

  constructor(local: LocalAws, options: Omit<KinsumerSettings, 'kinesis' | 'dynamodb'> & StreamRef) {
    this.kinsumer = new Kinsumer({ ...FAST, ...options, kinesis: local.kinesis, dynamodb: local.dynamodb });
    this.kinsumer.events$.subscribe((event) => this.events.push(event));
    this.kinsumer.records$.pipe(concatMap(async (record) => {
      this.received.push(record);
      this.order.push(receipts++);
      record.ack();
      await Promise.resolve();
    })).subscribe();
  }

  held(): Set<string> {
    const held = new Set<string>();
    for (const event of this.events) {
      if (event.type === 'lease-acquired') held.add(event.shardId);
      if (event.type === 'lease-released' || event.type === 'lease-lost') held.delete(event.shardId);
    }
    return held;
  }

  data(): string[] {
    return this.received.map((r) => decoder.decode(r.data));
  }
}

function records(prefix: string, count: number, keys = count) {
  return Array.from({ length: count }, (_, i) => ({ partitionKey: `key-${i % keys}`, data: `${prefix}-${i}` }));
}

describe('group coordination on kinsumer + kinesalite + dynalite', function () {
  this.timeout(120_000);
  const local = useLocalAws();

  async function setup(shards: number): Promise<{ stream: string; app: string }> {
    const stream = uniqueName('group');
    const app = uniqueName('app');
    await createStream(local().kinesis, stream, shards);
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    return { stream, app };
  }

  it('two then three consumers on 6 shards: balanced within a few checks, every record acked exactly once', async () => {
    const { stream, app } = await setup(6);
    const produced = (await putRecords(local().kinesis, stream, records('a', 300))).length;
    const clients = [new Client(local(), { streamName: stream, applicationName: app, clientId: 'c1' }), new Client(local(), { streamName: stream, applicationName: app, clientId: 'c2' })];
    await eventually(() => clients.every((c) => c.held().size === 3), '3/3', 10 * FAST.shardCheckFrequencyMs);
    clients.push(new Client(local(), { streamName: stream, applicationName: app, clientId: 'c3' }));
    await eventually(() => clients.every((c) => c.held().size === 2), '2/2/2', 10 * FAST.shardCheckFrequencyMs);
    await putRecords(local().kinesis, stream, records('b', 300));
    const all = () => clients.flatMap((c) => c.data());
    await eventually(() => all().length >= produced + 300, 'all records', 30_000);
    await Promise.all(clients.map((c) => c.kinsumer.stop()));
    expect(all()).to.have.length(produced + 300);
    expect(new Set(all()).size).to.equal(produced + 300);
  });

  it('a graceful stop hands the shards to the others; no acked record is delivered again', async () => {
    const { stream, app } = await setup(4);
    await putRecords(local().kinesis, stream, records('a', 100));
    const [a, b] = [new Client(local(), { streamName: stream, applicationName: app, clientId: 'a' }), new Client(local(), { streamName: stream, applicationName: app, clientId: 'b' })];
    await eventually(() => a.data().length + b.data().length >= 100 && a.held().size === 2 && b.held().size === 2, 'balanced, all read', 30_000);
    await a.kinsumer.stop();
    await eventually(() => b.held().size === 4, 'b holds all 4', 10 * FAST.shardCheckFrequencyMs);
    await putRecords(local().kinesis, stream, records('b', 100));
    await eventually(() => a.data().length + b.data().length >= 200, 'second batch', 30_000);
    await b.kinsumer.stop();
    const all = [...a.data(), ...b.data()];
    expect(all).to.have.length(200);
    expect(new Set(all).size).to.equal(200);
  });

  it('idle shards (no data for several lease TTLs) keep their owner', async () => {
    const { stream, app } = await setup(2);
    const [a, b] = [new Client(local(), { streamName: stream, applicationName: app, clientId: 'a' }), new Client(local(), { streamName: stream, applicationName: app, clientId: 'b' })];
    await eventually(() => a.held().size === 1 && b.held().size === 1, '1/1', 10 * FAST.shardCheckFrequencyMs);
    const owners = [...a.held(), ...b.held()];
    const idleUntil = Date.now() + 3 * FAST.leaseTtlMs;
    await eventually(() => Date.now() >= idleUntil, 'three lease TTLs to pass', 4 * FAST.leaseTtlMs, 200);
    expect([...a.held(), ...b.held()]).to.deep.equal(owners);
    expect([...a.events, ...b.events].filter((e) => e.type === 'lease-lost' || e.type === 'lease-acquired')).to.have.length(2);
    await Promise.all([a.kinsumer.stop(), b.kinsumer.stop()]);
  });

  it('split and merge: for every partition key, all parent records before any child record', async () => {
    const { stream, app } = await setup(2);
    const keys = 20;
    await putRecords(local().kinesis, stream, records('gen0', 100, keys));
    const [a, b] = [new Client(local(), { streamName: stream, applicationName: app, clientId: 'a' }), new Client(local(), { streamName: stream, applicationName: app, clientId: 'b' })];
    const [first] = await openShardIds(local().kinesis, stream);
    await splitShard(local().kinesis, stream, first ?? '');
    await putRecords(local().kinesis, stream, records('gen1', 100, keys));
    const [x, y] = await adjacentOpenShards(local().kinesis, stream);
    await mergeShards(local().kinesis, stream, x, y);
    await putRecords(local().kinesis, stream, records('gen2', 100, keys));
    const all = () => [...a.received, ...b.received];
    await eventually(() => all().length >= 300, 'all 300 records', 60_000);
    await Promise.all([a.kinsumer.stop(), b.kinsumer.stop()]);
    expect(new Set(all().map((r) => decoder.decode(r.data))).size).to.equal(300);
    const shards = await listShards(local().kinesis, stream);
    const parentsOf = new Map(shards.map((s) => [s.ShardId ?? '', [s.ParentShardId, s.AdjacentParentShardId].filter((p): p is string => p !== undefined)]));
    const order = [a, b].flatMap((c) => c.received.map((r, i) => ({ r, t: c.order[i] ?? 0 }))).sort((p, q) => p.t - q.t);
    const lastParentRecord = new Map<string, number>();
    order.forEach(({ r }, index) => lastParentRecord.set(`${r.shardId}|${r.partitionKey}`, index));
    order.forEach(({ r }, index) => {
      for (const parent of parentsOf.get(r.shardId) ?? []) {
        const last = lastParentRecord.get(`${parent}|${r.partitionKey}`);
        if (last !== undefined) expect(last, `${r.partitionKey}: parent ${parent} record after child ${r.shardId} record`).to.be.below(index);
      }
    });
  });

  it('resumes from tables written by the Go kinsumer', async () => {
    const { stream, app } = await setup(2);
    const put = await putRecords(local().kinesis, stream, records('old', 40));
    // The Go kinsumer's checkpoint row format: full items, NULL-typed empty owner, ns timestamps.
    const lastOld = new Map<string, string>();
    for (const p of put) lastOld.set(p.shardId, p.sequenceNumber);
    const nowNs = (BigInt(Date.now()) * 1_000_000n).toString();
    for (const [shardId, sequenceNumber] of lastOld) {
      await local().dynamodb.send(new PutItemCommand({
        TableName: `${app}_checkpoints`,
        Item: {
          Shard: { S: shardId }, SequenceNumber: { S: sequenceNumber }, LastUpdate: { N: nowNs },
          LastUpdateRFC: { S: 'Wed, 02 Dec 2026 17:00:00 +0000' }, OwnerID: { NULL: true }, OwnerName: { NULL: true },
          Finished: { NULL: true }, FinishedRFC: { NULL: true },
        },
      }));
    }
    await local().dynamodb.send(new PutItemCommand({
      TableName: `${app}_metadata`,
      Item: { Key: { S: 'ShardCache' }, ShardIDs: { L: [...lastOld.keys()].sort().map((s) => ({ S: s })) }, LastUpdate: { N: nowNs } },
    }));
    await local().dynamodb.send(new PutItemCommand({
      TableName: `${app}_clients`,
      Item: { ID: { S: 'go-client-long-gone' }, Name: { S: 'go' }, LastUpdate: { N: '1600000000000000000' }, LastUpdateRFC: { S: 'old' } },
    }));
    await putRecords(local().kinesis, stream, records('new', 40));
    const client = new Client(local(), { streamName: stream, applicationName: app, clientId: 'ts' });
    await eventually(() => client.data().length >= 40, 'the new records', 30_000);
    await client.kinsumer.stop();
    expect(client.data().every((d) => d.startsWith('new-'))).to.equal(true);
    expect(client.data()).to.have.length(40);
  });

  describe('with worker processes', () => {
    let logDir: string;
    beforeEach(() => { logDir = mkdtempSync(join(tmpdir(), 'kinsumer-group-')); });

    function worker(id: string, stream: string, app: string): WorkerProcess {
      return new WorkerProcess({ id, logDir, aws: { region: local().region, endpoints: local().endpoints, credentials: local().credentials }, options: { ...FAST, streamName: stream, applicationName: app } });
    }

    /** What a worker acked, from the ack logs (written before each ack, so they survive a SIGKILL). */
    function acked(w: WorkerProcess) {
      return readAckLogs(logDir).filter((line) => line.w === w.id);
    }

    it('SIGKILL of a worker: its shards are consumed by another after about leaseTtlMs', async () => {
      const { stream, app } = await setup(4);
      const [w1, w2] = [worker('w1', stream, app), worker('w2', stream, app)];
      try {
        await eventually(() => w1.held().length === 2 && w2.held().length === 2, '2/2', 60_000);
        const victimShards = w1.held();
        await w1.kill();
        const killedAt = Date.now();
        await putRecords(local().kinesis, stream, records('after-kill', 40));
        await eventually(() => victimShards.every((s) => acked(w2).some((r) => r.shardId === s)), 'w2 reading the dead worker\'s shards', 10 * FAST.leaseTtlMs);
        const firstTaken = Math.min(...victimShards.map((s) => acked(w2).find((r) => r.shardId === s)?.e ?? Number.POSITIVE_INFINITY));
        // Not a speed assertion: the shards must not move before the dead worker's lease has expired.
        expect(firstTaken - killedAt).to.be.at.least(FAST.leaseTtlMs - FAST.commitFrequencyMs - FAST.leaseTtlMs / 3);
        await eventually(() => acked(w2).filter((r) => r.data.startsWith('after-kill')).length >= 40, 'all records after the kill', 30_000);
        expect(w2.failures).to.deep.equal([]);
      } finally {
        await Promise.all([w1.kill(), w2.stop()]);
      }
    });

    it('leader crash: another becomes leader, and new shards are still picked up', async () => {
      const { stream, app } = await setup(2);
      const [w1, w2] = [worker('a-leader', stream, app), worker('b-follower', stream, app)];
      try {
        await eventually(() => w1.events.some((e) => e.type === 'leader-acquired') && w1.held().length === 1 && w2.held().length === 1, 'a-leader leads, 1/1', 60_000);
        await w1.kill();
        await eventually(() => w2.events.some((e) => e.type === 'leader-acquired'), 'b-follower becomes leader', 10 * FAST.leaseTtlMs);
        const [open] = await openShardIds(local().kinesis, stream);
        const children = await splitShard(local().kinesis, stream, open ?? '');
        await putRecords(local().kinesis, stream, records('late', 60));
        await eventually(() => children.every((c) => w2.held().includes(c)), 'the new shards held by the new leader', 20 * FAST.leaseTtlMs);
        await eventually(() => acked(w2).filter((r) => r.data.startsWith('late')).length >= 60, 'records on the new shards', 30_000);
      } finally {
        await Promise.all([w1.kill(), w2.stop()]);
      }
    });
  });
});

