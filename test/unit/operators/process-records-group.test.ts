import { expect } from 'chai';
import type { Subscription } from 'rxjs';
import { type FailedRecord, type KinsumerRecord, type ProcessedRecord, processRecords } from '../../../src/index.js';
import { firstValueFrom, tap, timer } from 'rxjs';
import { MemoryGroup } from '../../support/memory-group.js';

const text = (data: Uint8Array) => new TextDecoder().decode(data);

// The operator on a real client (coordinator, leases, checkpointer, reader) over the in-memory
// stream and tables, on virtual time.
describe('processRecords on a consumer group (virtual time)', function () {
  this.timeout(30_000);

  it('a poison record with onFailure: the shard goes on, every other record is handled once and acked, the checkpoint moves past it', async () => {
    const group = new MemoryGroup(2);
    const [s0, s1] = group.stream.shardIds() as [string, string];
    const put0 = group.stream.putRecords(Array.from({ length: 20 }, (_, i) => ({ partitionKey: `k${i % 4}`, data: i === 7 ? 'poison' : `a${i}` })), { shardId: s0 });
    const put1 = group.stream.putRecords(Array.from({ length: 20 }, (_, i) => ({ partitionKey: `k${i % 4}`, data: `b${i}` })), { shardId: s1 });
    // The member's own subscriber acks nothing: the operator does.
    const member = group.join('a', { ack: () => false });
    const handled: string[] = [];
    const deadLetters: FailedRecord[] = [];
    const emitted: ProcessedRecord[] = [];
    let failed: unknown;
    const subscription: Subscription = member.kinsumer.records$.pipe(processRecords(async (record) => {
      await Promise.resolve();
      if (text(record.data) === 'poison') throw new Error('cannot parse');
      handled.push(text(record.data));
    }, {
      ordering: 'partitionKey', concurrency: 4, scheduler: group.scheduler,
      retry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 1000 },
      onFailure: async (failure) => { await Promise.resolve(); deadLetters.push(failure); },
    })).subscribe({ next: (p) => emitted.push(p), error: (error: unknown) => { failed = error; } });

    const lastOf = (put: { sequenceNumber: string }[]) => BigInt(put.at(-1)?.sequenceNumber ?? -1);
    const checkpointOf = (shardId: string) => {
      const row = group.checkpoints.rows().find((r) => r.shardId === shardId);
      return row?.checkpoint?.type === 'position' ? BigInt(row.checkpoint.position.sequenceNumber) : -1n;
    };
    await group.scheduler.until(() => checkpointOf(s0) === lastOf(put0) && checkpointOf(s1) === lastOf(put1), 'both checkpoints at their last record', 20_000);

    expect(failed).to.equal(undefined);
    expect(deadLetters.map((f) => [text(f.record.data), f.attempts, (f.error as Error).message])).to.deep.equal([['poison', 3, 'cannot parse']]);
    const expected = [...Array.from({ length: 20 }, (_, i) => `a${i}`).filter((d) => d !== 'a7'), ...Array.from({ length: 20 }, (_, i) => `b${i}`)];
    expect([...handled].sort()).to.deep.equal([...expected].sort());
    expect(emitted.map((p) => `${text(p.record.data)}:${p.outcome}`).sort()).to.deep.equal([...expected.map((d) => `${d}:processed`), 'poison:failed'].sort());
    subscription.unsubscribe();
    await member.kinsumer.stop();
  });
  it('a lease lost mid-processing (an operator\'s forced reset): no handler call for that lease\'s records after the loss', async () => {
    const group = new MemoryGroup(1, { maxInFlightRecords: 50 });
    const [s0] = group.stream.shardIds() as [string];
    group.stream.putRecords(Array.from({ length: 200 }, (_, i) => ({ partitionKey: `k${i % 10}`, data: `r${i}` })), { shardId: s0 });
    const member = group.join('a', { ack: () => false });
    const calls: { atMs: number; record: KinsumerRecord }[] = [];
    // The records delivered under the first lease: after its loss none of them may reach the handler.
    const firstLease = new Set<KinsumerRecord>();
    let lostAtMs: number | undefined;
    member.kinsumer.events$.subscribe((event) => { if (event.type === 'lease-lost') lostAtMs ??= group.scheduler.now(); });
    const subscription = member.kinsumer.records$.pipe(
      tap((record) => { if (lostAtMs === undefined) firstLease.add(record); }),
      processRecords(async (record) => {
        calls.push({ atMs: group.scheduler.now(), record });
        // A slow handler: 100 ms of virtual time per record, ten keys at once.
        await firstValueFrom(timer(100, group.scheduler));
      }, { ordering: 'partitionKey', concurrency: 10, scheduler: group.scheduler }),
    ).subscribe();
    await group.scheduler.until(() => calls.length >= 20, 'some records handled', 10_000);
    // The operator fences the owner: its next write is refused and the lease is lost.
    await firstValueFrom(member.store.resetCheckpoint(s0, { type: 'TRIM_HORIZON' }, { force: true }), { defaultValue: undefined });
    await group.scheduler.until(() => lostAtMs !== undefined, 'the lease lost', 10_000);
    const lostAt = lostAtMs as number;
    await group.scheduler.advanceBy(2_000);
    expect(firstLease.size, 'records waiting in the operator at the loss').to.be.above(calls.filter((c) => c.atMs <= lostAt).length);
    expect(calls.filter((c) => c.atMs > lostAt && firstLease.has(c.record)).map((c) => c.record.sequenceNumber)).to.deep.equal([]);
    subscription.unsubscribe();
    let stopped = false;
    void member.kinsumer.stop().then(() => { stopped = true; });
    await group.scheduler.until(() => stopped, 'the stop', 10_000);
  });
});
