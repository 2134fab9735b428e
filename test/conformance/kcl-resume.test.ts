// After import-kcl, a kinsumer consumer resumes exactly where the KCL would have: on both tiers of
// local servers, from lease tables written exactly as the KCL writes them (test/support/kcl-rows.ts).
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-kinesis';
import { expect } from 'chai';
import { importKclCheckpoints } from '../../src/index.js';
import { createStream } from '../../src/testing/index.js';
import { Collector, type PutRecord, hashKeys, putInto, textsFrom, useTier } from '../support/kcl-fixtures.js';
import { KclLeaseWriter, createKclTable } from '../support/kcl-rows.js';
import { uniqueName } from '../support/local.js';
import { TIERS } from '../support/tiers.js';

const six = (prefix: string) => Array.from({ length: 6 }, (_, i) => `${prefix}-${i}`);

for (const tier of TIERS) {
  describe(`import-kcl: resuming where the KCL stopped, on ${tier.name}`, function () {
    this.timeout(180_000);
    const local = useTier(tier);

    /** A stream of `count` shards, its shard ids sorted and the hash key that reaches each. */
    async function stream(count: number): Promise<{ name: string; shards: string[]; keys: Map<string, string> }> {
      const name = uniqueName('kcl');
      await createStream(local().kinesis, name, count);
      const keys = await hashKeys(local().kinesis, name);
      return { name, shards: [...keys.keys()].sort(), keys };
    }

    async function arrivals(streamName: string, shardId: string): Promise<Map<string, number>> {
      const { ShardIterator } = await local().kinesis.send(new GetShardIteratorCommand({ StreamName: streamName, ShardId: shardId, ShardIteratorType: 'TRIM_HORIZON' }));
      const page = await local().kinesis.send(new GetRecordsCommand({ ShardIterator, Limit: 100 }));
      return new Map((page.Records ?? []).map((r) => [r.SequenceNumber ?? '', r.ApproximateArrivalTimestamp?.getTime() ?? 0]));
    }

    it('delivers exactly the records after each KCL checkpoint, none before and none skipped (rows of KCL 1.3, 2.x, 3.x, 3.5; a sequence number, TRIM_HORIZON, LATEST, AT_TIMESTAMP)', async () => {
      const { name, shards, keys } = await stream(5);
      const [s0 = '', s1 = '', s2 = '', s3 = '', s4 = ''] = shards;
      const put = new Map<string, PutRecord[]>();
      for (const shardId of shards) put.set(shardId, await putInto(local().kinesis, name, keys.get(shardId) ?? '', six(shardId)));
      const records = (shardId: string) => put.get(shardId) ?? [];
      const table = uniqueName('kcl-leases');
      await createKclTable(local().dynamodb, table, '3.5');
      const writer = (version: '1.3' | '2.x' | '3.x' | '3.5') => new KclLeaseWriter(local().dynamodb, table, version);
      // KCL 1.3: checkpointed record 2 (no sub-sequence number in the row).
      const w13 = writer('1.3');
      await w13.create({ shardId: s0 });
      await w13.take(s0, 'worker-a');
      await w13.checkpoint(s0, { sequenceNumber: records(s0)[2]?.sequenceNumber ?? '', subSequenceNumber: 0 });
      // KCL 2.x: checkpointed record 1, with record 4 prepared (pendingCheckpoint, state as bytes): not used.
      const w2 = writer('2.x');
      await w2.create({ shardId: s1, hashRange: { startingHashKey: keys.get(s1) ?? '', endingHashKey: '1' } });
      await w2.take(s1, 'worker-a');
      await w2.checkpoint(s1, { sequenceNumber: records(s1)[1]?.sequenceNumber ?? '', subSequenceNumber: 0 },
        { pending: { sequenceNumber: records(s1)[4]?.sequenceNumber ?? '', subSequenceNumber: 0 }, state: new Uint8Array([1, 2, 3]) });
      // KCL 3.x: taken and renewed, never checkpointed: TRIM_HORIZON.
      const w3 = writer('3.x');
      await w3.create({ shardId: s2 });
      await w3.take(s2, 'worker-b');
      await w3.renew(s2);
      // KCL 3.5: LATEST, and AT_TIMESTAMP with the application's time (record 3's arrival).
      const w35 = writer('3.5');
      await w35.create({ shardId: s3, checkpoint: 'LATEST' });
      await w35.take(s3, 'worker-b');
      await w35.create({ shardId: s4, checkpoint: 'AT_TIMESTAMP' });
      const arrived = await arrivals(name, s4);
      const timestamp = new Date(arrived.get(records(s4)[3]?.sequenceNumber ?? '') ?? 0);

      const app = uniqueName('kcl-app');
      const plan = await importKclCheckpoints({ dynamodb: local().dynamodb, kinesis: local().kinesis, leaseTable: table, applicationName: app, streamName: name, watchMs: 100, timestamp });
      expect(plan.refused, JSON.stringify(plan.shards)).to.deep.equal([]);
      expect(plan.written).to.equal(5);
      expect(plan.shards.find((l) => l.shardId === s1)?.reason).to.contain('pendingCheckpoint');
      // LATEST is the import's moment (DynamoDB's clock), as a reset to LATEST stores it: a record
      // put between the import and the group's first capture is delivered (review-4 §3.6).
      const importedAt = Number((await local().dynamodb.send(new GetItemCommand({ TableName: `${app}_checkpoints`, Key: { Shard: { S: s3 } }, ConsistentRead: true }))).Item?.ResetTimestamp?.N);
      expect(importedAt, 'the LATEST row\'s ResetTimestamp').to.be.above(0);
      const between = await putInto(local().kinesis, name, keys.get(s3) ?? '', [`${s3}-between`]);
      const arrivedS3 = await arrivals(name, s3);
      const sinceImport = [...records(s3), ...between].filter((r) => (arrivedS3.get(r.sequenceNumber) ?? 0) >= importedAt).flatMap((r) => r.texts);
      expect(sinceImport).to.include(`${s3}-between`);

      const consumer = new Collector({ kinesis: local().kinesis, dynamodb: local().dynamodb, stream: name, app });
      try {
        await consumer.reading(shards);
        const after = new Map(shards.map((id) => [id, `${id}-after`]));
        for (const [shardId, text] of after) await putInto(local().kinesis, name, keys.get(shardId) ?? '', [text]);
        await consumer.delivered(after, 'every shard\'s record put after the start');
        const atOrAfterTimestamp = records(s4).filter((r) => (arrived.get(r.sequenceNumber) ?? 0) >= timestamp.getTime()).flatMap((r) => r.texts);
        expect(Object.fromEntries(shards.map((id) => [id, consumer.texts(id)]))).to.deep.equal({
          [s0]: [...textsFrom(records(s0), 3), `${s0}-after`],
          [s1]: [...textsFrom(records(s1), 2), `${s1}-after`],
          [s2]: [...textsFrom(records(s2), 0), `${s2}-after`],
          [s3]: [...sinceImport, `${s3}-after`],
          [s4]: [...atOrAfterTimestamp, `${s4}-after`],
        });
        expect(atOrAfterTimestamp).to.include(`${s4}-3`).and.not.include(`${s4}-0`);
      } finally {
        await consumer.stop();
      }
    });

    it('resumes a KPL aggregate in its middle by the sub-sequence number, as the KCL does ((s, 2) mid-aggregate; (s, 0) on a plain record; checkpoint(record) on an aggregate writes (s, 0))', async () => {
      const { name, shards, keys } = await stream(3);
      const layout = (p: string) => [{ aggregate: [`${p}-a0`, `${p}-a1`, `${p}-a2`, `${p}-a3`, `${p}-a4`] }, { aggregate: [`${p}-b0`, `${p}-b1`, `${p}-b2`, `${p}-b3`, `${p}-b4`] }, `${p}-plain`, { aggregate: [`${p}-c0`, `${p}-c1`, `${p}-c2`] }];
      const put = new Map<string, PutRecord[]>();
      for (const shardId of shards) put.set(shardId, await putInto(local().kinesis, name, keys.get(shardId) ?? '', layout(shardId)));
      const [mid = '', onPlain = '', aggregateZero = ''] = shards;
      const seqOf = (shardId: string, index: number) => put.get(shardId)?.[index]?.sequenceNumber ?? '';
      const table = uniqueName('kcl-leases');
      await createKclTable(local().dynamodb, table, '2.x');
      const kcl = new KclLeaseWriter(local().dynamodb, table, '2.x');
      const checkpoints: [string, { sequenceNumber: string; subSequenceNumber: number }][] = [
        [mid, { sequenceNumber: seqOf(mid, 1), subSequenceNumber: 2 }],
        [onPlain, { sequenceNumber: seqOf(onPlain, 2), subSequenceNumber: 0 }],
        [aggregateZero, { sequenceNumber: seqOf(aggregateZero, 0), subSequenceNumber: 0 }],
      ];
      for (const [shardId, checkpoint] of checkpoints) {
        await kcl.create({ shardId });
        await kcl.take(shardId, 'worker-a');
        await kcl.checkpoint(shardId, checkpoint);
      }
      const app = uniqueName('kcl-app');
      const plan = await importKclCheckpoints({ dynamodb: local().dynamodb, kinesis: local().kinesis, leaseTable: table, applicationName: app, streamName: name, watchMs: 100 });
      expect(plan.refused).to.deep.equal([]);
      expect(plan.shards.map((l) => l.start)).to.deep.equal([
        { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: seqOf(mid, 1), subSequenceNumber: 2 },
        { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: seqOf(onPlain, 2) },
        { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: seqOf(aggregateZero, 0), subSequenceNumber: 0 },
      ]);
      const consumer = new Collector({ kinesis: local().kinesis, dynamodb: local().dynamodb, stream: name, app });
      try {
        const after = new Map(shards.map((id) => [id, `${id}-after`]));
        for (const [shardId, text] of after) await putInto(local().kinesis, name, keys.get(shardId) ?? '', [text]);
        await consumer.delivered(after, 'every shard\'s last record');
        const records = (shardId: string) => put.get(shardId) ?? [];
        expect(Object.fromEntries(shards.map((id) => [id, consumer.texts(id)]))).to.deep.equal({
          [mid]: [...textsFrom(records(mid), 1, 3), `${mid}-after`],
          [onPlain]: [...textsFrom(records(onPlain), 3), `${onPlain}-after`],
          [aggregateZero]: [...textsFrom(records(aggregateZero), 0, 1), `${aggregateZero}-after`],
        });
      } finally {
        await consumer.stop();
      }
    });
  });
}
