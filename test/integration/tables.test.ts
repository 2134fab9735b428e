import { DescribeTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { expect } from 'chai';
import { ConfigError, KinsumerError, createTables, deleteTables } from '../../src/index.js';
import { uniqueName, useLocalAws } from '../support/local.js';

describe('createTables / deleteTables (dynalite)', () => {
  const local = useLocalAws();

  async function describe3(app: string) {
    const { dynamodb } = local();
    return Promise.all(['clients', 'checkpoints', 'metadata'].map(async (suffix) => {
      const out = await dynamodb.send(new DescribeTableCommand({ TableName: `${app}_${suffix}` }));
      return out.Table;
    }));
  }

  it('creates the three Go kinsumer tables with their string hash keys, on demand by default', async () => {
    const app = uniqueName('tables');
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    const [clients, checkpoints, metadata] = await describe3(app);
    for (const [table, key] of [[clients, 'ID'], [checkpoints, 'Shard'], [metadata, 'Key']] as const) {
      expect(table?.TableStatus).to.equal('ACTIVE');
      expect(table?.KeySchema).to.deep.equal([{ AttributeName: key, KeyType: 'HASH' }]);
      expect(table?.AttributeDefinitions).to.deep.equal([{ AttributeName: key, AttributeType: 'S' }]);
      expect(table?.BillingModeSummary?.BillingMode).to.equal('PAY_PER_REQUEST');
    }
  });

  it('is idempotent: a second createTables succeeds and keeps the data', async () => {
    const app = uniqueName('twice');
    const { dynamodb } = local();
    await createTables({ dynamodb, applicationName: app });
    await dynamodb.send(new PutItemCommand({ TableName: `${app}_clients`, Item: { ID: { S: 'kept' } } }));
    await createTables({ dynamodb, applicationName: app });
    const tables = await describe3(app);
    expect(tables.map((t) => t?.TableStatus)).to.deep.equal(['ACTIVE', 'ACTIVE', 'ACTIVE']);
    const kept = await dynamodb.send(new GetItemCommand({ TableName: `${app}_clients`, Key: { ID: { S: 'kept' } } }));
    expect(kept.Item).to.deep.equal({ ID: { S: 'kept' } });
  });

  it('creates provisioned tables with the given capacities', async () => {
    const app = uniqueName('provisioned');
    await createTables({ dynamodb: local().dynamodb, applicationName: app, billingMode: 'PROVISIONED', readCapacity: 3, writeCapacity: 7 });
    const [clients] = await describe3(app);
    expect(clients?.ProvisionedThroughput?.ReadCapacityUnits).to.equal(3);
    expect(clients?.ProvisionedThroughput?.WriteCapacityUnits).to.equal(7);
  });

  it('deletes the tables, waits until they are gone, and is idempotent', async () => {
    const app = uniqueName('delete');
    const { dynamodb } = local();
    await createTables({ dynamodb, applicationName: app });
    await deleteTables({ dynamodb, applicationName: app });
    await deleteTables({ dynamodb, applicationName: app });
    const error = await dynamodb.send(new DescribeTableCommand({ TableName: `${app}_clients` })).catch((e: unknown) => e);
    expect((error as Error).name).to.equal('ResourceNotFoundException');
  });

  it('rejects bad options with a ConfigError before any call', async () => {
    const { dynamodb } = local();
    for (const [options, option] of [
      [{ dynamodb, applicationName: 'bad name' }, 'applicationName'],
      [{ dynamodb, applicationName: 'ok', billingMode: 'FREE' }, 'billingMode'],
      [{ dynamodb, applicationName: 'ok', billingMode: 'PROVISIONED', readCapacity: 0 }, 'readCapacity'],
      [{ dynamodb: undefined, applicationName: 'ok' }, 'dynamodb'],
    ] as const) {
      const error = await createTables(options as never).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(ConfigError);
      expect((error as ConfigError).option).to.equal(option);
    }
  });
});

describe('createTables with a DescribeTable fault (aws-sdk-client-mock: the local server cannot deny access)', () => {
  it('reports access denied instead of taking the table for missing', async () => {
    const client = new DynamoDBClient({ region: 'us-east-1' });
    const mock = mockClient(client);
    const denied = Object.assign(new Error('not authorized to perform dynamodb:DescribeTable'), {
      name: 'AccessDeniedException', $metadata: { httpStatusCode: 400 },
    });
    mock.on(DescribeTableCommand).rejects(denied);
    const error = await createTables({ dynamodb: client, applicationName: 'denied' }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(KinsumerError);
    expect((error as KinsumerError).cause).to.equal(denied);
    expect((error as KinsumerError).retriable).to.equal(false);
    expect(mock.commandCalls(DescribeTableCommand).length).to.be.greaterThan(0);
    expect(mock.calls().every((call) => call.args[0] instanceof DescribeTableCommand)).to.equal(true);
    mock.restore();
  });
});
