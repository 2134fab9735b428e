import {
  type AttributeValue, type DynamoDBClient, BatchGetItemCommand, CreateTableCommand, GetItemCommand, PutItemCommand, ScanCommand, UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { firstValueFrom } from 'rxjs';
import { Dynamo } from '../../src/dynamodb/dynamo.js';
import { classifyAwsError } from '../../src/errors/aws-error-kind.js';
import { type LocalAwsConfig, type RunningServer, localDynamoDbClient, startDynalite } from '../../src/testing/index.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { errorShape, failure, watchCommands } from '../support/sdk-calls.js';

// kinsumer sends its DynamoDB reads and writes itself after the client's first call of each
// operation (src/connections/lean-call.ts, src/dynamodb/json-answer.ts): here, against dynalite
// behind the fault proxy (which tells the SDK's requests from kinsumer's own, and injects what
// dynalite cannot answer), the outputs must be the SDK's, field for field (binary attributes as
// bytes), and errors exactly the SDK's, never sent twice.

const config = (endpoint: string): LocalAwsConfig => ({
  region: 'us-east-1',
  endpoints: { kinesis: 'http://127.0.0.1:1', dynamodb: endpoint },
  credentials: { accessKeyId: 'AKIDLOCALTEST', secretAccessKey: 'local-test' },
});

const TABLE = 'lean-conformance';

/** An item of every attribute type, binary ones nested too. */
const item = (id: string): Record<string, AttributeValue> => ({
  id: { S: id }, n: { N: '4959033827149025660855969253836157' }, b: { B: Uint8Array.from([0, 1, 254, 255]) },
  yes: { BOOL: true }, none: { NULL: true }, text: { S: 'ünïcödé "quoted" \\ back' },
  list: { L: [{ S: 'a' }, { B: Uint8Array.from([7]) }, { M: { deep: { B: Uint8Array.from([8, 9]) } } }] },
  map: { M: { k: { N: '1' }, bs: { BS: [Uint8Array.from([1]), Uint8Array.from([2, 3])] } } },
  ss: { SS: ['x', 'y'] }, ns: { NS: ['1', '2.5'] },
});

describe('conformance: lean DynamoDB calls against the SDK (dynalite behind the fault proxy)', function () {
  this.timeout(60_000);
  let running: RunningServer;
  let proxy: FaultProxy;
  let client: DynamoDBClient;
  let sdk: DynamoDBClient;
  let dynamo: Dynamo;

  before(async () => {
    running = await startDynalite();
    proxy = await startFaultProxy({ target: running.endpoint });
    // One attempt per call: the SDK's own retries would hide what the proxy answered.
    client = localDynamoDbClient(config(running.endpoint), { endpoint: proxy.endpoint, maxAttempts: 1 });
    sdk = localDynamoDbClient(config(running.endpoint), { maxAttempts: 1 });
    await sdk.send(new CreateTableCommand({
      TableName: TABLE, BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
    }));
    for (let turn = 0; turn < 100; turn += 1) {
      try {
        await sdk.send(new GetItemCommand({ TableName: TABLE, Key: { id: { S: 'probe' } } }));
        break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    dynamo = new Dynamo(client);
  });
  after(async () => {
    client?.destroy();
    sdk?.destroy();
    await proxy?.stop();
    await running?.stop();
  });

  /** The calls made since `from` in the proxy's log: `sdk` when the SDK's stack made them. */
  const made = (from: number) => proxy.log().slice(from).map((c) => `${c.operation}${c.bySdk ? ' (SDK)' : ''}`);

  it('the same outputs as the SDK\'s, every attribute type (binary ones as bytes, nested too); each operation\'s first call the SDK\'s, the next ones kinsumer\'s own', async () => {
    const from = proxy.log().length;
    for (const id of ['a', 'b']) await firstValueFrom(dynamo.putItem({ TableName: TABLE, Item: item(id) }));
    const stored = (await sdk.send(new GetItemCommand({ TableName: TABLE, Key: { id: { S: 'b' } }, ConsistentRead: true }))).Item;
    expect(stored, 'what a lean PutItem wrote, read by the SDK').to.deep.equal(item('b'));
    for (let turn = 0; turn < 2; turn += 1) {
      expect(await firstValueFrom(dynamo.getItem({ TableName: TABLE, Key: { id: { S: 'b' } }, ConsistentRead: true }))).to.deep.equal(stored);
    }
    const dated = await firstValueFrom(dynamo.getItemDated({ TableName: TABLE, Key: { id: { S: 'a' } }, ConsistentRead: true }));
    expect(dated.item).to.deep.equal(item('a'));
    expect(dated.serverDate, 'the Date header of a lean answer').to.be.instanceOf(Date);
    const update = { TableName: TABLE, Key: { id: { S: 'a' } }, UpdateExpression: 'SET #c = :c', ExpressionAttributeNames: { '#c': 'c' }, ExpressionAttributeValues: { ':c': { B: Uint8Array.from([5]) } } };
    await firstValueFrom(dynamo.updateItem(update));
    const updated = await firstValueFrom(dynamo.updateItem(update));
    expect(updated).to.deep.equal((await sdk.send(new UpdateItemCommand({ ...update, ReturnValues: 'ALL_NEW' }))).Attributes);
    const keys = { [TABLE]: { Keys: [{ id: { S: 'a' } }, { id: { S: 'b' } }], ConsistentRead: true } };
    await firstValueFrom(dynamo.batchGetItem({ RequestItems: keys }));
    const batch = await firstValueFrom(dynamo.batchGetItem({ RequestItems: keys }));
    const sdkBatch = await sdk.send(new BatchGetItemCommand({ RequestItems: keys }));
    const byId = (items: Record<string, AttributeValue>[] | undefined) => [...(items ?? [])].sort((x, y) => String(x.id?.S).localeCompare(String(y.id?.S)));
    expect(byId(batch.Responses?.[TABLE])).to.deep.equal(byId(sdkBatch.Responses?.[TABLE]));
    // Paged, so that LastEvaluatedKey goes round through the lean call too.
    await firstValueFrom(dynamo.scanAll({ TableName: TABLE, Limit: 1 }));
    const scanned = await firstValueFrom(dynamo.scanAll({ TableName: TABLE, Limit: 1 }));
    expect(byId(scanned)).to.deep.equal(byId((await sdk.send(new ScanCommand({ TableName: TABLE }))).Items));
    expect(made(from)).to.deep.equal([
      'PutItem (SDK)', 'PutItem', 'GetItem (SDK)', 'GetItem', 'GetItem', 'UpdateItem (SDK)', 'UpdateItem', 'BatchGetItem (SDK)', 'BatchGetItem',
      // Two items, a page each and an empty last one: three calls per scan.
      'Scan (SDK)', 'Scan', 'Scan', 'Scan', 'Scan', 'Scan',
    ]);
  });


  it('a condition that does not hold: the SDK\'s ConditionalCheckFailedException, from one call', async () => {
    const put = { TableName: TABLE, Item: item('c'), ConditionExpression: 'attribute_not_exists(id)' };
    await sdk.send(new PutItemCommand({ TableName: TABLE, Item: item('c') }));
    const expected = await failure(sdk.send(new PutItemCommand(put)));
    const from = proxy.log().length;
    const lean = await failure(firstValueFrom(dynamo.putItem(put)));
    expect(made(from), 'a lean call, its answer the SDK\'s first attempt').to.deep.equal(['PutItem']);
    expect(errorShape(lean)).to.deep.equal(errorShape(expected));
    expect((lean as Error).name).to.equal('ConditionalCheckFailedException');
  });

  for (const error of ['ProvisionedThroughputExceededException', 'ThrottlingException', 'InternalServerError', 'AccessDeniedException']) {
    it(`${error}: the same error as the SDK's, from one call`, async () => {
      proxy.script('GetItem', 1, { kind: 'error', error });
      const expected = await failure(client.send(new GetItemCommand({ TableName: TABLE, Key: { id: { S: 'a' } } })));
      proxy.script('GetItem', 1, { kind: 'error', error });
      const from = proxy.log().length;
      const lean = await failure(firstValueFrom(dynamo.getItem({ TableName: TABLE, Key: { id: { S: 'a' } } })));
      expect(made(from)).to.deep.equal(['GetItem']);
      expect(errorShape(lean)).to.deep.equal(errorShape(expected));
    });
  }

  it('a dropped connection: the same network error class as the SDK\'s (transient)', async () => {
    proxy.script('UpdateItem', 1, { kind: 'drop' });
    const update = { TableName: TABLE, Key: { id: { S: 'a' } }, UpdateExpression: 'SET z = :z', ExpressionAttributeValues: { ':z': { N: '1' } } };
    const expected = await failure(client.send(new UpdateItemCommand(update)));
    proxy.script('UpdateItem', 1, { kind: 'drop' });
    const lean = await failure(firstValueFrom(dynamo.updateItem(update)));
    expect(errorShape(lean).constructor).to.equal(errorShape(expected).constructor);
    expect([classifyAwsError(lean), classifyAwsError(expected)]).to.deep.equal(['transient', 'transient']);
  });

  it('a client with middleware of the application\'s: every call through the SDK, so the middleware sees each', async () => {
    const watched = localDynamoDbClient(config(running.endpoint), { endpoint: proxy.endpoint, maxAttempts: 1 });
    const seen = watchCommands(watched);
    try {
      const traced = new Dynamo(watched);
      const from = proxy.log().length;
      for (let turn = 0; turn < 3; turn += 1) await firstValueFrom(traced.getItem({ TableName: TABLE, Key: { id: { S: 'a' } } }));
      expect(seen).to.deep.equal(['GetItemCommand', 'GetItemCommand', 'GetItemCommand']);
      expect(made(from)).to.deep.equal(['GetItem (SDK)', 'GetItem (SDK)', 'GetItem (SDK)']);
    } finally {
      watched.destroy();
    }
  });
});
