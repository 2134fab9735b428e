// import-kcl's refusals and the KCL table's many kinds of rows, on both tiers: a live KCL fleet, a
// live kinsumer owner, a checkpoint moved backwards (each with --force); multi-stream keys with an
// older stream of the same name, another stream, KCL 3.5's other items, pendingCheckpointState as
// a number and as bytes; and the export back into that multi-stream table.
import { DescribeStreamSummaryCommand } from '@aws-sdk/client-kinesis';
import { GetItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { exportKclCheckpoints, importKclCheckpoints } from '../../src/index.js';
import { createStream } from '../../src/testing/index.js';
import { Collector, hashKeys, putInto, useTier } from '../support/kcl-fixtures.js';
import { KclLeaseWriter, createKclTable, writeKcl35OtherItems } from '../support/kcl-rows.js';
import { eventually, uniqueName } from '../support/local.js';
import { FAST } from '../support/memory-group.js';
import { TIERS } from '../support/tiers.js';

for (const tier of TIERS) {
  describe(`import-kcl: refusals and every kind of KCL row, on ${tier.name}`, function () {
    this.timeout(180_000);
    const local = useTier(tier);

    // A refused import creates nothing: a missing table is "no rows".
    const rows = async (app: string) => local().dynamodb.send(new ScanCommand({ TableName: `${app}_checkpoints`, ConsistentRead: true }))
      .then((out) => out.Items ?? [], (error: Error) => { if (error.name === 'ResourceNotFoundException') return 'no table'; throw error; });
    const move = (app: string, stream: string, leaseTable: string) => ({ dynamodb: local().dynamodb, kinesis: local().kinesis, leaseTable, applicationName: app, streamName: stream });

    it('refuses while the KCL fleet is alive (a leaseCounter moves during the watch), writing nothing; imports once it stopped; --force goes ahead and marks the lines', async () => {
      const stream = uniqueName('kcl-live');
      await createStream(local().kinesis, stream, 2);
      const shards = [...(await hashKeys(local().kinesis, stream)).keys()].sort();
      const table = uniqueName('kcl-leases');
      await createKclTable(local().dynamodb, table, '3.x');
      const fleet = new KclLeaseWriter(local().dynamodb, table, '3.x');
      for (const shardId of shards) {
        await fleet.create({ shardId });
        await fleet.take(shardId, 'worker-a');
      }
      const app = uniqueName('kcl-app');
      // A live worker renews its leases every ~3.3 s: here one renewal lands inside the watch, driven by the test.
      const live = await importKclCheckpoints({ ...move(app, stream, table), watchMs: 200, onWatch: async () => { await fleet.renew(shards[1] ?? ''); } });
      expect(live.written).to.equal(0);
      expect(live.refused[0]).to.contain('the KCL fleet is alive').and.contain(shards[1]);
      expect(live.shards.find((l) => l.shardId === shards[1])).to.deep.include({ action: 'refuse' });
      expect(await rows(app)).to.equal('no table');

      const stopped = await importKclCheckpoints({ ...move(app, stream, table), watchMs: 200 });
      expect([stopped.refused, stopped.written, stopped.watchedMs]).to.deep.equal([[], 2, 200]);

      const forcedApp = uniqueName('kcl-app');
      const forced = await importKclCheckpoints({ ...move(forcedApp, stream, table), watchMs: 200, force: true, onWatch: async () => { await fleet.renew(shards[0] ?? ''); } });
      expect([forced.refused, forced.written]).to.deep.equal([[], 2]);
      expect(forced.shards.map((l) => l.forced ?? false)).to.deep.equal([true, false]);
    });

    it('refuses to overwrite a row a live kinsumer client holds and to move a checkpoint backwards; --force does both and fences the client', async () => {
      const stream = uniqueName('kcl-owner');
      await createStream(local().kinesis, stream, 1);
      const keys = await hashKeys(local().kinesis, stream);
      const [shardId = ''] = [...keys.keys()];
      const put = await putInto(local().kinesis, stream, keys.get(shardId) ?? '', ['r0', 'r1', 'r2', 'r3']);
      const table = uniqueName('kcl-leases');
      await createKclTable(local().dynamodb, table, '2.x');
      const kcl = new KclLeaseWriter(local().dynamodb, table, '2.x');
      await kcl.create({ shardId });
      await kcl.checkpoint(shardId, { sequenceNumber: put[1]?.sequenceNumber ?? '', subSequenceNumber: 0 });
      const app = uniqueName('kcl-app');
      expect((await importKclCheckpoints({ ...move(app, stream, table), watchMs: 50 })).written).to.equal(1);
      const row = async () => (await local().dynamodb.send(new GetItemCommand({ TableName: `${app}_checkpoints`, Key: { Shard: { S: shardId } }, ConsistentRead: true }))).Item;

      const consumer = new Collector({ kinesis: local().kinesis, dynamodb: local().dynamodb, stream, app, clientId: 'live-one' });
      let again: Collector | undefined;
      try {
        await eventually(async () => (await row())?.SequenceNumber?.S === put[3]?.sequenceNumber, 'the consumer to checkpoint r3');
        expect(consumer.texts(shardId)).to.deep.equal(['r2', 'r3']);
        // Started only now: started with the first, it could capture the one shard before it (a flake).
        again = new Collector({ kinesis: local().kinesis, dynamodb: local().dynamodb, stream, app, clientId: 'second' });
        const second = again;
        // The owner renews its row within every leaseTtlMs: a watch that long sees it live.
        const held = await importKclCheckpoints({ ...move(app, stream, table), watchMs: FAST.leaseTtlMs + 500 });
        expect(held.written).to.equal(0);
        expect(held.shards[0]?.reason).to.contain('a live kinsumer client (live-one) holds it').and.contain(`backwards: kinsumer's checkpoint ${put[3]?.sequenceNumber ?? ''} is further`);
        expect((await row())?.SequenceNumber?.S).to.equal(put[3]?.sequenceNumber);

        const forced = await importKclCheckpoints({ ...move(app, stream, table), watchMs: 50, force: true });
        expect(forced.written).to.equal(1);
        expect(forced.shards[0]).to.deep.include({ action: 'write', forced: true });
        // Fenced: the client loses the lease and, like any other, reads again from the imported checkpoint.
        await eventually(() => consumer.events.some((e) => e.type === 'lease-lost'), 'the live client to lose its lease');
        await eventually(() => consumer.texts(shardId).length + second.texts(shardId).length >= 4, 'r2 and r3 read again');
        expect([...consumer.texts(shardId), ...second.texts(shardId)].slice(2).sort()).to.deep.equal(['r2', 'r3']);
        await eventually(async () => (await row())?.SequenceNumber?.S === put[3]?.sequenceNumber, 'r3 checkpointed again');
      } finally {
        await Promise.all([consumer.stop(), again?.stop()]);
      }
      // Stopped (the lease released): backwards alone is refused.
      expect((await row())?.OwnerID).to.equal(undefined);
      const backwards = await importKclCheckpoints({ ...move(app, stream, table), watchMs: 50 });
      expect(backwards.written).to.equal(0);
      expect(backwards.shards[0]?.reason).to.equal(`backwards: kinsumer's checkpoint ${put[3]?.sequenceNumber ?? ''} is further (--force writes it anyway)`);
    });

    it('takes this stream\'s multi-stream leases (pendingCheckpointState as N and as B), refuses an older stream\'s with the reason, leaves other streams and 3.5\'s other items alone; exports back with the same keys', async () => {
      const stream = uniqueName('kcl-multi');
      await createStream(local().kinesis, stream, 2);
      const keys = await hashKeys(local().kinesis, stream);
      const [s0 = '', s1 = ''] = [...keys.keys()].sort();
      const put = await putInto(local().kinesis, stream, keys.get(s0) ?? '', ['m0', 'm1', 'm2']);
      const summary = (await local().kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream }))).StreamDescriptionSummary;
      const account = summary?.StreamARN?.split(':')[4] ?? '';
      const epoch = Math.floor((summary?.StreamCreationTimestamp?.getTime() ?? 0) / 1000);
      const id = `${account}:${stream}:${epoch}`;
      const table = uniqueName('kcl-leases');
      await createKclTable(local().dynamodb, table, '3.5');
      const kcl = new KclLeaseWriter(local().dynamodb, table, '3.5', id);
      await kcl.create({ shardId: s0, pendingCheckpointStateAsNumber: true, hashRange: { startingHashKey: keys.get(s0) ?? '', endingHashKey: '1' } });
      await kcl.take(s0, 'worker-a');
      await kcl.checkpoint(s0, { sequenceNumber: put[0]?.sequenceNumber ?? '', subSequenceNumber: 0 }, { pending: { sequenceNumber: put[1]?.sequenceNumber ?? '', subSequenceNumber: 0 }, state: new Uint8Array([9]) });
      await kcl.create({ shardId: s1, checkpoint: 'LATEST', pendingCheckpointStateAsNumber: true });
      const older = new KclLeaseWriter(local().dynamodb, table, '3.5', `${account}:${stream}:${epoch - 86_400}`);
      await older.create({ shardId: s0, checkpoint: 'SHARD_END' });
      const other = new KclLeaseWriter(local().dynamodb, table, '3.5', `${account}:payments:${epoch}`);
      await other.create({ shardId: s0 });
      await writeKcl35OtherItems(local().dynamodb, table, id);

      const app = uniqueName('kcl-app');
      const plan = await importKclCheckpoints({ ...move(app, stream, table), watchMs: 50 });
      expect([plan.refused, plan.written, plan.ignored]).to.deep.equal([[], 2, { otherStreams: 1, otherItems: 5 }]);
      expect(plan.shards.map((l) => [l.leaseKey, l.action, l.start?.type])).to.deep.equal([
        [`${id}:${s0}`, 'write', 'AFTER_SEQUENCE_NUMBER'],
        // The KCL's LATEST is kinsumer's LATEST from the import's moment: a time (review-4 §3.6).
        [`${id}:${s1}`, 'write', 'AT_TIMESTAMP'],
        [`${account}:${stream}:${epoch - 86_400}:${s0}`, 'refuse', undefined],
      ]);
      expect(plan.shards[0]?.reason).to.contain('pendingCheckpoint');
      expect(plan.shards[2]?.reason).to.contain(`an older stream named ${stream}`);

      const exported = await exportKclCheckpoints({ ...move(app, stream, table), watchMs: 50 });
      expect(exported.written).to.equal(2);
      const item = (await local().dynamodb.send(new GetItemCommand({ TableName: table, Key: { leaseKey: { S: `${id}:${s0}` } }, ConsistentRead: true }))).Item;
      expect(item).to.deep.include({
        checkpoint: { S: put[0]?.sequenceNumber ?? '' }, checkpointSubSequenceNumber: { N: '0' }, streamName: { S: id }, shardId: { S: s0 }, ownerSwitchesSinceCheckpoint: { N: '0' },
      });
      expect(Object.keys(item ?? {})).to.not.include.members(['leaseOwner', 'pendingCheckpoint', 'pendingCheckpointState', 'entityType']);
      expect(BigInt(item?.leaseCounter?.N ?? '0') > BigInt(kcl.counter(s0)), 'leaseCounter above the KCL\'s').to.equal(true);
    });
  });
}
