import { Agent } from 'node:http';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { expect } from 'chai';
import { firstValueFrom, map, take, tap, toArray } from 'rxjs';
import { Kinsumer, type KinsumerEvent, createTables } from '../../../src/index.js';
import { createStream, putRecords } from '../../../src/testing/index.js';
import { uniqueName, useLocalAws } from '../../support/local.js';
import { QUIET } from '../../support/memory-group.js';

// What kinsumer cannot change in the application's client, it says once at start, naming the fix
// (design §9.1): here a Kinesis handler the application configured with an agent that opens a
// connection per call (kinesalite + dynalite).

describe('connections: a handler of the application\'s that opens a connection per call', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  it('is warned about once, at start, with the fix; its calls go through it (not counted), the other service\'s on kinsumer\'s own', async () => {
    const stream = uniqueName('per-call');
    const app = uniqueName('per-call-app');
    await createStream(local().kinesis, stream, 2);
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    await putRecords(local().kinesis, stream, [{ partitionKey: 'a', data: 'one' }, { partitionKey: 'b', data: 'two' }]);
    const requestHandler = new NodeHttpHandler({ httpAgent: new Agent({ keepAlive: false }) });
    const kinesis = new KinesisClient({ endpoint: local().endpoints.kinesis, region: local().region, credentials: local().credentials, requestHandler });
    const consumer = new Kinsumer({ streamName: stream, applicationName: app, kinesis, dynamodb: local().dynamodb, logger: QUIET, initialPosition: 'TRIM_HORIZON' });
    const events: KinsumerEvent[] = [];
    consumer.events$.subscribe((event) => events.push(event));
    try {
      const received = await firstValueFrom(consumer.records$.pipe(tap((record) => record.ack()), map((record) => record.text()), take(2), toArray()));
      expect(received.sort()).to.deep.equal(['one', 'two']);
      const warnings = events.filter((e) => e.type === 'warning');
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.deep.include({ type: 'warning', code: 'connection-per-call', service: 'kinesis' });
      expect((warnings[0] as { message: string }).message).to.match(/opens a connection for every call.*keepAlive: true/);
      const { connections } = consumer.status();
      expect(connections.kinesis, 'through the application\'s handler: not kinsumer\'s to count').to.equal(undefined);
      expect(connections.dynamodb?.opened, 'a stock DynamoDB handler: kinsumer\'s own').to.be.at.least(1);
    } finally {
      await consumer.stop();
      kinesis.destroy();
    }
  });
});
