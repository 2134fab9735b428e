// Bad input: the stream or one of the tables disappears while a consumer runs. The consumer must
// fail with a typed error (records$ errors, an `error` event), keep what was acked committed,
// and stop() must still settle: no hang, no silent loss.
import { DeleteTableCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { Kinsumer, StreamNotFoundError, TableNotFoundError } from '../../src/index.js';
import { deleteStream, putRecords } from '../../src/testing/index.js';
import { freshSetup, record, text } from '../support/bad-input.js';
import { eventually, useLocalAws } from '../support/local.js';

describe('bad input: stream or tables deleted mid-run (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  it('stream deleted: records$ errors with StreamNotFoundError, acked records stay committed, stop() settles', async () => {
    const options = await freshSetup(local(), 'gone-stream');
    await putRecords(local().kinesis, options.streamName, ['a', 'b', 'c'].map((data) => ({ partitionKey: 'k', data })));
    const run = record(new Kinsumer(options));
    await eventually(() => run.records.length === 3, 'the three records');
    const lastAcked = run.records[2]?.sequenceNumber;
    // The acked position reaches the table before the stream goes away.
    await eventually(() => run.events.some((e) => e.type === 'checkpoint' && e.checkpoint?.sequenceNumber === lastAcked), 'a commit of the third record');

    await deleteStream(local().kinesis, options.streamName);

    const outcome = await eventually(() => { const o = run.outcome(); return o.kind === 'running' ? undefined : o; }, 'records$ to end');
    expect(outcome.kind).to.equal('error');
    const error = outcome.kind === 'error' ? outcome.error : undefined;
    expect(error).to.be.instanceOf(StreamNotFoundError);
    expect((error as StreamNotFoundError).stream).to.equal(options.streamName);
    expect((error as StreamNotFoundError).cause).to.have.property('name', 'ResourceNotFoundException');
    expect(run.errors().some((e) => e.error instanceof StreamNotFoundError)).to.equal(true);
    await run.consumer.stop();
    expect(run.eventsComplete()).to.equal(true);

    const row = await local().dynamodb.send(new GetItemCommand({
      TableName: `${options.applicationName}_checkpoints`, Key: { Shard: { S: 'shardId-000000000000' } }, ConsistentRead: true,
    }));
    expect(row.Item?.SequenceNumber?.S).to.equal(lastAcked);
    expect(run.records.map(text)).to.deep.equal(['a', 'b', 'c']);
  });

  for (const suffix of ['clients', 'checkpoints', 'metadata'] as const) {
    it(`${suffix} table deleted: records$ errors with TableNotFoundError naming it, stop() settles`, async () => {
      const options = await freshSetup(local(), `gone-${suffix}`, { shards: 2 });
      await putRecords(local().kinesis, options.streamName, [{ partitionKey: 'k', data: 'before' }]);
      const run = record(new Kinsumer(options));
      await eventually(() => run.records.length === 1, 'the first record');
      await eventually(() => run.events.filter((e) => e.type === 'lease-acquired').length === 2, 'both leases');

      const table = `${options.applicationName}_${suffix}`;
      await local().dynamodb.send(new DeleteTableCommand({ TableName: table }));
      // Held leases live by the clients row: an idle client writes its lease rows only at the
      // keep-alive (a minute). A record acked after the delete is the checkpoint write that finds it.
      if (suffix === 'checkpoints') await putRecords(local().kinesis, options.streamName, [{ partitionKey: 'k', data: 'after' }]);

      const outcome = await eventually(() => { const o = run.outcome(); return o.kind === 'running' ? undefined : o; }, 'records$ to end');
      expect(outcome.kind).to.equal('error');
      const error = outcome.kind === 'error' ? outcome.error : undefined;
      expect(error).to.be.instanceOf(TableNotFoundError);
      expect((error as TableNotFoundError).table).to.equal(table);
      expect(run.errors().some((e) => e.error instanceof TableNotFoundError)).to.equal(true);
      // stop() after a fatal error neither hangs nor throws: releases that cannot be written are events.
      await run.consumer.stop();
      expect(run.eventsComplete()).to.equal(true);
      if (suffix !== 'checkpoints') {
        // The checkpoints table is still there: the acked record was committed on the way out.
        const first = run.records[0];
        const row = await local().dynamodb.send(new GetItemCommand({
          TableName: `${options.applicationName}_checkpoints`, Key: { Shard: { S: first?.shardId ?? '' } }, ConsistentRead: true,
        }));
        expect(row.Item?.SequenceNumber?.S).to.equal(first?.sequenceNumber);
      }
    });
  }
});
