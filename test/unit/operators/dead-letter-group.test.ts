import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { NEVER, concat, defer, ignoreElements } from 'rxjs';
import type { FailedRecord } from '../../../src/index.js';
import type { LeaseStore } from '../../../src/ports/lease-store.js';
import { CrashingFleet, checkpointOf, records, text } from '../../support/crashing-fleet.js';
import { MemoryGroup } from '../../support/memory-group.js';

// Design §9.3 "Dead letters exactly once": onFailure's { writes } are committed in one transaction
// with the checkpoint that passes the failed record (§8.1's write lane), on the in-memory tables
// whose TransactWriteItems follows DynamoDB's rules. The process that dead-letters the poison record
// dies at that transaction: before it was sent, or after it applied but before its answer came.

const DEAD_LETTERS = 'dead_letters';

/** The dead letter: one item per record, counting how often it was written. */
const letter = (failure: FailedRecord): TransactWriteItem => ({
  Update: {
    TableName: DEAD_LETTERS, Key: { record: { S: text(failure.record) } }, UpdateExpression: 'ADD written :one',
    ExpressionAttributeValues: { ':one': { N: '1' } },
  },
});

async function deadLetterCrash(when: 'before' | 'after') {
  const group = new MemoryGroup(1, { commitFrequencyMs: 5000, leaseTtlMs: 6000 });
  group.items.createTable(DEAD_LETTERS, ['record']);
  const put = group.stream.putRecords(Array.from({ length: 6 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
  let armed = true;
  const fleet = new CrashingFleet(group, (record) => text(record) === 'r2', records(group), {
    onFailure: (failure) => ({ writes: [letter(failure)] }),
    // The first transaction that carries a dead letter is where the process dies.
    wrap: (ports, die) => ({
      ...ports,
      store: new Proxy(ports.store, {
        get: (target, property, receiver): unknown => (property === 'commitWithWrites'
          ? (...args: Parameters<NonNullable<LeaseStore['commitWithWrites']>>) => {
            const sent = target.commitWithWrites!(...args);
            if (!armed || !args[2].writes.some((w) => w.Update?.TableName === DEAD_LETTERS)) return sent;
            armed = false;
            return when === 'before'
              ? defer(() => { die(); return NEVER; })
              : concat(sent.pipe(ignoreElements()), defer(() => { die(); return NEVER; }));
          }
          : Reflect.get(target, property, receiver)),
      }),
    }),
  });
  fleet.start();
  await group.scheduler.until(() => checkpointOf(group) === put.at(-1)?.sequenceNumber, 'the checkpoint at the last record', 300_000);
  const written = group.items.scan(DEAD_LETTERS).map((item) => [item.record?.S, Number(item.written?.N)]);
  return { fleet, written, crashed: !armed };
}

describe('dead letters exactly once (a consumer group on virtual time)', function () {
  this.timeout(60_000);

  it('the process dies before the transaction with the dead letter is sent: the next one dead-letters the record again, written once', async () => {
    const { fleet, written, crashed } = await deadLetterCrash('before');
    expect(crashed, 'the process died at the dead letter\'s transaction').to.equal(true);
    expect(fleet.errors).to.deep.equal([]);
    // onFailure ran twice: a dead letter written from inside it would be there twice.
    expect(fleet.deadLetters.map((f) => [text(f.record), f.record.deliveryCount])).to.deep.equal([['r2', 6], ['r2', 7]]);
    expect(written).to.deep.equal([['r2', 1]]);
    expect([...fleet.processed].sort()).to.deep.equal(['r0', 'r1', 'r3', 'r4', 'r5']);
  });

  it('the process dies after the transaction applied, before its answer: the next one starts past the record, written once', async () => {
    const { fleet, written, crashed } = await deadLetterCrash('after');
    expect(crashed, 'the process died at the dead letter\'s transaction').to.equal(true);
    expect(fleet.errors).to.deep.equal([]);
    expect(fleet.deadLetters.map((f) => [text(f.record), f.record.deliveryCount])).to.deep.equal([['r2', 6]]);
    expect(written).to.deep.equal([['r2', 1]]);
    expect([...fleet.processed].sort()).to.deep.equal(['r0', 'r1', 'r3', 'r4', 'r5']);
  });
});
