import { expect } from 'chai';
import { asyncScheduler } from 'rxjs';
import { ClientReplacedError, Kinsumer, createTables, type KinsumerEvent, type KinsumerOptions, type KinsumerRecord, type KinsumerSettings } from '../../src/index.js';
import { createStream, putRecords } from '../../src/testing/index.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';
import { FAST } from '../support/memory-group.js';
import { skewedScheduler } from '../support/skewed-scheduler.js';

const FIVE_MINUTES = 5 * 60_000;

/** A Kinsumer of this process that acks everything, with what it saw. */
class Member {
  readonly kinsumer: Kinsumer;
  readonly events: KinsumerEvent[] = [];
  readonly received: KinsumerRecord[] = [];
  readonly errors: unknown[] = [];

  constructor(options: KinsumerOptions) {
    this.kinsumer = new Kinsumer(options);
    this.kinsumer.events$.subscribe((event) => this.events.push(event));
    this.kinsumer.records$.subscribe({
      next: (record) => {
        this.received.push(record);
        record.ack();
      },
      error: (error: unknown) => this.errors.push(error),
    });
  }

  /** Shard → fencing token of the leases it holds now (from its events). */
  held(): Map<string, number> {
    const held = new Map<string, number>();
    for (const event of this.events) {
      if (event.type === 'lease-acquired') held.set(event.shardId, event.fencingToken);
      if (event.type === 'lease-released' || event.type === 'lease-lost') held.delete(event.shardId);
    }
    return held;
  }

  lost(): string[] {
    return this.events.flatMap((e) => (e.type === 'lease-lost' ? [e.shardId] : []));
  }
}

// Two real clients on the local servers whose wall clocks are ten minutes apart (their schedulers'
// now() shifted by ±5 minutes, timers on real time): expiry compares no clocks, so neither takes a
// lease from the other and they share the shards.
describe('clock skew and duplicate clientIds between real clients (kinesalite + dynalite)', function () {
  this.timeout(120_000);
  const local = useLocalAws();

  async function setup(shards: number): Promise<Omit<KinsumerSettings, 'clientId'> & { readonly streamName: string }> {
    const streamName = uniqueName('skew');
    const applicationName = uniqueName('skew-app');
    await createStream(local().kinesis, streamName, shards);
    await createTables({ dynamodb: local().dynamodb, applicationName });
    return { ...FAST, streamName, applicationName, kinesis: local().kinesis, dynamodb: local().dynamodb };
  }

  it('one client 5 minutes ahead, one 5 minutes behind: no lease taken from a live owner, 2/2, every record read', async () => {
    const options = await setup(4);
    const ahead = new Member({ ...options, clientId: 'ahead', scheduler: skewedScheduler(asyncScheduler, FIVE_MINUTES) });
    const behind = new Member({ ...options, clientId: 'behind', scheduler: skewedScheduler(asyncScheduler, -FIVE_MINUTES) });
    const members = [ahead, behind];
    try {
      await eventually(() => ahead.held().size === 2 && behind.held().size === 2, 'balance 2/2', 30_000);
      const tokens = members.map((m) => [...m.held()].sort());
      await putRecords(local().kinesis, options.streamName, Array.from({ length: 40 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
      await eventually(() => ahead.received.length + behind.received.length >= 40, 'every record', 30_000);
      // Several lease TTLs more: nobody's lease is taken, so the fencing tokens do not move.
      const until = Date.now() + 3 * FAST.leaseTtlMs;
      await eventually(() => Date.now() >= until, 'three lease TTLs to pass', 4 * FAST.leaseTtlMs, 200);
      expect(members.map((m) => m.lost()), 'leases lost').to.deep.equal([[], []]);
      expect(members.map((m) => [...m.held()].sort()), 'the same leases, the same fencing tokens').to.deep.equal(tokens);
      expect(ahead.received.length + behind.received.length).to.equal(40);
      expect(members.flatMap((m) => m.errors)).to.deep.equal([]);
    } finally {
      await Promise.all(members.map((m) => m.kinsumer.stop()));
    }
  });

  it('a second process with a clientId already live takes its place at once (static membership); the first fails with ClientReplacedError', async () => {
    const options = await setup(2);
    const first = new Member({ ...options, clientId: 'same' });
    let second: Member | undefined;
    try {
      await eventually(() => first.held().size === 2, 'the first process holds both shards', 30_000);
      second = new Member({ ...options, clientId: 'same' });
      const fresh = second;
      await eventually(() => fresh.held().size === 2, 'the second process holds both shards', 10_000);
      await eventually(() => first.errors.length > 0, 'the first process to fail', 10_000);
      expect(first.errors[0]).to.be.instanceOf(ClientReplacedError);
      expect(fresh.errors).to.deep.equal([]);
      expect(fresh.events.some((e) => e.type === 'duplicate-client')).to.equal(false);
    } finally {
      await Promise.all([first.kinsumer.stop().catch(() => undefined), second?.kinsumer.stop()]);
    }
  });

  it('a restart with the same clientId that overlaps the old process\'s graceful stop takes over at once; the old stop completes', async () => {
    const options = await setup(2);
    const old = new Member({ ...options, clientId: 'same' });
    let fresh: Member | undefined;
    try {
      await eventually(() => old.held().size === 2, 'the old process holds both shards', 30_000);
      const stopping = old.kinsumer.stop().then(() => 'stopped', (error: unknown) => error);
      fresh = new Member({ ...options, clientId: 'same' });
      const started = fresh;
      await eventually(() => started.held().size === 2, 'the new process to hold both shards', 30_000);
      expect(await stopping).to.equal('stopped');
      expect(old.errors.every((e) => e instanceof ClientReplacedError), String(old.errors)).to.equal(true);
      expect(started.errors).to.deep.equal([]);
    } finally {
      await Promise.all([old.kinsumer.stop().catch(() => undefined), fresh?.kinsumer.stop()]);
    }
  });
});
