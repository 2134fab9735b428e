// records$ as RxJS delivers it: the two sharp edges the README (Concepts) and the TSDoc of
// records$ warn about (newcomer trial 3), pinned so the documentation stays true. Virtual time.
import { execFile } from 'node:child_process';
import { expect } from 'chai';
import { config, map } from 'rxjs';
import type { Kinsumer, KinsumerRecord } from '../../src/index.js';
import { eventually } from '../support/local.js';
import { MemoryGroup } from '../support/memory-group.js';

/** Stops a client on virtual time: the stop's waits are timers of the group's scheduler. */
async function stopped(group: MemoryGroup, kinsumer: Kinsumer): Promise<void> {
  let done = false;
  void kinsumer.stop().finally(() => { done = true; });
  await group.scheduler.until(() => done, 'stop() to settle', 60_000);
}

describe('records$ and RxJS (virtual time)', function () {
  this.timeout(30_000);

  it('is multicast: a second subscriber gets every record again, as the same objects, and one subscriber\'s ack moves the checkpoint for both', async () => {
    const group = new MemoryGroup(1);
    const put = group.stream.putRecords(Array.from({ length: 20 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    // The group's own subscriber never acks; a second one acks everything.
    const member = group.join('a', { ack: () => false });
    const acking: KinsumerRecord[] = [];
    member.kinsumer.records$.subscribe((record) => { acking.push(record); record.ack(); });
    const last = put.at(-1)?.sequenceNumber;
    await group.scheduler.until(() => {
      const checkpoint = group.checkpoints.rows()[0]?.checkpoint;
      return checkpoint?.type === 'position' && checkpoint.position.sequenceNumber === last;
    }, 'the checkpoint at the last record', 20_000);
    expect(acking.map((r) => r.sequenceNumber)).to.deep.equal(put.map((p) => p.sequenceNumber));
    expect(member.received).to.have.length(20);
    expect(member.received.every((record, i) => record === acking[i]), 'the same objects').to.equal(true);
    expect(member.kinsumer.status().shards[0]?.pending).to.equal(0);
    await stopped(group, member.kinsumer);
  });

  it('an exception thrown in subscribe()\'s next is not an error of records$: RxJS reports it as unhandled (in Node, the process dies) and the client is told nothing — no stop, no release', async () => {
    const unhandled: unknown[] = [];
    const previous = config.onUnhandledError;
    // What Node would do with it: an uncaught exception, exit 1. Captured here instead.
    config.onUnhandledError = (error: unknown) => { unhandled.push(error); };
    try {
      const group = new MemoryGroup(1);
      group.stream.putRecords(Array.from({ length: 5 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
      const member = group.join('a', { ack: () => false, keepFailure: true });
      member.kinsumer.records$.subscribe(() => { throw new Error('boom in subscriber next'); });
      await group.scheduler.until(() => member.received.length === 5, 'the five records', 20_000);
      await eventually(() => unhandled.length === 5, 'RxJS to report each throw as unhandled');
      expect(unhandled.map((e) => (e as Error).message)).to.deep.equal(Array(5).fill('boom in subscriber next'));
      // records$ did not error, so nothing stopped: the client runs on and still holds its lease.
      await group.scheduler.advanceBy(5_000);
      expect(member.failure).to.equal(undefined);
      expect(member.kinsumer.status().state).to.equal('running');
      expect(group.owners().get('shardId-000000000000')).to.equal('a');
      expect(member.events.filter((e) => e.type === 'lease-released')).to.deep.equal([]);
      await stopped(group, member.kinsumer);
    } finally {
      config.onUnhandledError = previous;
    }
    // And without the capture, in a Node process: the throw from next ends it (exit 1) before a timer 200 ms later runs.
    const script = "const { of } = require('rxjs'); of(1).subscribe(() => { throw new Error('boom in subscriber next'); }); setTimeout(() => console.log('still running'), 200);";
    const died = await new Promise<{ code: number | null; output: string }>((resolve) => {
      execFile(process.execPath, ['-e', script], (error, stdout, stderr) => resolve({ code: error === null ? 0 : (error.code as number), output: stdout + stderr }));
    });
    expect(died.code).to.equal(1);
    expect(died.output).to.contain('boom in subscriber next').and.not.contain('still running');
  });

  it('a throw inside the pipe errors records$ and stops the client gracefully: the lease is released', async () => {
    const group = new MemoryGroup(1);
    group.stream.putRecords(Array.from({ length: 5 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    const member = group.join('a', {
      keepFailure: true,
      pipeline: map((record) => {
        if (record.text() === 'r2') throw new Error('boom in the pipe');
        record.ack();
        return record;
      }),
    });
    await group.scheduler.until(() => member.failure !== undefined, 'the pipeline to error', 20_000);
    expect((member.failure as Error).message).to.equal('boom in the pipe');
    await group.scheduler.until(() => member.kinsumer.status().state === 'stopped', 'the graceful stop', 20_000);
    expect(group.owners().get('shardId-000000000000')).to.equal(undefined);
    expect(member.events.some((e) => e.type === 'lease-released')).to.equal(true);
  });
});
