import { randomBytes } from 'node:crypto';
import { DescribeStreamSummaryCommand, PutRecordCommand, UpdateMaxRecordSizeCommand } from '@aws-sdk/client-kinesis';
import { expect } from 'chai';
import { firstValueFrom, take, tap, toArray } from 'rxjs';
import { Kinsumer, createTables } from '../../../src/index.js';
import { createStream } from '../../../src/testing/index.js';
import { uniqueName, useLocalAws } from '../../support/local.js';
import { FAST } from '../../support/memory-group.js';

// Records up to 10 MiB end to end (design §9.1): kinesis-local takes UpdateMaxRecordSize and such
// records; kinesalite stops at 1 MiB. kinesis-local counts about 90 bytes of metadata per record
// against GetRecords' 10 MiB (and answers 500 for a record past it), so the largest record it
// serves is a little under 10 MiB: this one leaves it 128 bytes. The exact maximum (10 MiB, key
// included) is read byte for byte on the in-memory stream (test/unit/reading/large-records.test.ts).
// kinesis-local is slow with such a record (about 30 s to put and read it back).
describe('10 MiB records end to end (kinesis-local + dynalite)', function () {
  this.timeout(240_000);
  const local = useLocalAws({ kinesis: 'kinesis-local', dynamodb: 'dynalite' });

  it('a stream raised to 10240 KiB: a record of 10 MiB less 128 bytes is delivered byte for byte, and status() says 10240', async () => {
    const stream = uniqueName('large');
    const app = uniqueName('large-app');
    const { kinesis, dynamodb } = local();
    await createStream(kinesis, stream, 1);
    const { StreamDescriptionSummary: summary } = await kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream }));
    await kinesis.send(new UpdateMaxRecordSizeCommand({ StreamARN: summary?.StreamARN, MaxRecordSizeInKiB: 10240 }));
    await createTables({ dynamodb, applicationName: app });
    const big = randomBytes(10 * 1024 * 1024 - 128);
    // PutRecord: kinesis-local's PutRecords takes 5 MiB a request, the limit Kinesis had before 10 MiB records.
    const put = await kinesis.send(new PutRecordCommand({ StreamName: stream, PartitionKey: 'k', Data: big }));
    await kinesis.send(new PutRecordCommand({ StreamName: stream, PartitionKey: 'k', Data: Buffer.from('after') }));
    // kinesis-local takes about 10 s to answer a GetRecords of 10 MiB: longer than the default bound on a call.
    const consumer = new Kinsumer({ ...FAST, requestTimeoutMs: 60_000, streamName: stream, applicationName: app, kinesis, dynamodb });
    try {
      const [first, second] = await firstValueFrom(consumer.records$.pipe(tap((r) => r.ack()), take(2), toArray()));
      expect(first?.sequenceNumber).to.equal(put.SequenceNumber);
      expect(first?.data.byteLength).to.equal(big.byteLength);
      expect(Buffer.from(first?.data ?? new Uint8Array()).equals(big), 'byte for byte').to.equal(true);
      expect(second?.text()).to.equal('after');
      expect(consumer.status().maxRecordSizeKiB).to.equal(10240);
    } finally {
      await consumer.stop();
    }
  });
});
