import {
  CreateTableCommand, DeleteTableCommand, DescribeTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand, type DescribeTableCommandInput,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { expect } from 'chai';
import { ConfigError, KinsumerError, createTables, deleteTables } from '../../../src/index.js';
import { uniqueName, useLocalAws } from '../../support/local.js';
import { SteppedScheduler } from '../../support/stepped-scheduler.js';

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

// dynalite moves a table from CREATING to ACTIVE (or DELETING to gone) on its own wall clock; these
// scripted DescribeTable answers hold a table in a status for as long as the test says, so the
// waiter's timing runs on virtual time (aws-sdk-client-mock).
describe('createTables / deleteTables wait on the given scheduler (virtual time, aws-sdk-client-mock)', () => {
  const notFound = () => Object.assign(new Error('Requested resource not found'), { name: 'ResourceNotFoundException', $metadata: { httpStatusCode: 400 } });

  /** A client whose DescribeTable answers `answer(n)` at its n-th call for that table (1-based); records each call's virtual time. */
  function scripted(scheduler: SteppedScheduler, answer: (n: number) => string | undefined) {
    const client = new DynamoDBClient({ region: 'us-east-1' });
    const mock = mockClient(client);
    const calls = new Map<string, number[]>();
    mock.on(DescribeTableCommand).callsFake(async (input: DescribeTableCommandInput) => {
      const table = String(input.TableName);
      const times = [...(calls.get(table) ?? []), scheduler.now()];
      calls.set(table, times);
      const status = answer(times.length);
      // Answered a microtask later, as a request would be (and a rejection, not a throw from send()).
      await Promise.resolve();
      if (status === undefined) throw notFound();
      return { Table: { TableName: table, TableStatus: status } };
    });
    mock.on(CreateTableCommand).resolves({});
    mock.on(DeleteTableCommand).resolves({});
    return { client, mock, calls };
  }

  it('createTables polls a CREATING table at 20, 40, 80, 160 ms of the scheduler until it is ACTIVE', async () => {
    const scheduler = new SteppedScheduler(0);
    const { client, mock, calls } = scripted(scheduler, (n) => (n === 1 ? undefined : n < 6 ? 'CREATING' : 'ACTIVE'));
    let done = false;
    const created = createTables({ dynamodb: client, applicationName: 'virtual', scheduler }).then(() => { done = true; });
    await scheduler.advanceTo(299);
    expect(done, 'still CREATING at 299 ms').to.equal(false);
    await scheduler.advanceTo(300);
    await created;
    expect(Object.fromEntries(calls)).to.deep.equal(Object.fromEntries(['virtual_clients', 'virtual_checkpoints', 'virtual_metadata'].map((t) => [t, [0, 0, 20, 60, 140, 300]])));
    mock.restore();
  });

  it('gives up after timeoutMs of the scheduler, naming the table and the status it is stuck in', async () => {
    const scheduler = new SteppedScheduler(0);
    const { client, mock } = scripted(scheduler, (n) => (n === 1 ? undefined : 'CREATING'));
    let outcome: unknown;
    const created = createTables({ dynamodb: client, applicationName: 'stuck', timeoutMs: 5000, scheduler }).catch((e: unknown) => { outcome = e; });
    await scheduler.advanceTo(4999);
    expect(outcome, 'no answer before the timeout').to.equal(undefined);
    await scheduler.advanceTo(5000);
    expect(outcome, 'answered at 5000 ms of virtual time, not of the wall clock').to.be.instanceOf(KinsumerError);
    await created;
    expect((outcome as KinsumerError).message).to.match(/^table stuck_(clients|checkpoints|metadata) is CREATING, not ACTIVE, after 5000 ms$/);
    expect((outcome as KinsumerError).retriable).to.equal(true);
    mock.restore();
  });

  it('deleteTables polls a DELETING table on the scheduler until it is gone', async () => {
    const scheduler = new SteppedScheduler(0);
    const { client, mock, calls } = scripted(scheduler, (n) => (n < 3 ? 'DELETING' : undefined));
    let done = false;
    const deleted = deleteTables({ dynamodb: client, applicationName: 'going', scheduler }).then(() => { done = true; });
    await scheduler.advanceTo(59);
    expect(done, 'still DELETING at 59 ms').to.equal(false);
    await scheduler.advanceTo(60);
    await deleted;
    expect(calls.get('going_clients')).to.deep.equal([0, 20, 60]);
    mock.restore();
  });
});
