// Causes on top (issue 34 item 5, newcomer trial 4 §3a): a client without a region, without
// credentials, or with an endpoint that lacks its scheme fails at once, and the error that reaches
// the application says which — not `describing table X_clients failed` with the cause one level
// down. Real SDK clients; nothing is contacted (the SDK fails before it sends).
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { expect } from 'chai';
import { firstValueFrom } from 'rxjs';
import { ConfigError, EndpointError, Kinsumer, KinsumerError, createTables } from '../../../src/index.js';
import { localDynamoDbClient, localKinesisClient } from '../../../src/testing/index.js';
import { BARE_AWS_ENV, withEnv } from '../../support/env.js';
import { QUIET } from '../../support/memory-group.js';

const CREDENTIALS = { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local' };

/** The error the consumer's records$ ends with. */
async function startError(kinesis: KinesisClient, dynamodb: DynamoDBClient): Promise<unknown> {
  const consumer = new Kinsumer({ streamName: 'events', applicationName: 'setup-causes', kinesis, dynamodb, logger: QUIET });
  try {
    return await firstValueFrom(consumer.records$).then(() => undefined, (error: unknown) => error);
  } finally {
    await consumer.stop().catch(() => undefined);
    kinesis.destroy();
    dynamodb.destroy();
  }
}

describe('setup causes on top: no region, no credentials, an endpoint without its scheme', () => {
  it('clients without a region: the message names the missing region and where to give it', async () => {
    const error = await withEnv(BARE_AWS_ENV, () => startError(new KinesisClient({}), new DynamoDBClient({})));
    expect(error).to.be.instanceOf(KinsumerError);
    expect((error as Error).message).to.match(/: the (DynamoDB|Kinesis) client has no region: give the client one \(\{ region: 'eu-west-1' \}\), set AWS_REGION, or pass --region to the CLI$/);
    expect((error as KinsumerError).retriable).to.equal(false);
  });

  it('a region and no credentials: the message says no credentials were found and where they come from', async () => {
    const error = await withEnv(BARE_AWS_ENV, () => startError(
      new KinesisClient({ region: 'eu-west-1', endpoint: 'http://127.0.0.1:9' }),
      new DynamoDBClient({ region: 'eu-west-1', endpoint: 'http://127.0.0.1:9' }),
    ));
    expect((error as Error).message).to.match(/: the (DynamoDB|Kinesis) client found no AWS credentials \(Could not load credentials from any providers\): /);
    expect((error as Error).message).to.contain('AWS_ACCESS_KEY_ID').and.contain('AWS_PROFILE');
  });

  for (const endpoint of ['localhost:8000', '127.0.0.1:8000']) {
    it(`an endpoint without its scheme (${endpoint}): the message says so and how to write it`, async () => {
      const dynamodb = new DynamoDBClient({ region: 'eu-west-1', endpoint, credentials: CREDENTIALS, maxAttempts: 1 });
      const error = await createTables({ dynamodb, applicationName: 'no-scheme' }).then(() => undefined, (e: unknown) => e);
      dynamodb.destroy();
      expect((error as Error).message).to.contain(`the DynamoDB endpoint ${endpoint} has no scheme: write it as http://${endpoint} (or https://)`);
      let cause: unknown = error;
      while (cause instanceof KinsumerError && !(cause instanceof EndpointError)) cause = cause.cause;
      expect(cause).to.be.instanceOf(EndpointError).and.include({ service: 'DynamoDB', endpoint, retriable: false });
    });
  }

  it('the testing kit refuses an endpoint without its scheme where it is given (ConfigError)', () => {
    const config = { region: 'us-east-1', endpoints: { kinesis: 'http://127.0.0.1:1', dynamodb: 'localhost:8000' }, credentials: CREDENTIALS };
    expect(() => localDynamoDbClient(config)).to.throw(ConfigError, 'invalid option endpoints.dynamodb: localhost:8000 has no scheme: write it as http://localhost:8000 (or https://)');
    expect(() => localKinesisClient(config, { endpoint: '127.0.0.1:4567' })).to.throw(ConfigError, 'invalid option endpoint: 127.0.0.1:4567 has no scheme');
    localKinesisClient(config).destroy();
  });
});
