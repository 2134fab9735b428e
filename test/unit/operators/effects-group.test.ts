import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { type Subscription, firstValueFrom, switchMap, tap, timer } from 'rxjs';
import type { KinsumerPorts } from '../../../src/ports/backend.js';
import type { LeaseStore } from '../../../src/ports/lease-store.js';
import {
  type FailedRecord, type KinsumerRecord, type ProcessedBatch, type ProcessedRecord, WriteConditionError, WritesTooLargeError,
  processBatches, processRecords,
} from '../../../src/index.js';
import { MemoryGroup } from '../../support/memory-group.js';

// Records' writes (design §8.1) through the processing operators and plain acks, on a real client
// over the in-memory stream and tables (whose TransactWriteItems follows DynamoDB's rules), on
// virtual time.

const text = (data: Uint8Array) => new TextDecoder().decode(data);
const amountOf = (record: KinsumerRecord) => Number(text(record.data).split(':')[1]);

/** Adds the record's amount to its key's total and appends the record's index to the key's `seen` list. */
function addTo(record: KinsumerRecord, condition?: string): TransactWriteItem {
  const index = Number(text(record.data).split(':')[0]);
  const values: Record<string, AttributeValue> = { ':a': { N: String(amountOf(record)) }, ':me': { L: [{ N: String(index) }] }, ':empty': { L: [] } };
  return {
    Update: {
      TableName: 'totals', Key: { account: { S: record.partitionKey } },
      UpdateExpression: 'ADD amount :a SET seen = list_append(if_not_exists(seen, :empty), :me)',
      ExpressionAttributeValues: values,
      ...(condition === undefined ? {} : { ConditionExpression: condition }),
    },
  };
}

function setUp(records: number, keys: number, options: { maxInFlightRecords?: number } = {}) {
  const group = new MemoryGroup(1, { maxInFlightRecords: options.maxInFlightRecords ?? 10_000 });
  group.items.createTable('totals', ['account']);
  const [shardId] = group.stream.shardIds() as [string];
  const put = group.stream.putRecords(Array.from({ length: records }, (_, i) => ({ partitionKey: `k${i % keys}`, data: `${i}:${(i % 7) + 1}` })), { shardId });
  const lastSequence = BigInt(put.at(-1)?.sequenceNumber ?? -1);
  const checkpointed = () => {
    const row = group.checkpoints.row(shardId);
    return row?.checkpoint?.type === 'position' && BigInt(row.checkpoint.position.sequenceNumber) === lastSequence;
  };
  const totals = () => new Map(group.items.scan('totals').map((item) => [item.account?.S, Number(item.amount?.N ?? 0)]));
  const seen = () => new Map(group.items.scan('totals').map((item) => [item.account?.S, (item.seen?.L ?? []).map((n) => Number(n.N))]));
  const expected = (skip: ReadonlySet<number> = new Set()) => {
    const sums = new Map<string, number>();
    for (let i = 0; i < records; i += 1) if (!skip.has(i)) sums.set(`k${i % keys}`, (sums.get(`k${i % keys}`) ?? 0) + (i % 7) + 1);
    return sums;
  };
  return { group, shardId, checkpointed, totals, seen, expected };
}

/** Ports whose transactions each take `ms` of virtual time (as DynamoDB's round trip does). */
function slowTransactions(group: MemoryGroup, ms: number): (ports: KinsumerPorts) => KinsumerPorts {
  return (ports) => ({
    ...ports,
    store: new Proxy(ports.store, {
      get: (target, property, receiver): unknown => (property === 'commitWithWrites'
        ? (...args: Parameters<NonNullable<LeaseStore['commitWithWrites']>>) => timer(ms, group.scheduler).pipe(switchMap(() => target.commitWithWrites!(...args)))
        : Reflect.get(target, property, receiver)),
    }),
  });
}

async function stop(group: MemoryGroup, subscription: Subscription): Promise<void> {
  subscription.unsubscribe();
  let stopped = false;
  for (const member of group.members) void member.kinsumer.stop().then(() => { stopped = true; });
  await group.scheduler.until(() => stopped, 'the stop', 20_000);
}

describe('records\' writes on a consumer group (virtual time)', function () {
  this.timeout(60_000);

  it('processRecords, ordering partitionKey: every record\'s writes applied once, per key in sequence order, settled once committed', async () => {
    const { group, checkpointed, totals, seen, expected } = setUp(300, 8);
    const member = group.join('a', { ack: () => false, wrap: slowTransactions(group, 10) });
    const emitted: ProcessedRecord[] = [];
    const notYetApplied: string[] = [];
    let failed: unknown;
    const subscription = member.kinsumer.records$.pipe(processRecords(async (record) => {
      await firstValueFrom(timer(1, group.scheduler));
      return { writes: [addTo(record)] };
    }, { ordering: 'partitionKey', concurrency: 8, scheduler: group.scheduler })).subscribe({
      next: (p) => {
        emitted.push(p);
        // Settled means applied: its index is in its key's list already.
        if (!(seen().get(p.record.partitionKey) ?? []).includes(Number(text(p.record.data).split(':')[0]))) notYetApplied.push(text(p.record.data));
      },
      error: (e: unknown) => { failed = e; },
    });
    await group.scheduler.until(checkpointed, 'the checkpoint at the last record', 30_000);
    expect(failed).to.equal(undefined);
    expect(totals()).to.deep.equal(expected());
    for (const [key, list] of seen()) expect(list, `order of ${key}`).to.deep.equal([...list].sort((a, b) => a - b));
    expect(emitted).to.have.length(300);
    expect(notYetApplied).to.deep.equal([]);
    // Group commit: the 8 lanes freed by a transaction rejoin the next one (about 8 records each),
    // rather than alternating between every other transaction (about 4 each).
    expect(member.store.calls.commitWithWrites).to.be.at.most(Math.ceil((300 / 8) * 1.25));
    await stop(group, subscription);
  });

  it('a failed condition is that attempt\'s failure: the handler is called again for fresh writes, then onFailure (WriteConditionError); too large goes to onFailure at once', async () => {
    const { group, checkpointed, totals, expected } = setUp(40, 4);
    const member = group.join('a', { ack: () => false });
    const attempts = new Map<number, number>();
    const deadLetters: FailedRecord[] = [];
    const subscription = member.kinsumer.records$.pipe(processRecords((record, { attempt }) => {
      const index = Number(text(record.data).split(':')[0]);
      attempts.set(index, attempt);
      // 5 fails its condition once; 11 every time; 17 writes more than one transaction holds.
      if (index === 5 && attempt === 1) return { writes: [addTo(record, 'attribute_exists(nothing)')] };
      if (index === 11) return { writes: [addTo(record, 'attribute_exists(nothing)')] };
      if (index === 17) return { writes: Array.from({ length: 100 }, (_, i) => ({ ...addTo(record), Update: { ...addTo(record).Update!, Key: { account: { S: `x${i}` } } } })) };
      return { writes: [addTo(record)] };
    }, {
      ordering: 'shard', scheduler: group.scheduler, retry: { maxAttempts: 3, initialDelayMs: 10, maxDelayMs: 10 },
      onFailure: (failure) => { deadLetters.push(failure); },
    })).subscribe();
    await group.scheduler.until(checkpointed, 'the checkpoint at the last record', 30_000);
    expect(attempts.get(5)).to.equal(2);
    expect(deadLetters.map((f) => [text(f.record.data).split(':')[0], f.attempts, (f.error as Error).constructor.name])).to.deep.equal([
      ['11', 3, WriteConditionError.name], ['17', 1, WritesTooLargeError.name],
    ]);
    expect(totals()).to.deep.equal(expected(new Set([11, 17])));
    await stop(group, subscription);
  });

  it('processBatches: a batch\'s writes belong to the records that did not fail, committed with their checkpoint; the failed ones retried alone', async () => {
    const { group, checkpointed, totals, expected } = setUp(60, 3);
    const member = group.join('a', { ack: () => false });
    const calls: number[][] = [];
    const batches: ProcessedBatch[] = [];
    const subscription = member.kinsumer.records$.pipe(processBatches((records, { attempt }) => {
      calls.push(records.map((r) => Number(text(r.data).split(':')[0])));
      const failed = attempt === 1 ? records.filter((r) => Number(text(r.data).split(':')[0]) % 10 === 3) : [];
      const writes = records.filter((r) => !failed.includes(r)).map((r) => ({ Put: { TableName: 'totals', Item: { account: { S: `r${text(r.data).split(':')[0]}` }, amount: { N: String(amountOf(r)) } } } }));
      return { failed, writes };
    }, { maxSize: 20, scheduler: group.scheduler, retry: { maxAttempts: 2, initialDelayMs: 5, maxDelayMs: 5 } })).subscribe({ next: (b) => batches.push(b) });
    await group.scheduler.until(checkpointed, 'the checkpoint at the last record', 30_000);
    const perRecord = new Map([...totals()].map(([key, amount]) => [key, amount]));
    expect(perRecord.size).to.equal(60);
    expect([...perRecord.values()].reduce((a, b) => a + b, 0)).to.equal([...expected().values()].reduce((a, b) => a + b, 0));
    expect(calls.filter((c) => c.every((i) => i % 10 === 3)).length, 'retries of the failed records alone').to.be.above(0);
    expect(batches.flatMap((b) => b.records).every((r) => r.outcome === 'processed')).to.equal(true);
    await stop(group, subscription);
  });

  it('plain ack({ writes }) whose condition fails: the shard ends with an error event (WriteConditionError), is read again from its checkpoint, and every record\'s writes apply once', async () => {
    const { group, checkpointed, totals, expected } = setUp(30, 3);
    let failures = 0;
    const member = group.join('a', {
      keepFailure: true,
      pipeline: tap((record: KinsumerRecord) => {
        const index = Number(text(record.data).split(':')[0]);
        // Record 12's condition fails at its first delivery only.
        const fail = index === 12 && failures === 0;
        if (fail) failures += 1;
        record.ack({ writes: [addTo(record, fail ? 'attribute_exists(nothing)' : undefined)] });
      }),
    });
    await group.scheduler.until(checkpointed, 'the checkpoint at the last record', 30_000);
    const errors = member.events.filter((e) => e.type === 'error');
    expect(errors.map((e) => (e as { error: Error }).error.constructor.name)).to.include(WriteConditionError.name);
    expect(member.received.filter((r) => text(r.data).startsWith('12:')).length, 'delivered again').to.be.at.least(2);
    expect(totals()).to.deep.equal(expected());
    await stop(group, member.subscription);
  });

  it('a lease lost while writes wait: those records are left to the next owner, not failed (no onFailure), and apply once', async () => {
    const { group, shardId, checkpointed, totals, expected } = setUp(60, 4);
    const member = group.join('a', { ack: () => false, wrap: slowTransactions(group, 200) });
    const dead: FailedRecord[] = [];
    const subscription = member.kinsumer.records$.pipe(processRecords((record) => ({ writes: [addTo(record)] }), {
      ordering: 'partitionKey', concurrency: 4, scheduler: group.scheduler, retry: { maxAttempts: 1 }, onFailure: (f) => { dead.push(f); },
    })).subscribe();
    await group.scheduler.until(() => member.store.calls.commitWithWrites >= 2, 'transactions under way', 10_000);
    // An operator's forced reset fences the owner while a transaction is out.
    const row = group.checkpoints.row(shardId);
    group.checkpoints.put({ ...row!, ownerId: undefined, leaseCounter: (row?.leaseCounter ?? 0) + 1 });
    await group.scheduler.until(() => member.events.some((e) => e.type === 'lease-lost'), 'the loss', 10_000);
    await group.scheduler.until(checkpointed, 'the checkpoint at the last record (captured again)', 60_000);
    expect(dead).to.deep.equal([]);
    expect(totals()).to.deep.equal(expected());
    await stop(group, subscription);
  });

  it('records whose writes wait count toward maxInFlightRecords: reading pauses at the bound while transactions are slow', async () => {
    const { group, checkpointed, totals, expected } = setUp(200, 5, { maxInFlightRecords: 20 });
    // Each transaction takes 50 ms: records pile up behind it.
    const member = group.join('a', {
      ack: () => false,
      wrap: slowTransactions(group, 50),
    });
    let maxPending = 0;
    const subscription = member.kinsumer.records$.pipe(processRecords((record) => {
      maxPending = Math.max(maxPending, ...member.kinsumer.status().shards.map((s) => s.pending));
      return { writes: [addTo(record)] };
    }, { ordering: 'none', concurrency: 50, scheduler: group.scheduler })).subscribe();
    await group.scheduler.until(checkpointed, 'the checkpoint at the last record', 60_000);
    expect(maxPending).to.be.at.most(20);
    expect(totals()).to.deep.equal(expected());
    await stop(group, subscription);
  });
});
