import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { EffectQueue, type PendingEffect } from '../../../src/checkpoint/effects.js';
import {
  CHECKPOINT_ACTION_BYTES, RECORD_MAX_ACTIONS, RECORD_MAX_BYTES, TRANSACTION_MAX_BYTES, canonicalNumber, itemIdentity, weighWrites,
} from '../../../src/checkpoint/transact-writes.js';
import { KinsumerError } from '../../../src/errors/kinsumer-errors.js';
import { WriteRejectedError, WritesTooLargeError } from '../../../src/errors/write-errors.js';

const add = (account: string, amount = 1, table = 'totals'): TransactWriteItem => ({
  Update: { TableName: table, Key: { account: { S: account } }, UpdateExpression: 'ADD amount :a', ExpressionAttributeValues: { ':a': { N: String(amount) } } },
});
const put = (id: string, table = 'events', bytes = 10): TransactWriteItem => ({ Put: { TableName: table, Item: { id: { S: id }, pad: { S: 'x'.repeat(bytes) } } } });

let nextTicket = 0;
function effect(writes: TransactWriteItem[], records = [nextTicket++]): PendingEffect {
  return { records, recordIds: records.map((r) => `s/${r}`), writes, weight: weighWrites(writes, `s/${records[0]}`), settle: undefined };
}

describe('records\' writes against one transaction (transact-writes)', () => {
  it('weighs actions and bytes; 99 actions and RECORD_MAX_BYTES fit, one more is WritesTooLargeError naming the record and the limit', () => {
    expect(weighWrites([add('a'), put('p')], 'r1')).to.deep.include({ actions: 2, tables: ['totals', 'events'] });
    expect(() => weighWrites(Array.from({ length: RECORD_MAX_ACTIONS }, (_, i) => add(`a${i}`)), 'r')).not.to.throw();
    const tooMany = (): unknown => weighWrites(Array.from({ length: RECORD_MAX_ACTIONS + 1 }, (_, i) => add(`a${i}`)), 'shard/42');
    expect(tooMany).to.throw(WritesTooLargeError).that.deep.includes({ recordId: 'shard/42', limit: 'actions', actual: 100, max: 99, retriable: false });
    const base = weighWrites([put('p', 'events', 0)], 'r').bytes;
    expect(() => weighWrites([put('p', 'events', RECORD_MAX_BYTES - base)], 'r')).not.to.throw();
    expect(() => weighWrites([put('p', 'events', RECORD_MAX_BYTES - base + 1)], 'shard/7')).to.throw(WritesTooLargeError).that.deep.includes({ limit: 'bytes', max: RECORD_MAX_BYTES });
    expect(RECORD_MAX_BYTES + CHECKPOINT_ACTION_BYTES).to.equal(TRANSACTION_MAX_BYTES);
  });

  it('refuses what is not one action with a table (KinsumerError at the call)', () => {
    expect(() => weighWrites([{}], 'r')).to.throw(KinsumerError, /exactly one/);
    expect(() => weighWrites([{ ...add('a'), ...put('p') }], 'r')).to.throw(KinsumerError, /exactly one/);
    expect(() => weighWrites([{ Delete: { TableName: '', Key: {} } }], 'r')).to.throw(KinsumerError, /TableName/);
  });

  it('one item is one table and key, numbers and binaries compared as DynamoDB compares them', () => {
    const id = (table: string, key: Record<string, { S?: string; N?: string }>) => itemIdentity({ kind: 'Delete', table, attributes: key as never }, Object.keys(key));
    expect(id('t', { k: { N: '1' } })).to.deep.equal(id('t', { k: { N: '1.0' } }));
    expect(id('t', { k: { N: '100' } })).to.deep.equal(id('t', { k: { N: '1e2' } }));
    expect(id('t', { k: { N: '1' } })).not.to.deep.equal(id('t', { k: { S: '1' } }));
    expect(id('t', { k: { S: 'a' } })).not.to.deep.equal(id('u', { k: { S: 'a' } }));
    expect(['0', '-0', '0.000', '00'].map(canonicalNumber)).to.deep.equal(['0', '0', '0', '0']);
    expect(canonicalNumber('-12.50')).to.equal(canonicalNumber('-1.25e1'));
    expect(itemIdentity({ kind: 'Put', table: 't', attributes: { a: { S: 'x' } } }, ['a', 'b'])).to.deep.equal({ missing: 'b' });
  });
});

describe('the effects queue (packing transactions)', () => {
  const keys = (queue: EffectQueue) => queue.learnKeys(new Map([['events', ['id']], ['totals', ['account']]]));

  it('packs what waits in sequence order, ending before the first record that writes an item already in the transaction', () => {
    const queue = new EffectQueue();
    const [a, b, c, d] = [effect([add('x')]), effect([add('y')]), effect([add('x')]), effect([add('z')])] as [PendingEffect, PendingEffect, PendingEffect, PendingEffect];
    // Added out of order: kept in order of their records.
    for (const e of [b, a, d, c] as PendingEffect[]) queue.add(e);
    keys(queue);
    expect(queue.pack().effects).to.deep.equal([a, b]);
    queue.remove([a, b]);
    expect(queue.pack().effects).to.deep.equal([c, d]);
  });

  it('stays within 100 actions with the checkpoint and 4 MiB, and at most maxEffects', () => {
    const queue = new EffectQueue();
    const big = Array.from({ length: 3 }, () => effect(Array.from({ length: 40 }, () => add(`k${nextTicket}-${Math.random()}`))));
    for (const e of big) queue.add(e);
    keys(queue);
    expect(queue.pack().effects, '1 + 40 + 40 <= 100 < 1 + 120').to.have.length(2);
    const heavy = new EffectQueue();
    keys(heavy);
    const mb = Array.from({ length: 5 }, (_, i) => effect([put(`h${i}`, 'events', 1024 * 1024 - 40)]));
    for (const e of mb) heavy.add(e);
    expect(heavy.pack().effects.length, 'four 1 MiB puts do not fit beside the checkpoint, three do').to.equal(3);
    expect(queue.pack(1).effects).to.have.length(1);
  });

  it('key names come from the table (DescribeTable), never from a Key; packing stops at an effect whose table is unknown', () => {
    const queue = new EffectQueue();
    const [a, b] = [effect([add('x')]), effect([put('p1')])] as [PendingEffect, PendingEffect];
    queue.add(a);
    queue.add(b);
    expect(queue.unknownTables(), 'an Update\'s Key is what one record claims, not the schema').to.deep.equal(['totals', 'events']);
    expect(queue.pack().effects).to.deep.equal([]);
    queue.learnKeys(new Map([['totals', ['account']]]));
    expect(queue.pack().effects).to.deep.equal([a]);
    keys(queue);
    expect(queue.pack().effects).to.deep.equal([a, b]);
  });

  it('a missing table is asked about again once no waiting write needs the answer (it may be created meanwhile)', () => {
    const queue = new EffectQueue();
    const early = effect([put('p1', 'later')]);
    queue.add(early);
    queue.learnKeys(new Map([['later', undefined]]));
    const packed = queue.pack();
    expect(packed.rejected.map((r) => r.effect)).to.deep.equal([early]);
    queue.remove([early]);
    queue.add(effect([put('p2', 'later')]));
    expect(queue.unknownTables()).to.deep.equal(['later']);
  });

  it('rejects (WriteRejectedError, the action\'s index) a missing table, a missing key, one item twice; packs past them', () => {
    const queue = new EffectQueue();
    queue.learnKeys(new Map([['gone', undefined], ['events', ['id']], ['totals', ['account']]]));
    const missingTable = effect([add('x'), { Put: { TableName: 'gone', Item: { id: { S: '1' } } } }]);
    const missingKey = effect([{ Put: { TableName: 'events', Item: { other: { S: '1' } } } }]);
    const twice = effect([add('y'), add('y')]);
    const fine = effect([add('z')]);
    for (const e of [missingTable, missingKey, twice, fine]) queue.add(e);
    const packed = queue.pack();
    expect(packed.effects).to.deep.equal([fine]);
    expect(packed.rejected.map((r) => [r.effect, r.error.actionIndex])).to.deep.equal([[missingTable, 1], [missingKey, 0], [twice, 1]]);
    for (const { error } of packed.rejected) expect(error).to.be.instanceOf(WriteRejectedError);
  });
});
