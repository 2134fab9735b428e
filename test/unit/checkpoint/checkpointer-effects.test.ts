import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { KinsumerError, LeaseLostError } from '../../../src/errors/kinsumer-errors.js';
import { WriteConditionError, WriteRejectedError, WritesTooLargeError } from '../../../src/errors/write-errors.js';
import type { WritesOutcome } from '../../../src/ports/shard-tracker.js';
import { MemoryCheckpointTable, MemoryLeaseStore } from '../../../src/testing/memory-lease-store.js';
import { awsError } from '../../../src/testing/memory-stream.js';
import { SHARD, TTL, add, at, checkExactlyOnce, record, rig, total } from '../../support/effects-rig.js';
import { advance } from '../../support/virtual-time.js';

// The write lane with records' writes (design §8.1), on virtual time over the in-memory stores
// (test/support/effects-rig.ts), checking after every step that each record's writes are applied
// once if checkpointed, never otherwise.

describe('write lane: records\' writes committed with their checkpoint (§8.1)', () => {
  it('commits each record\'s writes in one transaction with the checkpoint covering it; records acked meanwhile share the next', () => {
    const r = rig();
    const acks = Array.from({ length: 6 }, (_, i) => record(r, i + 1, `k${i % 2}`, i + 1));
    const outcomes: string[] = [];
    acks[0]?.((o) => outcomes.push(`1 ${o.kind}`));
    // While the first transaction is out (5 ms), four more are acked: the next takes them together.
    for (const ack of acks.slice(1, 5)) ack((o) => outcomes.push(o.kind));
    expect(r.table.row(SHARD)?.checkpoint, 'nothing checkpointed before its transaction').to.equal(undefined);
    advance(r.scheduler, 1);
    checkExactlyOnce(r);
    advance(r.scheduler, 50);
    checkExactlyOnce(r);
    expect(r.store.calls.commitWithWrites, 'k0 and k1 alternate: same item, so split at each repeat').to.be.at.least(3);
    expect(outcomes).to.deep.equal(['1 committed', 'committed', 'committed', 'committed', 'committed']);
    expect(r.table.row(SHARD)?.checkpoint).to.deep.equal({ type: 'position', position: at(5) });
    expect([total(r, 'k0'), total(r, 'k1')]).to.deep.equal([1 + 3 + 5, 2 + 4]);
    expect(r.checkpointer.inFlight(), 'record 6 was never acked').to.equal(1);
    expect(r.events.filter((e) => e.type === 'checkpoint').length).to.be.at.least(2);
  });

  it('a new owner acking the gap record with writes inside its delivery, before the rest is skipped: the row reaches the watermark at the next commit', () => {
    // Issue 30 item 1. A previous owner left #1 + [#3..#7] (its ack of #2 failed). The new owner
    // delivers #2 and acks it with writes at once, while the lane is idle: the transaction is decided
    // (#2 + [#3..#7]) before the reader skips #3..#7. Its commit moves the watermark to #7.
    const table = new MemoryCheckpointTable();
    table.put({
      shardId: SHARD, checkpoint: { type: 'position', position: at(1) }, ownerId: undefined, ownerName: undefined, lastUpdateNs: undefined,
      finished: false, leaseCounter: 1, lastOwnerId: 'before', acked: [{ from: at(3), to: at(7) }],
    });
    const r = rig({ table });
    let outcome: WritesOutcome | undefined;
    record(r, 2, 'a', 2)((o) => { outcome = o; });
    for (let n = 3; n <= 7; n += 1) expect(r.checkpointer.skip?.(at(n)), `#${n} skipped`).to.equal(true);
    advance(r.scheduler, 10);
    expect(outcome?.kind).to.equal('committed');
    expect(r.checkpointer.pending()).to.equal(0);
    // One commit turn later (commitFrequencyMs 100, well before a renewal), the row holds #7.
    advance(r.scheduler, 200);
    expect(r.table.row(SHARD)).to.deep.include({ checkpoint: { type: 'position', position: at(7) } });
    expect(r.table.row(SHARD)?.acked, 'no range left').to.equal(undefined);
    expect(total(r, 'a')).to.equal(2);
  });

  it('a lost response is re-sent identically (same token): applied once', () => {
    const r = rig();
    r.store.loseNextResponse(awsError('TimeoutError', { message: 'socket timed out' }), ['commitWithWrites']);
    const ack = record(r, 1, 'a', 7);
    let outcome: WritesOutcome | undefined;
    ack((o) => { outcome = o; });
    advance(r.scheduler, 20_000);
    expect(outcome?.kind).to.equal('committed');
    expect(total(r, 'a')).to.equal(7);
    expect(r.store.calls.commitWithWrites).to.equal(2);
    expect(r.events.some((e) => e.type === 'retrying' && e.operation === 'transaction')).to.equal(true);
    checkExactlyOnce(r);
  });

  it('a transaction re-sent after lost answers confirms the lease as of its first attempt: a re-send\'s success may be a replay of it', () => {
    // Found by the simulator's effects table (seeds 36 and 178 of every kind: zombie-emission): the
    // lane counted the lease confirmed at the last re-send, but DynamoDB answers a re-send within the
    // token's window by replaying the first attempt, which applied before another client could take
    // the lease; the zombie guard then let a fenced owner deliver on.
    const r = rig();
    for (let i = 0; i < 6; i += 1) r.store.loseNextResponse(awsError('TimeoutError', { message: 'socket timed out' }), ['commitWithWrites']);
    const ack = record(r, 1, 'a', 7);
    const firstSentAt = r.scheduler.now();
    let confirmedAtCommit: boolean | undefined;
    let committedAt = 0;
    ack((o) => {
      if (o.kind !== 'committed') return;
      committedAt = r.scheduler.now();
      confirmedAtCommit = r.checkpointer.leaseConfirmed?.();
    });
    // The backoff's jitter at its top: six waits of up to 100·2^k ms, 6.2 s in all (a random one
    // fell under the two renewal intervals about one run in ten).
    const random = Math.random;
    Math.random = () => 0.999;
    try {
      advance(r.scheduler, 60_000);
    } finally {
      Math.random = random;
    }
    expect(r.store.calls.commitWithWrites).to.equal(7);
    expect(committedAt - firstSentAt, 'the answer came more than two renewal intervals after the first attempt').to.be.greaterThan(2 * (TTL / 3));
    expect(confirmedAtCommit, 'confirmed as of the first attempt: too long ago').to.equal(false);
    expect(total(r, 'a')).to.equal(7);
    checkExactlyOnce(r);
  });

  it('a transaction whose response was lost and is sent again after the token\'s 10 minutes fails its token condition and counts as applied: still once', () => {
    const r = rig();
    r.checkpointer.track(at(1));
    const request$ = r.store.commitWithWrites(r.lease, { checkpoint: { type: 'position', position: at(1) }, finished: false }, { token: 'tok-late', writes: [add('a', 3)], after: undefined });
    request$.subscribe();
    advance(r.scheduler, 10);
    // Renewals keep the lease this client's while nothing else is written.
    for (let i = 0; i < 11; i += 1) {
      r.store.renew(r.lease).subscribe();
      advance(r.scheduler, 60_000);
    }
    let done = false;
    request$.subscribe({ complete: () => { done = true; } });
    advance(r.scheduler, 10);
    expect(done).to.equal(true);
    expect(total(r, 'a')).to.equal(3);
  });

  it('a fenced zombie applies nothing; its records\' writes are abandoned and the new owner\'s apply once', () => {
    const zombie = rig({ clientId: 'zombie' });
    const ack = record(zombie, 1, 'a', 5);
    // The zombie stops renewing (paused); another client takes the lease after the TTL.
    zombie.checkpointer.track(at(2));
    const rivalStore = new MemoryLeaseStore({ clientId: 'rival', leaseTtlMs: TTL, now: () => zombie.scheduler.now(), table: zombie.table, items: zombie.items, latencyMs: 5, scheduler: zombie.scheduler });
    rivalStore.capture(SHARD).subscribe();
    advance(zombie.scheduler, 10);
    zombie.table.put({ ...zombie.table.row(SHARD)!, ownerId: 'rival', leaseCounter: zombie.lease.leaseCounter + 1 });
    let outcome: WritesOutcome | undefined;
    ack((o) => { outcome = o; });
    advance(zombie.scheduler, 100);
    expect(zombie.error).to.be.instanceOf(LeaseLostError);
    expect(outcome?.kind).to.equal('abandoned');
    expect(total(zombie, 'a')).to.equal(0);
    checkExactlyOnce(zombie);
  });

  it('a record whose condition fails is that record\'s WriteConditionError; the records packed with it commit without it', () => {
    const r = rig();
    const acks = [record(r, 1, 'a', 1), record(r, 2, 'b', 2, [add('b', 2, 'attribute_exists(amount)')]), record(r, 3, 'c', 3)];
    const outcomes: WritesOutcome[] = [];
    for (const ack of acks) ack((o) => outcomes.push(o));
    r.amounts.delete(2);
    advance(r.scheduler, 100);
    // The three shared one transaction (they gathered while the lane described totals), which 2's condition cancelled.
    expect(outcomes.map((o) => o.kind)).to.deep.equal(['failed', 'committed', 'committed']);
    const failure = outcomes[0] as unknown as { error: WriteConditionError };
    expect(failure.error).to.be.instanceOf(WriteConditionError).that.deep.includes({ recordId: `${SHARD}/2`, actionIndex: 0 });
    expect([total(r, 'a'), total(r, 'b'), total(r, 'c')]).to.deep.equal([1, 0, 3]);
    expect(r.table.row(SHARD)?.checkpoint).to.deep.equal({ type: 'position', position: at(1) });
    expect(r.table.row(SHARD)?.acked).to.deep.equal([{ from: at(3), to: at(3) }]);
    expect(r.checkpointer.inFlight(), 'record 2 is unacked again').to.equal(1);
    checkExactlyOnce(r);
    // Acked again (fresh writes): it commits.
    r.amounts.set(2, { account: 'b', amount: 4 });
    r.checkpointer.ackWithWrites?.([1], [`${SHARD}/2`], [add('b', 4)]);
    advance(r.scheduler, 100);
    expect(r.table.row(SHARD)?.checkpoint).to.deep.equal({ type: 'position', position: at(3) });
    checkExactlyOnce(r);
  });

  it('with a plain ack (nobody told), a failed condition ends the shard with WriteConditionError after the others commit', () => {
    const r = rig();
    record(r, 1, 'a', 1)();
    record(r, 2, 'b', 2, [add('b', 2, 'attribute_exists(amount)')])();
    r.amounts.delete(2);
    record(r, 3, 'c', 3)();
    advance(r.scheduler, 100);
    expect(r.error).to.be.instanceOf(WriteConditionError);
    expect([total(r, 'a'), total(r, 'c')]).to.deep.equal([1, 3]);
    checkExactlyOnce(r);
  });

  it('TransactionConflict and throttling cancel the transaction: retried after a backoff, applied once; a throttled request too', () => {
    const r = rig();
    const cancelled = (code: string) => Object.assign(awsError('TransactionCanceledException'), { CancellationReasons: [{ Code: 'None' }, { Code: code }] });
    r.store.failNext(cancelled('TransactionConflict'), ['commitWithWrites']);
    r.store.failNext(cancelled('ThrottlingError'), ['commitWithWrites']);
    r.store.failNext(awsError('ProvisionedThroughputExceededException'), ['commitWithWrites']);
    let outcome: WritesOutcome | undefined;
    record(r, 1, 'a', 2)((o) => { outcome = o; });
    advance(r.scheduler, 30_000);
    expect(outcome?.kind).to.equal('committed');
    expect(total(r, 'a')).to.equal(2);
    expect(r.store.calls.commitWithWrites).to.equal(4);
    expect(r.events.filter((e) => e.type === 'retrying').length).to.equal(3);
    checkExactlyOnce(r);
  });

  it('writes DynamoDB refuses as a whole (an invalid expression): the records with them fail alone (WriteRejectedError), the others commit', () => {
    const r = rig();
    const bad: TransactWriteItem = { Update: { TableName: 'totals', Key: { account: { S: 'x' } }, UpdateExpression: 'ADD amount' } };
    const acks = [record(r, 1, 'a', 1), record(r, 2, 'b', 1), record(r, 3, 'x', 0, [bad]), record(r, 4, 'c', 1), record(r, 5, 'd', 1)];
    r.amounts.delete(3);
    const outcomes: string[] = [];
    for (const ack of acks) ack((o) => outcomes.push(o.kind === 'failed' ? o.error.constructor.name : o.kind));
    advance(r.scheduler, 1_000);
    expect(outcomes.filter((o) => o === 'WriteRejectedError')).to.have.length(1);
    expect(outcomes.filter((o) => o === 'committed')).to.have.length(4);
    expect([1, 2, 4, 5].map((n) => total(r, ['a', 'b', '', 'c', 'd'][n - 1] as string))).to.deep.equal([1, 1, 1, 1]);
    checkExactlyOnce(r);
    expect(WriteRejectedError.name).to.equal('WriteRejectedError');
  });

  it('each table is described once (its key names); one that cannot be described (AccessDenied) fails those records alone', () => {
    const r = rig();
    r.items.createTable('events', ['id']);
    const put = (id: string, table = 'events'): TransactWriteItem => ({ Put: { TableName: table, Item: { id: { S: id } } } });
    r.store.failNext(awsError('AccessDeniedException'), ['tableKeys']);
    const outcomes: string[] = [];
    const acks = [record(r, 1, 'a', 1, [put('p1', 'secret')]), record(r, 2, 'b', 2)];
    for (const ack of acks) ack((o) => outcomes.push(o.kind === 'failed' ? `${o.error.constructor.name}: ${o.error.message}` : o.kind));
    r.amounts.delete(1);
    advance(r.scheduler, 100);
    expect(outcomes[0]).to.match(/^WriteRejectedError: .*DescribeTable failed \(AccessDeniedException\)/);
    expect(outcomes[1]).to.equal('committed');
    expect(r.error).to.equal(undefined);
    const more = [record(r, 3, 'c', 3, [put('p3'), add('c', 3)]), record(r, 4, 'd', 4, [put('p4'), add('d', 4)])];
    for (const ack of more) ack((o) => outcomes.push(o.kind));
    advance(r.scheduler, 100);
    expect(outcomes.slice(2)).to.deep.equal(['committed', 'committed']);
    expect(r.store.calls.tableKeys, 'secret (refused), totals, events').to.equal(3);
    expect(r.items.scan('events').map((item) => item.id?.S).sort()).to.deep.equal(['p3', 'p4']);
  });

  it('a malformed Key fails its record alone; later records writing the same table commit (R16)', () => {
    // The lane took a table's key names from the first Key it saw: one Key with an extra attribute
    // (or without the range key) made it refuse every later record's writes to that table.
    const r = rig();
    r.items.createTable('ledger', ['account', 'at']);
    const entry = (account: string, at: string, key: Record<string, { S: string }> = { account: { S: account }, at: { S: at } }): TransactWriteItem => ({
      Update: { TableName: 'ledger', Key: key, UpdateExpression: 'ADD amount :a', ExpressionAttributeValues: { ':a': { N: '1' } } },
    });
    const extra: TransactWriteItem = { Update: { ...add('x', 1).Update!, Key: { account: { S: 'x' }, extra: { S: 'oops' } } } };
    const outcomes: string[] = [];
    const settle = (n: number) => (o: WritesOutcome) => outcomes.push(`${n} ${o.kind === 'failed' ? o.error.constructor.name : o.kind}`);
    record(r, 1, 'x', 0, [extra])(settle(1));
    record(r, 2, 'x', 0, [entry('a', '1', { account: { S: 'a' } })])(settle(2));
    r.amounts.delete(1);
    r.amounts.delete(2);
    advance(r.scheduler, 100);
    record(r, 3, 'a', 2)(settle(3));
    record(r, 4, 'b', 3, [add('b', 3), entry('a', '1'), entry('a', '2')])(settle(4));
    advance(r.scheduler, 100);
    expect(outcomes.sort()).to.deep.equal(['1 WriteRejectedError', '2 WriteRejectedError', '3 committed', '4 committed']);
    expect(r.items.scan('ledger').map((item) => item.at?.S).sort()).to.deep.equal(['1', '2']);
    checkExactlyOnce(r);
  });

  it('too large at the call (WritesTooLargeError, the record stays unacked); a second ack({ writes }) throws KinsumerError and applies nothing', () => {
    const r = rig();
    const ticket = r.checkpointer.track(at(1));
    const many = Array.from({ length: 100 }, (_, i) => add(`k${i}`, 1));
    expect(() => r.checkpointer.ackWithWrites?.([ticket], ['r1'], many)).to.throw(WritesTooLargeError);
    expect(r.checkpointer.inFlight()).to.equal(1);
    r.checkpointer.ackWithWrites?.([ticket], ['r1'], [add('a', 1)]);
    expect(() => r.checkpointer.ackWithWrites?.([ticket], ['r1'], [add('a', 1)])).to.throw(KinsumerError, /acked already/);
    r.checkpointer.ack(ticket);
    advance(r.scheduler, 100);
    expect(total(r, 'a')).to.equal(1);
    const other = r.checkpointer.track(at(2));
    r.checkpointer.ack(other);
    expect(() => r.checkpointer.ackWithWrites?.([other], ['r2'], [add('a', 1)])).to.throw(KinsumerError);
    advance(r.scheduler, 200);
    expect(total(r, 'a')).to.equal(1);
  });

  it('close() while a transaction\'s answer is lost: the re-send settles it before the release, which never moves the checkpoint back', async () => {
    const r = rig();
    r.store.loseNextResponse(awsError('TimeoutError'), ['commitWithWrites']);
    record(r, 1, 'a', 4)();
    advance(r.scheduler, 6);
    const closed = r.checkpointer.close();
    advance(r.scheduler, 30_000);
    await closed;
    expect(r.table.row(SHARD)).to.deep.include({ ownerId: undefined, checkpoint: { type: 'position', position: at(1) } });
    expect(total(r, 'a')).to.equal(4);
    checkExactlyOnce(r);
  });
});
