// A KCL multi-stream application's lease table, whole, into a kinsumer group that reads `streams`,
// and back (design §9.2), on both tiers: the leases of every stream of the table are imported under
// the group's keys, the group resumes each stream right after the KCL's checkpoints, and the
// export writes a multi-stream table a KCL worker resumes from where kinsumer stopped (read the way
// the KCL resumes: test/support/kcl-resume.ts).
import { DescribeStreamSummaryCommand, type KinesisClient } from '@aws-sdk/client-kinesis';
import { GetItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { Kinsumer, exportKclCheckpoints, importKclCheckpoints, type KinsumerRecord } from '../../src/index.js';
import { parseShardKey } from '../../src/ports/stream-key.js';
import { createStream } from '../../src/testing/index.js';
import { hashKeys, putInto, useTier } from '../support/kcl-fixtures.js';
import { kclWouldDeliver } from '../support/kcl-resume.js';
import { KclLeaseWriter, createKclTable } from '../support/kcl-rows.js';
import { eventually, uniqueName } from '../support/local.js';
import { FAST } from '../support/memory-group.js';
import { TIERS } from '../support/tiers.js';

const texts = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

/** The account and creation time of a stream, as DescribeStreamSummary tells them. */
async function identityOf(kinesis: KinesisClient, stream: string): Promise<{ account: string; createdMs: number }> {
  const summary = (await kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream }))).StreamDescriptionSummary;
  return { account: summary?.StreamARN?.split(':')[4] ?? '', createdMs: summary?.StreamCreationTimestamp?.getTime() ?? 0 };
}

for (const tier of TIERS) {
  describe(`import-kcl / export-kcl of a KCL multi-stream table, on ${tier.name}`, function () {
    this.timeout(240_000);
    const local = useTier(tier);

    it('the table whole (streams: \'all\') into a streams group, which resumes each stream after the KCL; exported back, a KCL worker resumes after kinsumer', async () => {
      const [orders, payments] = [uniqueName('kcl-orders'), uniqueName('kcl-payments')];
      await Promise.all([createStream(local().kinesis, orders, 2), createStream(local().kinesis, payments, 1)]);
      const [o0 = '', o1 = ''] = [...(await hashKeys(local().kinesis, orders)).keys()].sort();
      const [p0 = ''] = [...(await hashKeys(local().kinesis, payments)).keys()];
      const oKeys = await hashKeys(local().kinesis, orders);
      const pKeys = await hashKeys(local().kinesis, payments);
      const inO0 = await putInto(local().kinesis, orders, oKeys.get(o0) ?? '', texts('o0', 5));
      await putInto(local().kinesis, orders, oKeys.get(o1) ?? '', texts('o1', 2));
      const inP0 = await putInto(local().kinesis, payments, pKeys.get(p0) ?? '', texts('p0', 3));

      // One KCL application, two streams: orders keyed in seconds, payments in milliseconds (the application's choice),
      // and a lease left by an older stream named orders (deleted and created again since).
      const [o, p] = [await identityOf(local().kinesis, orders), await identityOf(local().kinesis, payments)];
      const table = uniqueName('kcl-multi');
      await createKclTable(local().dynamodb, table, '3.x');
      const kclOrders = new KclLeaseWriter(local().dynamodb, table, '3.x', `${o.account}:${orders}:${Math.floor(o.createdMs / 1000)}`);
      const kclPayments = new KclLeaseWriter(local().dynamodb, table, '3.x', `${p.account}:${payments}:${p.createdMs}`);
      const kclOlder = new KclLeaseWriter(local().dynamodb, table, '3.x', `${o.account}:${orders}:${Math.floor(o.createdMs / 1000) - 86_400}`);
      for (const shardId of [o0, o1]) await kclOrders.create({ shardId });
      await kclPayments.create({ shardId: p0 });
      await kclOlder.create({ shardId: o0, checkpoint: { sequenceNumber: inO0[4]?.sequenceNumber ?? '', subSequenceNumber: 0 } });
      await kclOrders.take(o0, 'worker-a');
      await kclOrders.checkpoint(o0, { sequenceNumber: inO0[2]?.sequenceNumber ?? '', subSequenceNumber: 0 });
      await kclPayments.take(p0, 'worker-b');
      await kclPayments.checkpoint(p0, { sequenceNumber: inP0[0]?.sequenceNumber ?? '', subSequenceNumber: 0 });

      const app = uniqueName('kcl-multi-app');
      const aws = { dynamodb: local().dynamodb, kinesis: local().kinesis, leaseTable: table, applicationName: app, streams: 'all' as const, watchMs: 100 };
      const imported = await importKclCheckpoints(aws);
      expect(imported.refused).to.deep.equal([]);
      const oKey = (shardId: string) => `${o.account}:${orders}:${Math.floor(o.createdMs / 1000)}:${shardId}`;
      const pKey = (shardId: string) => `${p.account}:${payments}:${Math.floor(p.createdMs / 1000)}:${shardId}`;
      const byShard = Object.fromEntries(imported.shards.map((line) => [line.shardId, [line.action, line.start?.type]]));
      expect(byShard).to.deep.equal({
        [oKey(o0)]: ['write', 'AFTER_SEQUENCE_NUMBER'], [oKey(o1)]: ['write', 'TRIM_HORIZON'], [pKey(p0)]: ['write', 'AFTER_SEQUENCE_NUMBER'],
        [kclOlder.key(o0)]: ['refuse', undefined],
      });
      expect(imported.written).to.equal(3);
      const rows = await local().dynamodb.send(new ScanCommand({ TableName: `${app}_checkpoints`, ConsistentRead: true }));
      expect((rows.Items ?? []).map((item) => item.Shard?.S).sort()).to.deep.equal([oKey(o0), oKey(o1), pKey(p0)].sort());

      // The group that reads both streams resumes where the KCL stopped.
      const kinsumer = new Kinsumer({ ...FAST, streams: [orders, payments], applicationName: app, kinesis: local().kinesis, dynamodb: local().dynamodb, clientId: 'c1' });
      const received: KinsumerRecord[] = [];
      kinsumer.records$.subscribe((record) => { received.push(record); record.ack(); });
      const of = (key: string) => received.filter((r) => r.shardId === key).map((r) => r.text());
      try {
        await eventually(() => of(oKey(o0)).length === 2 && of(oKey(o1)).length === 2 && of(pKey(p0)).length === 2, 'the records after the KCL checkpoints', 30_000);
        await eventually(() => kinsumer.status().shards.every((s) => s.pending === 0 && s.checkpoint !== undefined), 'every checkpoint committed', 10_000);
      } finally {
        await kinsumer.stop();
      }
      expect([of(oKey(o0)), of(oKey(o1)), of(pKey(p0))]).to.deep.equal([['o0-3', 'o0-4'], ['o1-0', 'o1-1'], ['p0-1', 'p0-2']]);
      expect(received.map((r) => r.streamName).sort()).to.deep.equal([orders, orders, orders, orders, payments, payments]);

      // Back to the KCL: the same table, each stream under the key the table gave it (payments in milliseconds).
      const exported = await exportKclCheckpoints(aws);
      expect(exported.refused).to.deep.equal([]);
      expect(exported.written).to.equal(3);
      expect(exported.shards.map((line) => [line.shardId, line.leaseKey]).sort()).to.deep.equal([
        [oKey(o0), kclOrders.key(o0)], [oKey(o1), kclOrders.key(o1)], [pKey(p0), kclPayments.key(p0)],
      ].sort());
      const fresh = {
        [o0]: await putInto(local().kinesis, orders, oKeys.get(o0) ?? '', ['o0-new']),
        [o1]: await putInto(local().kinesis, orders, oKeys.get(o1) ?? '', ['o1-new']),
      };
      const freshP = await putInto(local().kinesis, payments, pKeys.get(p0) ?? '', ['p0-new']);
      const resume = async (stream: string, leaseKey: string) => {
        const item = (await local().dynamodb.send(new GetItemCommand({ TableName: table, Key: { leaseKey: { S: leaseKey } }, ConsistentRead: true }))).Item ?? {};
        expect(item.streamName?.S, leaseKey).to.equal(leaseKey.slice(0, leaseKey.lastIndexOf(':')));
        expect(item.shardId?.S, leaseKey).to.equal(parseShardKey(leaseKey)?.shardId);
        return (await kclWouldDeliver(local().kinesis, stream, { shardId: parseShardKey(leaseKey)?.shardId ?? '', checkpoint: item.checkpoint?.S ?? '', subSequenceNumber: Number(item.checkpointSubSequenceNumber?.N) })).map((r) => r.data);
      };
      expect(await resume(orders, kclOrders.key(o0))).to.deep.equal(fresh[o0]?.flatMap((r) => r.texts));
      expect(await resume(orders, kclOrders.key(o1))).to.deep.equal(fresh[o1]?.flatMap((r) => r.texts));
      expect(await resume(payments, kclPayments.key(p0))).to.deep.equal(freshP.flatMap((r) => r.texts));
    });
  });
}
