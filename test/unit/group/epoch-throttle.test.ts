import { expect } from 'chai';
import { defer, throwError } from 'rxjs';
import { epochPollMs } from '../../../src/group/coordinator.js';
import { awsError } from '../../../src/testing/memory-stream.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';
import { override } from '../../support/port-wrappers.js';

// Item 6 of issue 23: on a table with provisioned capacity, the group-epoch poll (one read every
// epochPollMs per client) is the first thing throttled. Throttling must slow the poll, never
// the leases or commits. The throttling is injected by a port wrapper — a mock, because no local
// server throttles (dynalite and DynamoDB Local ignore provisioned capacity). That the SDK does not
// retry the poll (and so spends none of its client-wide retry quota on it) is tested against
// dynalite through the fault proxy (test/integration/dynamodb/metadata-store.test.ts).
describe('a throttled group-epoch poll (virtual time, in-memory stores)', function () {
  this.timeout(60_000);

  it('backs off (doubling up to shardCheckFrequencyMs), while the member\'s leases and commits go on; back to its pace after', async () => {
    // A shard check longer than the poll (1 s), so the backoff has room to double.
    const timings = { shardCheckFrequencyMs: 4000, leaseTtlMs: 12_000, leaderActionFrequencyMs: 4000 };
    const group = new MemoryGroup(1, timings);
    const poll = { throttled: false, calls: 0 };
    const a = group.join('a', {
      wrap: (ports) => ({
        ...ports,
        metadata: override(ports.metadata, {
          groupEpoch: () => defer(() => {
            poll.calls += 1;
            return poll.throttled ? throwError(() => awsError('ProvisionedThroughputExceededException', { message: 'The level of configured provisioned throughput for the table was exceeded.' })) : ports.metadata.groupEpoch();
          }),
        }),
      }),
    });
    await group.scheduler.until(() => group.counts().get('a') === 1, 'a holds the shard', 20_000);
    const [shard] = group.stream.shardIds() as [string];

    poll.throttled = true;
    poll.calls = 0;
    const eventsBefore = a.events.length;
    const put: string[] = [];
    for (let i = 0; i < 40; i += 1) {
      put.push(...group.stream.putRecords([{ partitionKey: 'k', data: `r${i}` }]).map((p) => p.sequenceNumber));
      await group.scheduler.advanceBy(500);
    }
    await group.scheduler.advanceBy(1000);
    const during = a.events.slice(eventsBefore);
    // 21 s throttled: at its pace, 21000 / epochPollMs = 21 reads; backed off, one per shard check.
    expect(poll.calls, 'epoch reads while throttled').to.be.at.most(21_000 / timings.shardCheckFrequencyMs + 3);
    const delays = during.flatMap((e) => (e.type === 'retrying' && e.operation === 'group epoch read' ? [e.delayMs] : []));
    expect(delays.slice(0, 3)).to.deep.equal([2 * epochPollMs(FAST), timings.shardCheckFrequencyMs, timings.shardCheckFrequencyMs]);
    // The leases and commits went on: every record delivered and checkpointed, no lease lost.
    expect(during.filter((e) => e.type === 'lease-lost' || e.type === 'error')).to.deep.equal([]);
    expect(a.received.map((r) => r.sequenceNumber).slice(-put.length)).to.deep.equal(put);
    expect(group.checkpoints.row(shard)?.checkpoint).to.deep.equal({ type: 'position', position: { sequenceNumber: put.at(-1) } });
    expect(group.owners().get(shard)).to.equal('a');

    poll.throttled = false;
    await group.scheduler.advanceBy(timings.shardCheckFrequencyMs);
    poll.calls = 0;
    await group.scheduler.advanceBy(4000);
    expect(poll.calls, 'reads in 4 s once the table answers again').to.be.at.least(4000 / epochPollMs(FAST) - 1);
    await a.kinsumer.stop();
  });
});
