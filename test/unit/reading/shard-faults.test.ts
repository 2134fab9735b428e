// Faults stay in their shard (design §7.1): an unknown AWS error, a malformed record or a failed
// checkpoint write of one shard ends that shard only — an `error` event naming it, the shard taken
// again at the shard-check pace — while the other shards go on. Group-wide faults (access denied)
// still end records$ and leases$. Virtual time, the real client over the in-memory backends.
import { expect } from 'chai';
import { map } from 'rxjs';
import { ShardReadError } from '../../../src/index.js';
import type { KinsumerEvent } from '../../../src/types.js';
import { awsError } from '../../../src/testing/memory-stream.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';
import { override } from '../../support/port-wrappers.js';

const text = (data: Uint8Array): string => new TextDecoder().decode(data);

function putRecords(group: MemoryGroup, count: number, prefix = 'r'): void {
  group.stream.putRecords(Array.from({ length: count }, (_, i) => ({ partitionKey: `k${i}`, data: `${prefix}${i}` })));
}

type ErrorEvent = Extract<KinsumerEvent, { type: 'error' }>;
const errorEvents = (events: readonly KinsumerEvent[]): ErrorEvent[] => events.filter((e): e is ErrorEvent => e.type === 'error');

/** When each lease of `shardId` was acquired, from the events (virtual ms). */
function acquiredAt(events: readonly { event: KinsumerEvent; atMs: number }[], shardId: string): number[] {
  return events.filter(({ event }) => event.type === 'lease-acquired' && event.shardId === shardId).map(({ atMs }) => atMs);
}

describe('faults stay in their shard (virtual time)', function () {
  this.timeout(30_000);

  it('an unknown AWS error on one shard\'s GetRecords ends that shard only: an error event names it, it is taken again at the shard-check pace, every record arrives', async () => {
    const group = new MemoryGroup(2);
    putRecords(group, 40);
    const member = group.join('a', { keepFailure: true });
    const timed: { event: KinsumerEvent; atMs: number }[] = [];
    member.kinsumer.events$.subscribe((event) => timed.push({ event, atMs: group.scheduler.now() }));
    group.stream.failNext('getRecords', 1, awsError('SomethingNewException'));
    await group.scheduler.until(() => group.receivedData().length >= 40 || member.failure !== undefined, 'every record, or records$ failing', 20_000);
    expect(member.failure).to.equal(undefined);
    expect(new Set(group.receivedData()).size).to.equal(40);
    const [reported, ...more] = errorEvents(member.events);
    expect(more).to.deep.equal([]);
    expect(reported?.shardId).to.be.a('string');
    expect(reported?.error).to.be.instanceOf(ShardReadError);
    expect((reported?.error.cause as Error).name).to.equal('SomethingNewException');
    const erroredAt = timed.find(({ event }) => event.type === 'error')?.atMs ?? Number.NaN;
    const [first, second] = acquiredAt(timed, reported?.shardId ?? '');
    expect(first).to.be.at.most(erroredAt);
    expect(second).to.be.at.least(erroredAt + FAST.shardCheckFrequencyMs);
    await member.kinsumer.stop();
  });

  it('a malformed record (no sequence number) ends its shard only, and the shard is read again from its checkpoint', async () => {
    const group = new MemoryGroup(2);
    putRecords(group, 40);
    let malformed = 0;
    const member = group.join('a', {
      keepFailure: true,
      wrap: (ports) => ({
        ...ports,
        stream: override(ports.stream, {
          // The first time r7 comes, it comes without a sequence number (as the SDK's optional field allows).
          getRecords: (iterator: string, limit: number) => ports.stream.getRecords(iterator, limit).pipe(map((page) => ({
            ...page,
            records: page.records.map((r) => (text(r.data) === 'r7' && malformed++ === 0 ? { ...r, sequenceNumber: '' } : r)),
          }))),
        }),
      }),
    });
    await group.scheduler.until(() => group.receivedData().length >= 40 || member.failure !== undefined, 'every record, or records$ failing', 20_000);
    expect(member.failure).to.equal(undefined);
    expect(new Set(group.receivedData()).size).to.equal(40);
    const reported = errorEvents(member.events);
    expect(reported).to.have.length(1);
    const r7 = member.received.find((r) => text(r.data) === 'r7');
    expect(reported[0]?.shardId).to.equal(r7?.shardId);
    await member.kinsumer.stop();
  });

  it('a checkpoint write failing with an unknown error ends that shard only; it is taken again and read on', async () => {
    const group = new MemoryGroup(2);
    putRecords(group, 40);
    const member = group.join('a', { keepFailure: true });
    member.store.failNext(awsError('SomethingNewException'), ['commit']);
    await group.scheduler.until(() => member.events.some((e) => e.type === 'error') || member.failure !== undefined, 'the fault', 20_000);
    putRecords(group, 20, 'later');
    await group.scheduler.until(() => new Set(group.receivedData()).size >= 60 || member.failure !== undefined, 'every record, or records$ failing', 20_000);
    expect(member.failure).to.equal(undefined);
    const [reported, ...more] = errorEvents(member.events);
    expect(more).to.deep.equal([]);
    expect(reported?.shardId).to.be.a('string');
    expect(((reported?.error.cause ?? reported?.error) as Error).name).to.equal('SomethingNewException');
    await group.scheduler.until(() => group.counts().get('a') === 2, 'both shards held again', 10_000);
    await member.kinsumer.stop();
  });

  it('access denied on one shard\'s GetRecords is group-wide: records$ and leases$ both end with the error', async () => {
    const group = new MemoryGroup(2);
    putRecords(group, 10);
    const member = group.join('a', { keepFailure: true });
    let leasesError: unknown;
    member.kinsumer.leases$.subscribe({ error: (error: unknown) => { leasesError = error; } });
    group.stream.failNext('getRecords', 1, awsError('AccessDeniedException'));
    await group.scheduler.until(() => member.failure !== undefined && leasesError !== undefined, 'records$ and leases$ to fail', 20_000);
    expect(member.failure).to.be.instanceOf(ShardReadError);
    expect(((member.failure as Error).cause as Error).name).to.equal('AccessDeniedException');
    expect(leasesError).to.equal(member.failure);
    await member.kinsumer.stop();
  });
});
