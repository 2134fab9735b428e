// From the KCL and back, on both tiers: a resharded stream (a split, then a merge) imported from a
// KCL table, consumed by kinsumer with parents before children, and exported again; the exported
// leases are then read the way a KCL worker resumes (test/support/kcl-resume.ts, independent of
// kinsumer's reading code), so "the rows a KCL would resume from" is checked by what it would deliver.
import { type AttributeValue, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { createTables, exportKclCheckpoints, importKclCheckpoints, resetCheckpoints } from '../../src/index.js';
import { createStream, mergeShards, splitShard } from '../../src/testing/index.js';
import { Collector, type PutRecord, hashKeys, putInto, useTier } from '../support/kcl-fixtures.js';
import { kclWouldDeliver } from '../support/kcl-resume.js';
import { KclLeaseWriter, createKclTable } from '../support/kcl-rows.js';
import { uniqueName } from '../support/local.js';
import { TIERS } from '../support/tiers.js';

const texts = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

for (const tier of TIERS) {
  describe(`import-kcl, then export-kcl: a resharded stream there and back, on ${tier.name}`, function () {
    this.timeout(240_000);
    const local = useTier(tier);

    const item = async (table: string, leaseKey: string) => (await local().dynamodb.send(new GetItemCommand({ TableName: table, Key: { leaseKey: { S: leaseKey } }, ConsistentRead: true }))).Item ?? {};
    const last = (records: readonly PutRecord[]) => records.at(-1)?.sequenceNumber ?? '';

    it('split and merge parents at SHARD_END with their children: children after their parents; exported back, a KCL resumes after kinsumer\'s checkpoints', async () => {
      const stream = uniqueName('kcl-reshard');
      await createStream(local().kinesis, stream, 2);
      let keys = await hashKeys(local().kinesis, stream);
      const [p0 = '', p1 = ''] = [...keys.keys()].sort();
      const put = async (shardId: string, records: readonly string[]) => putInto(local().kinesis, stream, keys.get(shardId) ?? '', records);
      const inP0 = await put(p0, texts('p0', 3));
      const inP1 = await put(p1, texts('p1', 3));
      const [c1 = '', c2 = ''] = await splitShard(local().kinesis, stream, p0);
      keys = await hashKeys(local().kinesis, stream);
      const inC1 = await put(c1, texts('c1', 3));
      const inC2 = await put(c2, texts('c2', 2));
      const c3 = await mergeShards(local().kinesis, stream, c2, p1);
      keys = await hashKeys(local().kinesis, stream);
      const inC3 = await put(c3, texts('c3', 3));

      // The KCL read p0 and c2 to their ends (SHARD_END, children created first), c1 and p1 part way; c3 waits for p1.
      const table = uniqueName('kcl-leases');
      await createKclTable(local().dynamodb, table, '3.x');
      const kcl = new KclLeaseWriter(local().dynamodb, table, '3.x');
      for (const shardId of [p0, p1]) {
        await kcl.create({ shardId });
        await kcl.take(shardId, 'worker-a');
      }
      await kcl.checkpoint(p0, { sequenceNumber: last(inP0), subSequenceNumber: 0 });
      await kcl.shardEnd(p0, [{ shardId: c1, parentShardIds: [p0] }, { shardId: c2, parentShardIds: [p0] }]);
      await kcl.take(c1, 'worker-a');
      await kcl.checkpoint(c1, { sequenceNumber: inC1[0]?.sequenceNumber ?? '', subSequenceNumber: 0 });
      await kcl.take(c2, 'worker-b');
      await kcl.checkpoint(c2, { sequenceNumber: last(inC2), subSequenceNumber: 0 });
      await kcl.shardEnd(c2, [{ shardId: c3, parentShardIds: [c2, p1] }]);
      await kcl.checkpoint(p1, { sequenceNumber: inP1[0]?.sequenceNumber ?? '', subSequenceNumber: 0 });
      const countersBefore = new Map([p0, p1, c1, c2, c3].map((id) => [id, kcl.counter(id)]));

      const app = uniqueName('kcl-app');
      const imported = await importKclCheckpoints({ dynamodb: local().dynamodb, kinesis: local().kinesis, leaseTable: table, applicationName: app, streamName: stream, watchMs: 100 });
      expect(imported.refused).to.deep.equal([]);
      expect(Object.fromEntries(imported.shards.map((l) => [l.shardId, l.start?.type]))).to.deep.equal({
        [p0]: 'FINISHED', [p1]: 'AFTER_SEQUENCE_NUMBER', [c1]: 'AFTER_SEQUENCE_NUMBER', [c2]: 'FINISHED', [c3]: 'TRIM_HORIZON',
      });

      const consumer = new Collector({ kinesis: local().kinesis, dynamodb: local().dynamodb, stream, app });
      try {
        await consumer.delivered(new Map([[c1, 'c1-2'], [c3, 'c3-2']]), 'the last records of c1 and c3');
      } finally {
        await consumer.stop();
      }
      expect([p0, c2].map((id) => consumer.texts(id))).to.deep.equal([[], []]);
      expect(consumer.texts(c1)).to.deep.equal(['c1-1', 'c1-2']);
      expect(consumer.texts(p1)).to.deep.equal(['p1-1', 'p1-2']);
      expect(consumer.texts(c3)).to.deep.equal(['c3-0', 'c3-1', 'c3-2']);
      // The merge's child only after its unfinished parent was read to its end.
      expect(Math.min(...consumer.order(c3))).to.be.above(Math.max(...consumer.order(p1)));

      const exported = await exportKclCheckpoints({ dynamodb: local().dynamodb, kinesis: local().kinesis, leaseTable: table, applicationName: app, streamName: stream, watchMs: 100 });
      expect(exported.refused).to.deep.equal([]);
      expect(exported.written).to.equal(5);
      const rows = Object.fromEntries(await Promise.all([p0, p1, c1, c2, c3].map(async (id) => [id, await item(table, id)] as const)));
      const kept = (row: Record<string, AttributeValue>) => ({ ...row, leaseCounter: undefined, startingHashKey: undefined, endingHashKey: undefined });
      const common = (id: string) => ({ leaseKey: { S: id }, ownerSwitchesSinceCheckpoint: { N: '0' }, leaseCounter: undefined, startingHashKey: undefined, endingHashKey: undefined });
      expect(kept(rows[p0] ?? {})).to.deep.equal({ ...common(p0), checkpoint: { S: 'SHARD_END' }, checkpointSubSequenceNumber: { N: '0' }, childShardIds: { SS: [c1, c2] } });
      expect(kept(rows[c2] ?? {})).to.deep.equal({ ...common(c2), checkpoint: { S: 'SHARD_END' }, checkpointSubSequenceNumber: { N: '0' }, childShardIds: { SS: [c3] }, parentShardId: { SS: [p0] } });
      expect(kept(rows[p1] ?? {})).to.deep.equal({ ...common(p1), checkpoint: { S: 'SHARD_END' }, checkpointSubSequenceNumber: { N: '0' }, childShardIds: { SS: [c3] } });
      expect(kept(rows[c1] ?? {})).to.deep.equal({ ...common(c1), checkpoint: { S: last(inC1) }, checkpointSubSequenceNumber: { N: '0' }, parentShardId: { SS: [p0] } });
      expect(kept(rows[c3] ?? {})).to.deep.equal({ ...common(c3), checkpoint: { S: last(inC3) }, checkpointSubSequenceNumber: { N: '0' }, parentShardId: { SS: [c2, p1].sort() } });
      for (const [id, row] of Object.entries(rows)) {
        expect(BigInt(row.leaseCounter?.N ?? '0') > BigInt(countersBefore.get(id) ?? 0), `${id}: leaseCounter ${row.leaseCounter?.N ?? ''} above the KCL's ${countersBefore.get(id) ?? 0}`).to.equal(true);
        expect(row.startingHashKey?.S, `${id}: hash range`).to.match(/^\d+$/);
      }

      // Records put after kinsumer stopped: exactly those are what a KCL worker resumes with.
      const newC1 = await put(c1, ['c1-new']);
      const newC3 = await put(c3, ['c3-new-0', 'c3-new-1']);
      const resume = async (id: string) => (await kclWouldDeliver(local().kinesis, stream, { shardId: id, checkpoint: rows[id]?.checkpoint?.S ?? '', subSequenceNumber: Number(rows[id]?.checkpointSubSequenceNumber?.N) })).map((r) => r.data);
      expect(await resume(c1)).to.deep.equal(newC1.flatMap((r) => r.texts));
      expect(await resume(c3)).to.deep.equal(newC3.flatMap((r) => r.texts));
      expect([await resume(p0), await resume(p1), await resume(c2)]).to.deep.equal([[], [], []]);
    });

    it('exports KPL checkpoints so a KCL resumes after the whole aggregate: kinsumer\'s {s, last} as (s, last), and a whole-record {s} (as the Go kinsumer writes it) as (s, last index)', async () => {
      const stream = uniqueName('kcl-kpl-export');
      await createStream(local().kinesis, stream, 2);
      const keys = await hashKeys(local().kinesis, stream);
      const [a = '', b = ''] = [...keys.keys()].sort();
      const put = async (shardId: string, records: Parameters<typeof putInto>[3]) => putInto(local().kinesis, stream, keys.get(shardId) ?? '', records);
      await put(a, ['a-plain', { aggregate: texts('a-agg', 4) }]);
      const inB = await put(b, [{ aggregate: texts('b-agg', 4) }]);
      const app = uniqueName('kcl-app');
      await createTables({ dynamodb: local().dynamodb, applicationName: app });
      const consumer = new Collector({ kinesis: local().kinesis, dynamodb: local().dynamodb, stream, app });
      try {
        await consumer.delivered(new Map([[a, 'a-agg-3'], [b, 'b-agg-3']]), 'both aggregates');
      } finally {
        await consumer.stop();
      }
      // The Go kinsumer stores a whole record: no sub-sequence number.
      await local().dynamodb.send(new UpdateItemCommand({
        TableName: `${app}_checkpoints`, Key: { Shard: { S: b } }, UpdateExpression: 'SET SequenceNumber = :s REMOVE SubSequenceNumber',
        ExpressionAttributeValues: { ':s': { S: last(inB) } },
      }));
      const table = uniqueName('kcl-leases');
      const exported = await exportKclCheckpoints({ dynamodb: local().dynamodb, kinesis: local().kinesis, leaseTable: table, applicationName: app, streamName: stream, watchMs: 100 });
      expect(exported.createdTables).to.deep.equal([table]);
      expect(exported.shards.map((l) => l.kcl?.subSequenceNumber)).to.deep.equal([3, 3]);
      const fresh = [await put(a, ['a-new']), await put(b, ['b-new'])];
      for (const [index, shardId] of [a, b].entries()) {
        const row = await item(table, shardId);
        const delivered = await kclWouldDeliver(local().kinesis, stream, { shardId, checkpoint: row.checkpoint?.S ?? '', subSequenceNumber: Number(row.checkpointSubSequenceNumber?.N) });
        expect(delivered.map((r) => r.data), shardId).to.deep.equal(fresh[index]?.flatMap((r) => r.texts));
      }
    });
    it('the KCL has one AT_TIMESTAMP for the stream: a shard reset to LATEST later than it is exported after its floor (nothing kinsumer consumed comes again), and the plan says so (review-4 §3.5)', async () => {
      const stream = uniqueName('kcl-floor');
      await createStream(local().kinesis, stream, 2);
      const keys = await hashKeys(local().kinesis, stream);
      const [a = '', b = ''] = [...keys.keys()].sort();
      const app = uniqueName('kcl-app');
      await createTables({ dynamodb: local().dynamodb, applicationName: app });
      const aws = { dynamodb: local().dynamodb, kinesis: local().kinesis, applicationName: app, streamName: stream };
      // b starts at a time before any record of a: the stream's earliest start, so the KCL's one time.
      const early = new Date(Date.now() - 60_000);
      const consumed = await putInto(local().kinesis, stream, keys.get(a) ?? '', texts('a', 3));
      const consumer = new Collector({ kinesis: local().kinesis, dynamodb: local().dynamodb, stream, app });
      try {
        await consumer.delivered(new Map([[a, 'a-2']]), 'a-2');
      } finally {
        await consumer.stop();
      }
      expect((await resetCheckpoints({ ...aws, to: { timestamp: early }, shardIds: [b] })).done).to.equal(true);
      // A backlog, skipped by a reset to LATEST: kinsumer would start a at the reset's moment, after a-2.
      const skipped = await putInto(local().kinesis, stream, keys.get(a) ?? '', ['a-backlog-0', 'a-backlog-1']);
      expect((await resetCheckpoints({ ...aws, to: 'LATEST', shardIds: [a] })).done).to.equal(true);

      const table = uniqueName('kcl-leases');
      const exported = await exportKclCheckpoints({ ...aws, leaseTable: table, applicationName: app, watchMs: 100 });
      expect(exported.refused).to.deep.equal([]);
      expect(exported.kclTimestamp).to.deep.equal(early);
      const line = exported.shards.find((l) => l.shardId === a);
      expect(line?.kcl).to.deep.equal({ checkpoint: last(consumed), subSequenceNumber: 0 });
      expect(line?.reason).to.contain(`after its floor ${last(consumed)}`);
      const fresh = await putInto(local().kinesis, stream, keys.get(a) ?? '', ['a-new']);
      const row = await item(table, a);
      const delivered = await kclWouldDeliver(local().kinesis, stream, { shardId: a, checkpoint: row.checkpoint?.S ?? '', subSequenceNumber: Number(row.checkpointSubSequenceNumber?.N) }, exported.kclTimestamp);
      // The backlog the reset skipped comes to the KCL (it has no per-shard time); nothing kinsumer consumed does.
      expect(delivered.map((r) => r.data)).to.deep.equal([...skipped, ...fresh].flatMap((r) => r.texts));
    });
  });
}
