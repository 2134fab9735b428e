import { expect } from 'chai';
import { firstValueFrom, take, tap, toArray } from 'rxjs';
import { Kinsumer, RecordDecodeError, createTables } from '../../src/index.js';
import { createStream, putRecords } from '../../src/testing/index.js';
import { uniqueName, useLocalAws } from '../support/local.js';
import { FAST } from '../support/memory-group.js';

describe('records as the application receives them: text() and json() (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  it('decode the payload, and refuse a bad one with a RecordDecodeError naming that record', async () => {
    const stream = uniqueName('helpers');
    const app = uniqueName('helpers-app');
    await createStream(local().kinesis, stream, 1);
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    const put = await putRecords(local().kinesis, stream, [
      { partitionKey: 'k', data: '{"order":42,"items":["tea"]}' },
      { partitionKey: 'k', data: 'plain words' },
      { partitionKey: 'k', data: new Uint8Array([0xc3, 0x28]) },
    ]);
    const consumer = new Kinsumer({ ...FAST, streamName: stream, applicationName: app, kinesis: local().kinesis, dynamodb: local().dynamodb });
    try {
      const [json, text, binary] = await firstValueFrom(consumer.records$.pipe(tap((r) => r.ack()), take(3), toArray()));
      expect(json?.json<{ order: number; items: string[] }>().items).to.deep.equal(['tea']);
      expect(json?.text()).to.equal('{"order":42,"items":["tea"]}');
      expect(text?.text()).to.equal('plain words');
      expect(() => text?.json()).to.throw(RecordDecodeError, `record ${put[1]?.sequenceNumber} of shardId-000000000000 is not JSON`);
      expect(() => binary?.text()).to.throw(RecordDecodeError, 'is not UTF-8 text');
    } finally {
      await consumer.stop();
    }
  });
});
