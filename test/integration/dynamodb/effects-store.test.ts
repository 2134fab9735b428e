import {
  CreateTableCommand, type DynamoDBClient, GetItemCommand, type TransactWriteItem, type TransactWriteItemsCommandInput, UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { type Observable, firstValueFrom, lastValueFrom } from 'rxjs';
import { Dynamo } from '../../../src/dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../../src/dynamodb/lease-store.js';
import { createTables } from '../../../src/dynamodb/tables.js';
import { LeaseLostError } from '../../../src/errors/kinsumer-errors.js';
import { EarlierTransactionAppliedError, TransactionCancelledError, TransactionRejectedError } from '../../../src/errors/write-errors.js';
import type { CheckpointWrite, HeldLease, LeaseStore } from '../../../src/ports/lease-store.js';
import { MemoryItemTables } from '../../../src/testing/memory-items.js';
import { MemoryCheckpointTable, MemoryLeaseStore } from '../../../src/testing/memory-lease-store.js';
import { uniqueName, useLocalAws } from '../../support/local.js';
import { TIERS, skipUnless } from '../../support/tiers.js';

// The lease store's transactional commit (design §8.1) on Amazon's DynamoDB Local (dynalite has no
// transactions) and on the in-memory store, case by case: both must answer alike. DynamoDB Local
// cannot produce conflicts or throttling (one global lock; see /work/notes/ddb-transactions.md):
// those are covered on the in-memory store (test/unit/checkpoint/checkpointer-effects.test.ts).

const SEQ = (n: number) => `4959033827149025660855969253836157109592157598913658${String(n).padStart(4, '0')}`;
const TTL_MS = 10_000;
const write = (n: number): CheckpointWrite => ({ checkpoint: { type: 'position', position: { sequenceNumber: SEQ(n) } }, finished: false });
const add = (account: string, amount: number, condition?: string): TransactWriteItem => ({
  Update: {
    TableName: 'TOTALS', Key: { account: { S: account } }, UpdateExpression: 'ADD amount :a',
    ExpressionAttributeValues: { ':a': { N: String(amount) } }, ...(condition === undefined ? {} : { ConditionExpression: condition }),
  },
});
const send = (o: Observable<void>) => lastValueFrom(o, { defaultValue: undefined });
async function failure(o: Observable<void>): Promise<unknown> {
  try {
    await send(o);
  } catch (error) {
    return error;
  }
  throw new Error('did not fail');
}

/** What a case needs of a backend: stores of clients sharing one set of tables, and the totals. */
interface Backend {
  /** A store of `clientId`; `strip` sends without ClientRequestToken (as a re-send after its 10 minutes would be). */
  store(clientId: string, now: () => number, options?: { strip?: boolean }): LeaseStore;
  total(account: string): Promise<number>;
  /** Names the user table (unique per case on the shared server). */
  readonly totals: string;
}

function cases(name: string, backend: () => Promise<Backend>): void {
  describe(`commitWithWrites on ${name}`, () => {
    let b: Backend;
    let shard = 0;
    beforeEach(async () => { b = await backend(); shard += 1; });
    const on = (w: TransactWriteItem): TransactWriteItem => ({ Update: { ...w.Update!, TableName: b.totals } });
    const capture = async (store: LeaseStore, id: string): Promise<HeldLease> => {
      const held = await firstValueFrom(store.capture(id));
      if (held === undefined) throw new Error('capture failed');
      return held;
    };

    it('applies the writes with the checkpoint; a re-send of the same request (same token) applies nothing again', async () => {
      const store = b.store('me', () => 1_000);
      const id = `s${shard}`;
      const lease = await capture(store, id);
      const request$ = store.commitWithWrites!(lease, write(1), { token: `tok-${id}`, writes: [on(add('a', 5)), on(add('b', 6))], after: undefined });
      await send(request$);
      await send(request$);
      expect([await b.total('a'), await b.total('b')]).to.deep.equal([5, 6]);
      const row = await firstValueFrom(store.read(id));
      expect(row?.checkpoint).to.deep.equal(write(1).checkpoint);
      expect(row?.transactionToken).to.equal(`tok-${id}`);
    });

    it('a re-send without the token\'s protection (past its 10 minutes) fails the token condition and counts as applied: once', async () => {
      const store = b.store('me', () => 1_000, { strip: true });
      const id = `s${shard}`;
      const lease = await capture(store, id);
      const request$ = store.commitWithWrites!(lease, write(1), { token: `late-${id}`, writes: [on(add('c', 3))], after: undefined });
      await send(request$);
      await send(request$);
      expect(await b.total('c')).to.equal(3);
      // The next transaction of this lease is conditioned on the last one's token: it goes through.
      await send(store.commitWithWrites!(lease, write(2), { token: `next-${id}`, writes: [on(add('c', 1))], after: `late-${id}` }));
      expect(await b.total('c')).to.equal(4);
    });

    it('a re-send past its token\'s window after another client captured: the row still holds its token, so it applied (not LeaseLostError)', async () => {
      // Review-4 §3.4: reported as LeaseLostError (then "abandoned: not applied") although it applied.
      let nowMs = 1_000;
      const mine = b.store('me', () => nowMs, { strip: true });
      const rival = b.store('rival', () => nowMs);
      const id = `s${shard}`;
      const lease = await capture(mine, id);
      const request$ = mine.commitWithWrites!(lease, write(1), { token: `gone-${id}`, writes: [on(add('g', 2))], after: undefined });
      await send(request$);
      await firstValueFrom(rival.read(id));
      nowMs += TTL_MS + 1;
      await capture(rival, id);
      await send(request$);
      expect(await b.total('g')).to.equal(2);
    });

    it('a transaction whose condition meets an earlier token of this lease (sent, its answer never a success): that one applied; the next follows it', async () => {
      const mine = b.store('me', () => 1_000);
      const id = `s${shard}`;
      const lease = await capture(mine, id);
      // The first transaction applies, but the lane never hears it (its answers were 500s): the next follows the token before it.
      await send(mine.commitWithWrites!(lease, write(1), { token: `t1-${id}`, writes: [on(add('h', 1))], after: undefined }));
      const error = await failure(mine.commitWithWrites!(lease, write(2), { token: `t2-${id}`, writes: [on(add('h', 10))], after: undefined, earlier: [`t0-${id}`, `t1-${id}`] }));
      expect(error).to.be.instanceOf(EarlierTransactionAppliedError).that.deep.includes({ token: `t1-${id}` });
      expect(await b.total('h')).to.equal(1);
      await send(mine.commitWithWrites!(lease, write(2), { token: `t3-${id}`, writes: [on(add('h', 10))], after: `t1-${id}` }));
      expect(await b.total('h')).to.equal(11);
    });

    it('fenced (another client captured): LeaseLostError, nothing applied', async () => {
      let nowMs = 1_000;
      const mine = b.store('me', () => nowMs);
      const rival = b.store('rival', () => nowMs);
      const id = `s${shard}`;
      const lease = await capture(mine, id);
      await firstValueFrom(rival.read(id));
      nowMs += TTL_MS + 1;
      await capture(rival, id);
      const error = await failure(mine.commitWithWrites!(lease, write(1), { token: `z-${id}`, writes: [on(add('z', 9))], after: undefined }));
      expect(error).to.be.instanceOf(LeaseLostError);
      expect(await b.total('z')).to.equal(0);
    });

    it('a user condition that fails: TransactionCancelledError with a reason per write, nothing applied; the next one commits', async () => {
      const store = b.store('me', () => 1_000);
      const id = `s${shard}`;
      const lease = await capture(store, id);
      const error = await failure(store.commitWithWrites!(lease, write(1), { token: `c-${id}`, writes: [on(add('d', 1)), on(add('e', 1, 'attribute_exists(amount)'))], after: undefined }));
      expect(error).to.be.instanceOf(TransactionCancelledError);
      expect((error as TransactionCancelledError).reasons).to.deep.equal(['None', 'ConditionalCheckFailed']);
      expect((error as TransactionCancelledError).retriable).to.equal(false);
      expect(await b.total('d')).to.equal(0);
      await send(store.commitWithWrites!(lease, write(1), { token: `c2-${id}`, writes: [on(add('d', 1))], after: undefined }));
      expect(await b.total('d')).to.equal(1);
    });

    it('refused as a whole (two actions on one item, an invalid expression): TransactionRejectedError, nothing applied', async () => {
      const store = b.store('me', () => 1_000);
      const id = `s${shard}`;
      const lease = await capture(store, id);
      expect(await failure(store.commitWithWrites!(lease, write(1), { token: `r-${id}`, writes: [on(add('f', 1)), on(add('f', 2))], after: undefined }))).to.be.instanceOf(TransactionRejectedError);
      const invalid: TransactWriteItem = { Update: { TableName: b.totals, Key: { account: { S: 'f' } }, UpdateExpression: 'ADD amount' } };
      expect(await failure(store.commitWithWrites!(lease, write(1), { token: `r2-${id}`, writes: [invalid], after: undefined }))).to.be.instanceOf(TransactionRejectedError);
      expect(await b.total('f')).to.equal(0);
    });

    it('tableKeys: the key names of a table, undefined for a missing one', async () => {
      const store = b.store('me', () => 1_000);
      const keys = await firstValueFrom(store.tableKeys!([b.totals, 'no-such-table']));
      expect([...keys]).to.deep.equal([[b.totals, ['account']], ['no-such-table', undefined]]);
    });
  });
}

describe('records\' writes with the checkpoint, the lease store\'s side', function () {
  this.timeout(60_000);

  cases('the in-memory store', () => {
    const table = new MemoryCheckpointTable();
    const items = new MemoryItemTables();
    items.createTable('TOTALS', ['account']);
    return Promise.resolve({
      totals: 'TOTALS',
      store: (clientId, now, options) => {
        const store = new MemoryLeaseStore({ clientId, leaseTtlMs: TTL_MS, now, table, items });
        // No token: the same request sent again is a new one (as DynamoDB treats it after 10 minutes).
        if (options?.strip === true) withoutClientToken(items);
        return store;
      },
      total: (account) => Promise.resolve(Number(items.get('TOTALS', { account: { S: account } })?.amount?.N ?? 0)),
    });
  });

  for (const tier of TIERS.filter((t) => t.options.dynamodb === 'dynamodb-local')) {
    describe('DynamoDB Local', () => {
      skipUnless(tier);
      const local = useLocalAws({ kinesis: 'kinesalite', dynamodb: 'dynamodb-local' });
      cases('DynamoDB Local', async () => {
        const app = uniqueName('effects');
        const totals = `${app}_totals`;
        const client: DynamoDBClient = local().dynamodb;
        await createTables({ dynamodb: client, applicationName: app });
        await client.send(new CreateTableCommand({
          TableName: totals, BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [{ AttributeName: 'account', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'account', KeyType: 'HASH' }],
        }));
        return {
          totals,
          store: (clientId, now, options) => new DynamoLeaseStore({
            dynamo: options?.strip === true ? new StrippingDynamo(client) : new Dynamo(client),
            table: `${app}_checkpoints`, clientId, clientName: clientId, leaseTtlMs: TTL_MS, now,
          }),
          total: async (account) => Number((await client.send(new GetItemCommand({ TableName: totals, Key: { account: { S: account } }, ConsistentRead: true }))).Item?.amount?.N ?? 0),
        };
      });

      it('tableKeys: a table missing at first is found once it is created (only key schemas are kept)', async () => {
        const app = uniqueName('effects-keys');
        const client: DynamoDBClient = local().dynamodb;
        const store = new DynamoLeaseStore({ dynamo: new Dynamo(client), table: `${app}_checkpoints`, clientId: 'me', clientName: 'me', leaseTtlMs: TTL_MS, now: () => 1_000 });
        const later = `${app}_later`;
        expect([...await firstValueFrom(store.tableKeys([later]))]).to.deep.equal([[later, undefined]]);
        await client.send(new CreateTableCommand({
          TableName: later, BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        }));
        expect([...await firstValueFrom(store.tableKeys([later]))]).to.deep.equal([[later, ['id']]]);
      });

      it('DynamoDB Local answers a fenced transaction with the row as it was (ALL_OLD), which the store reads', async () => {
        const app = uniqueName('effects-old');
        const client: DynamoDBClient = local().dynamodb;
        await createTables({ dynamodb: client, applicationName: app });
        const store = new DynamoLeaseStore({ dynamo: new Dynamo(client), table: `${app}_checkpoints`, clientId: 'me', clientName: 'me', leaseTtlMs: TTL_MS, now: () => 1_000 });
        const lease = await firstValueFrom(store.capture('s'));
        await client.send(new UpdateItemCommand({ TableName: `${app}_checkpoints`, Key: { Shard: { S: 's' } }, UpdateExpression: 'SET OwnerID = :o', ExpressionAttributeValues: { ':o': { S: 'rival' } } }));
        const error = await failure(store.commitWithWrites(lease as HeldLease, write(1), { token: 'x', writes: [], after: undefined }));
        expect(error).to.be.instanceOf(LeaseLostError);
        const reasons = ((error as LeaseLostError).cause as { CancellationReasons?: Array<{ Item?: Record<string, { S?: string }> }> }).CancellationReasons;
        expect(reasons?.[0]?.Item?.OwnerID?.S).to.equal('rival');
      });
    });
  }
});

/** Dynamo that sends transactions without their ClientRequestToken: a re-send is a new request. */
class StrippingDynamo extends Dynamo {
  override transactWriteItems(input: TransactWriteItemsCommandInput): Observable<void> {
    const { ClientRequestToken: _token, ...rest } = input;
    return super.transactWriteItems(rest);
  }
}

/** In-memory tables whose transactions ignore their ClientRequestToken: a re-send is a new request. */
function withoutClientToken(items: MemoryItemTables): void {
  const transact = items.transact.bind(items);
  items.transact = (writes, options) => transact(writes, { nowMs: options.nowMs, ...(options.extra === undefined ? {} : { extra: options.extra }) });
}
