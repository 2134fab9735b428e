import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { UnsupportedExpressionError } from '../../../src/testing/memory-expressions.js';
import { CLIENT_TOKEN_WINDOW_MS, MemoryItemTables } from '../../../src/testing/memory-items.js';

// The in-memory TransactWriteItems, against what DynamoDB (Local 3.3.0, and the AWS documentation)
// answers: see /work/notes/ddb-transactions.md for the experiments these cases mirror.
const add = (account: string, amount: number, condition?: string): TransactWriteItem => ({
  Update: {
    TableName: 'totals', Key: { account: { S: account } }, UpdateExpression: 'ADD amount :a',
    ExpressionAttributeValues: { ':a': { N: String(amount) }, ...(condition === undefined ? {} : { ':max': { N: '5' } }) },
    ...(condition === undefined ? {} : { ConditionExpression: condition }),
  },
});

function tables(): MemoryItemTables {
  const t = new MemoryItemTables();
  t.createTable('totals', ['account']);
  t.createTable('audit', ['pk', 'sk']);
  return t;
}

function thrown(run: () => void): Error & { CancellationReasons?: Array<{ Code: string; Message?: string; Item?: unknown }> } {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  throw new Error('did not throw');
}

const amount = (t: MemoryItemTables, account: string): string | undefined => t.get('totals', { account: { S: account } })?.amount?.N;

describe('MemoryItemTables: TransactWriteItems with DynamoDB\'s semantics', () => {
  it('applies every action, across tables', () => {
    const t = tables();
    t.transact([add('a1', 5), add('a2', 6), { Put: { TableName: 'audit', Item: { pk: { S: 'x' }, sk: { N: '1' } } } }], { nowMs: 0 });
    t.transact([add('a1', 2)], { nowMs: 0 });
    expect([amount(t, 'a1'), amount(t, 'a2')]).to.deep.equal(['7', '6']);
    expect(t.scan('audit')).to.have.length(1);
    expect(t.transactions).to.equal(2);
  });

  it('all or nothing: a failed condition cancels the transaction with one reason per action, in order, every failing one reported', () => {
    const t = tables();
    t.transact([add('a1', 5), add('a2', 6), add('a3', 7)], { nowMs: 0 });
    const error = thrown(() => t.transact([add('a1', 1), add('a2', 1, 'amount < :max'), add('a3', 1, 'amount < :max')], { nowMs: 0 }));
    expect(error.name).to.equal('TransactionCanceledException');
    expect(error.message).to.equal('Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed, ConditionalCheckFailed]');
    expect(error.CancellationReasons?.map((r) => r.Code)).to.deep.equal(['None', 'ConditionalCheckFailed', 'ConditionalCheckFailed']);
    expect([amount(t, 'a1'), amount(t, 'a2'), amount(t, 'a3')], 'nothing applied').to.deep.equal(['5', '6', '7']);
  });

  it('ALL_OLD on a failing action returns the item in its reason (none for a missing item)', () => {
    const t = tables();
    t.transact([add('a1', 9)], { nowMs: 0 });
    const withOld = (write: TransactWriteItem): TransactWriteItem => ({ Update: { ...write.Update!, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } });
    const error = thrown(() => t.transact([withOld(add('a1', 1, 'amount < :max')), withOld(add('zz', 1, 'attribute_exists(amount)'))], { nowMs: 0 }));
    expect(error.CancellationReasons?.[0]?.Item).to.deep.equal({ account: { S: 'a1' }, amount: { N: '9' } });
    expect(error.CancellationReasons?.[1]).to.deep.equal({ Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' });
  });

  it('a type mismatch while applying is that action\'s ValidationError reason; a malformed expression refuses the request', () => {
    const t = tables();
    t.transact([{ Put: { TableName: 'totals', Item: { account: { S: 's' }, amount: { S: 'text' } } } }], { nowMs: 0 });
    const error = thrown(() => t.transact([add('a1', 1), add('s', 1)], { nowMs: 0 }));
    expect(error.CancellationReasons?.map((r) => r.Code)).to.deep.equal(['None', 'ValidationError']);
    const malformed = thrown(() => t.transact([{ Update: { TableName: 'totals', Key: { account: { S: 'a' } }, UpdateExpression: 'ADD amount' } }], { nowMs: 0 }));
    expect(malformed.name).to.equal('ValidationException');
    expect(amount(t, 'a1')).to.equal(undefined);
  });

  it('refuses the whole request: two actions on one item (same table and key; numbers compared as numbers), >100 actions, 4 MiB, a missing table', () => {
    const t = tables();
    const key = (n: string): TransactWriteItem => ({ Delete: { TableName: 'audit', Key: { pk: { S: 'p' }, sk: { N: n } } } });
    expect(thrown(() => t.transact([add('a', 1), add('a', 2)], { nowMs: 0 })).message).to.equal('Transaction request cannot include multiple operations on one item');
    expect(thrown(() => t.transact([key('1'), key('1.0')], { nowMs: 0 })).name).to.equal('ValidationException');
    expect(() => t.transact([key('1'), key('2'), add('p', 1)], { nowMs: 0 }), 'the same key value in two tables is two items').not.to.throw();
    expect(thrown(() => t.transact(Array.from({ length: 101 }, (_, i) => add(`k${i}`, 1)), { nowMs: 0 })).message).to.match(/less than or equal to 100/);
    expect(() => t.transact(Array.from({ length: 100 }, (_, i) => add(`k${i}`, 1)), { nowMs: 0 })).not.to.throw();
    const big = (i: number): TransactWriteItem => ({ Put: { TableName: 'audit', Item: { pk: { S: `b${i}` }, sk: { N: '0' }, pad: { S: 'x'.repeat(390 * 1024) } } } });
    expect(thrown(() => t.transact(Array.from({ length: 11 }, (_, i) => big(i)), { nowMs: 0 })).message).to.match(/cannot exceed 4MB/);
    expect(thrown(() => t.transact([{ Delete: { TableName: 'nope', Key: { k: { S: '1' } } } }], { nowMs: 0 })).name).to.equal('ResourceNotFoundException');
  });

  it('ClientRequestToken: an identical re-send within 10 minutes succeeds without applying; other parameters: IdempotentParameterMismatch; later: a new request', () => {
    const t = tables();
    t.transact([add('a1', 5)], { token: 'tok-1', nowMs: 0 });
    t.transact([add('a1', 5)], { token: 'tok-1', nowMs: CLIENT_TOKEN_WINDOW_MS - 1 });
    expect(amount(t, 'a1')).to.equal('5');
    expect(thrown(() => t.transact([add('a1', 6)], { token: 'tok-1', nowMs: 1 })).name).to.equal('IdempotentParameterMismatchException');
    t.transact([add('a1', 5)], { token: 'tok-1', nowMs: CLIENT_TOKEN_WINDOW_MS });
    expect(amount(t, 'a1'), 'past the window: applied again (AWS: "treated as a new request")').to.equal('10');
    thrown(() => t.transact([add('a1', 1, 'amount < :max')], { token: 'tok-2', nowMs: 0 }));
    t.transact([add('a9', 1, 'attribute_not_exists(amount)')], { token: 'tok-2', nowMs: 0 });
    expect(amount(t, 'a9'), 'a cancelled transaction does not burn its token').to.equal('1');
  });

  it('an extra action (the checkpoint) comes first, with its own condition', () => {
    const t = tables();
    let applied = 0;
    const error = thrown(() => t.transact([add('a1', 1)], { nowMs: 0, extra: { check: () => ({ failed: true, item: { Shard: { S: 's' } } }), apply: () => { applied += 1; } } }));
    expect(error.CancellationReasons?.map((r) => r.Code)).to.deep.equal(['ConditionalCheckFailed', 'None']);
    expect(error.CancellationReasons?.[0]?.Item).to.deep.equal({ Shard: { S: 's' } });
    t.transact([add('a1', 1)], { nowMs: 0, extra: { check: () => ({ failed: false }), apply: () => { applied += 1; } } });
    expect([applied, amount(t, 'a1')]).to.deep.equal([1, '1']);
  });

  it('the expression subset: SET with arithmetic and if_not_exists, REMOVE, ADD/DELETE on sets, conditions; nested paths refused', () => {
    const t = tables();
    type Values = Record<string, AttributeValue>;
    const update = (expression: string, values: Values = {}, condition?: string): void => t.transact([{
      Update: {
        TableName: 'totals', Key: { account: { S: 'x' } }, UpdateExpression: expression, ExpressionAttributeNames: { '#n': 'count' },
        ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}), ...(condition === undefined ? {} : { ConditionExpression: condition }),
      },
    }], { nowMs: 0 });
    update('SET #n = if_not_exists(#n, :zero) + :one, tags = :tags', { ':zero': { N: '0' }, ':one': { N: '1.5' }, ':tags': { SS: ['a', 'b'] } });
    update('SET #n = #n - :half ADD tags :more', { ':half': { N: '0.5' }, ':more': { SS: ['c'] }, ':lo': { N: '1' }, ':hi': { N: '2' } },
      'attribute_exists(#n) AND #n BETWEEN :lo AND :hi');
    expect(() => update('ADD tags :more DELETE tags :less', { ':more': { SS: ['d'] }, ':less': { SS: ['a'] } }), 'two actions on one path').to.throw(/two actions/);
    update('DELETE tags :less', { ':less': { SS: ['a'] } });
    expect(t.get('totals', { account: { S: 'x' } })).to.deep.equal({ account: { S: 'x' }, count: { N: '1' }, tags: { SS: ['b', 'c'] } });
    const failed = (() => { try { update('REMOVE tags', { ':three': { N: '3' } }, 'size(tags) = :three'); return false; } catch { return true; } })();
    expect(failed, 'size(tags) is 2').to.equal(true);
    update('REMOVE tags', { ':two': { N: '2' }, ':x': { S: 'x' }, ':one': { N: '1.0' } },
      'NOT attribute_not_exists(tags) AND (size(tags) = :two OR begins_with(account, :x)) AND #n <> :two AND #n IN (:x, :one)');
    expect(t.get('totals', { account: { S: 'x' } })).to.deep.equal({ account: { S: 'x' }, count: { N: '1' } });
    expect(() => update('SET #n = :v', { ':v': { N: '1' } }, 'a.b = :v')).to.throw(UnsupportedExpressionError);
    expect(() => update('SET a[0] = :v', { ':v': { N: '1' } })).to.throw(UnsupportedExpressionError);
  });
});
