import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { defer, mergeMap, of, throwError } from 'rxjs';
import type { WriteRejectedError } from '../../../src/errors/write-errors.js';
import type { LeaseStore } from '../../../src/ports/lease-store.js';
import type { WritesOutcome } from '../../../src/ports/shard-tracker.js';
import type { MemoryLeaseStore } from '../../../src/testing/memory-lease-store.js';
import { awsError } from '../../../src/testing/memory-stream.js';
import { SHARD, at, checkExactlyOnce, record, rig, total } from '../../support/effects-rig.js';
import { advance } from '../../support/virtual-time.js';

// Issue 30 item 3: a transaction DynamoDB answers with the same 500 (InternalFailure) on every
// attempt — as DynamoDB Local does for a malformed item (test/integration/effects.test.ts has the
// real one) — must not stall the shard. Here the 500s are INJECTED: a store whose transactions
// holding a write to the account `poison` are answered 500, never applied.

const internalFailure = () => awsError('InternalFailure', { message: 'The request processing has failed because of an unknown error, exception or failure.' });

/** The store, with every transaction that writes the account `poison` answered 500 (injected). */
function poisoned(store: MemoryLeaseStore): LeaseStore {
  const poison = (write: TransactWriteItem) => write.Update?.Key?.account?.S === 'poison';
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'commitWithWrites') {
        const commit: NonNullable<LeaseStore['commitWithWrites']> = (lease, write, transaction) => (transaction.writes.some(poison)
          ? defer(() => {
            target.calls.commitWithWrites += 1;
            return throwError(internalFailure);
          })
          : target.commitWithWrites(lease, write, transaction));
        return commit;
      }
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

const describeOutcome = (n: number) => (o: WritesOutcome): string => `${n} ${o.kind === 'failed' ? `${o.error.constructor.name}${(o.error as WriteRejectedError).retriable ? ' (retriable)' : ''}` : o.kind}`;

describe('a transaction answered 500 on every attempt (issue 30 item 3)', () => {
  it('is sent a bounded number of times, then the record at fault fails alone (WriteRejectedError, retriable); the records packed with it commit', () => {
    const r = rig({ wrap: poisoned });
    const outcomes: string[] = [];
    const acks = [record(r, 1, 'a', 1), record(r, 2, 'poison', 5), record(r, 3, 'b', 3), record(r, 4, 'c', 4)];
    acks.forEach((ack, i) => ack((o) => outcomes.push(describeOutcome(i + 1)(o))));
    r.amounts.delete(2);
    advance(r.scheduler, 300_000);
    expect(outcomes.sort()).to.deep.equal(['1 committed', '2 WriteRejectedError (retriable)', '3 committed', '4 committed']);
    expect(r.error, 'the shard goes on').to.equal(undefined);
    checkExactlyOnce(r);
    // Bounded: nothing more is sent for it, and the next record commits.
    const sent = r.store.calls.commitWithWrites;
    expect(sent).to.be.below(60);
    let next: WritesOutcome | undefined;
    record(r, 5, 'd', 6)((o) => { next = o; });
    advance(r.scheduler, 1_000);
    expect(next?.kind).to.equal('committed');
    expect(r.store.calls.commitWithWrites).to.equal(sent + 1);
    expect(r.table.row(SHARD)?.checkpoint, 'the watermark stops at the failed record').to.deep.include({ type: 'position' });
    checkExactlyOnce(r);
  });

  it('a transient burst of 500s longer than the bound blames nobody: every record commits once the server answers', () => {
    const r = rig();
    for (let i = 0; i < 24; i += 1) r.store.failNext(internalFailure(), ['commitWithWrites']);
    const outcomes: string[] = [];
    [record(r, 1, 'a', 1), record(r, 2, 'b', 2)].forEach((ack, i) => ack((o) => outcomes.push(describeOutcome(i + 1)(o))));
    advance(r.scheduler, 600_000);
    expect(outcomes.sort()).to.deep.equal(['1 committed', '2 committed']);
    expect([total(r, 'a'), total(r, 'b')]).to.deep.equal([1, 2]);
    checkExactlyOnce(r);
  });

  it('a transaction that applied but was answered 500 every time is found applied by the next one (the row holds its token): committed once, never blamed', () => {
    const r = rig();
    for (let i = 0; i < 8; i += 1) r.store.loseNextResponse(internalFailure(), ['commitWithWrites']);
    const outcomes: string[] = [];
    record(r, 1, 'a', 7)((o) => outcomes.push(describeOutcome(1)(o)));
    advance(r.scheduler, 600_000);
    expect(outcomes).to.deep.equal(['1 committed']);
    expect(total(r, 'a')).to.equal(7);
    checkExactlyOnce(r);
  });

  it('applied, with the success lost above the store (500 every time): the lane, not the store, knows which token the row holds — still once', () => {
    // Found by the simulator with 500s forced on every transaction (seed 7 of effects,fault,process-records):
    // the store had seen the first attempt succeed and made the probe follow its token, so the probe
    // went through and the record, whose writes had applied, was blamed and handled again.
    let lost = 0;
    const r = rig({
      wrap: (store) => new Proxy(store, {
        get(target, key, receiver) {
          if (key === 'commitWithWrites') {
            const commit: NonNullable<LeaseStore['commitWithWrites']> = (...args) => target.commitWithWrites(...args).pipe(
              mergeMap(() => (lost < 8 ? (lost += 1, throwError(internalFailure)) : of(undefined))),
            );
            return commit;
          }
          const value: unknown = Reflect.get(target, key, receiver);
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      }),
    });
    const outcomes: string[] = [];
    record(r, 1, 'a', 3)((o) => outcomes.push(describeOutcome(1)(o)));
    record(r, 2, 'b', 5)((o) => outcomes.push(describeOutcome(2)(o)));
    advance(r.scheduler, 600_000);
    expect(outcomes.sort()).to.deep.equal(['1 committed', '2 committed']);
    expect([total(r, 'a'), total(r, 'b')]).to.deep.equal([3, 5]);
    checkExactlyOnce(r);
  });

  it('close() while a transaction given up after 500s may have applied: the release waits for a probe, and never moves the checkpoint back under its writes', async () => {
    const r = rig();
    // Applied at the first attempt, answered 500 every time.
    for (let i = 0; i < 8; i += 1) r.store.loseNextResponse(internalFailure(), ['commitWithWrites']);
    const outcomes: string[] = [];
    record(r, 1, 'a', 4)((o) => outcomes.push(describeOutcome(1)(o)));
    advance(r.scheduler, 20);
    expect(total(r, 'a'), 'applied').to.equal(4);
    const closed = r.checkpointer.close();
    advance(r.scheduler, 120_000);
    await closed;
    expect(r.table.row(SHARD)).to.deep.include({ ownerId: undefined, checkpoint: { type: 'position', position: at(1) } });
    expect(outcomes).to.deep.equal(['1 committed']);
    checkExactlyOnce(r);
  });

  it('close() while such a transaction is unknown and the lease was taken meanwhile: the probe is fenced, the records abandoned, close() resolves', async () => {
    const r = rig();
    for (let i = 0; i < 8; i += 1) r.store.failNext(internalFailure(), ['commitWithWrites']);
    const outcomes: string[] = [];
    record(r, 1, 'a', 4)((o) => outcomes.push(describeOutcome(1)(o)));
    advance(r.scheduler, 20);
    r.table.put({ ...r.table.row(SHARD)!, ownerId: 'rival', leaseCounter: r.lease.leaseCounter + 1 });
    const closed = r.checkpointer.close();
    advance(r.scheduler, 120_000);
    await closed;
    expect(outcomes).to.deep.equal(['1 abandoned']);
    expect(r.events.some((e) => e.type === 'lease-lost')).to.equal(true);
    expect(r.table.row(SHARD)?.ownerId, 'no release over the rival').to.equal('rival');
    expect(total(r, 'a')).to.equal(0);
  });
});
