import { expect } from 'chai';
import { firstValueFrom } from 'rxjs';
import { LeaseSession } from '../../../src/lease/lease-session.js';
import { resolveOptions } from '../../../src/options.js';
import { MemoryCheckpointTable, MemoryLeaseStore } from '../../../src/testing/memory-lease-store.js';
import { MemoryStream } from '../../../src/testing/memory-stream.js';
import type { KinsumerRecord } from '../../../src/types.js';
import { SteppedScheduler } from '../../support/stepped-scheduler.js';

// Found by the simulator (seed 432): an operator's reset of a Finished shard to TRIM_HORIZON keeps
// Finished, but a client that still wanted the shard (its lease was fenced by the reset) captured it
// again and read it from the beginning: every record of a finished shard delivered again. A lease
// captured on a Finished row has nothing to read: it is given up at once.
describe('a lease captured on a Finished row', () => {
  it('reads nothing, and is released', async () => {
    const scheduler = new SteppedScheduler();
    const stream = new MemoryStream({ shardCount: 1, clock: () => scheduler.now() });
    const [shard] = stream.shardIds() as [string];
    stream.putRecords([{ partitionKey: 'k', data: 'r0' }, { partitionKey: 'k', data: 'r1' }]);
    const table = new MemoryCheckpointTable();
    const store = new MemoryLeaseStore({ clientId: 'me', leaseTtlMs: 3000, now: () => scheduler.now(), table });
    const first = await firstValueFrom(store.capture(shard));
    if (first === undefined) throw new Error('not captured');
    await firstValueFrom(store.release(first, { checkpoint: undefined, finished: true }), { defaultValue: undefined });
    // The operator's reset keeps Finished and starts the checkpoint over.
    await firstValueFrom(store.resetCheckpoint(shard, { type: 'TRIM_HORIZON' }, { force: true }), { defaultValue: undefined });
    const held = await firstValueFrom(store.capture(shard));
    if (held === undefined) throw new Error('not captured again');
    expect(held.finished).to.equal(true);
    const options = resolveOptions({
      streamName: 's', applicationName: 'app', leaseTtlMs: 3000, commitFrequencyMs: 200, shardCheckFrequencyMs: 1000,
      leaderActionFrequencyMs: 1000, throttleDelayMs: 200, scheduler,
      kinesis: { send: () => Promise.reject(new Error('unused')) } as never, dynamodb: { send: () => Promise.reject(new Error('unused')) } as never,
    });
    const session = new LeaseSession(held, [], { store, stream, options, emit: () => undefined, fail: (error) => { throw error; } });
    const received: KinsumerRecord[] = [];
    let completed = false;
    session.lease.records$.subscribe({ next: (record) => { received.push(record); record.ack(); }, complete: () => { completed = true; } });
    let ended: string | undefined;
    void session.done.then((end) => { ended = end; });
    await scheduler.until(() => ended !== undefined, 'the session ends', 10_000);
    expect(received.map((r) => new TextDecoder().decode(r.data))).to.deep.equal([]);
    expect([completed, ended]).to.deep.equal([true, 'finished']);
    expect(table.row(shard)?.ownerId, 'released').to.equal(undefined);
  });
});
