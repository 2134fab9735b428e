// Misuse of stop(): before start, twice, while the start-up checks are still in flight, while
// records wait for their acks. stop() must settle, every Observable must complete (no hang of a
// `lastValueFrom(records$)`), and nothing may start after it.
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { lastValueFrom } from 'rxjs';
import { Kinsumer, type KinsumerRecord } from '../../src/index.js';
import { putRecords } from '../../src/testing/index.js';
import { freshSetup, record, text } from '../support/bad-input.js';
import { eventually, useLocalAws } from '../support/local.js';

interface Sendable { send(command: object, options?: unknown): Promise<unknown> }

/**
 * The real client, except that commands named `held` wait for `open()` before they are sent. Not a
 * mock: every call reaches the local server; the gate only pins down "while the check is in
 * flight", which the servers answer too fast to catch otherwise. Records every command's name.
 */
function gated<C extends Sendable>(client: C, held: string): { client: C; sent: string[]; reached: () => boolean; settled: () => boolean; open: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => { open = resolve; });
  const sent: string[] = [];
  let reached = false;
  let settled = false;
  const wrapper = {
    send: async (command: object, options?: unknown) => {
      const name = command.constructor.name;
      sent.push(name);
      if (name !== held) return client.send(command, options);
      reached = true;
      await gate;
      try {
        return await client.send(command, options);
      } finally {
        settled = true;
      }
    },
  };
  return { client: wrapper as unknown as C, sent, reached: () => reached, settled: () => settled, open };
}

describe('bad input: stop() misuse (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  async function clientRows(applicationName: string): Promise<number> {
    const out = await local().dynamodb.send(new ScanCommand({ TableName: `${applicationName}_clients`, ConsistentRead: true }));
    return out.Items?.length ?? 0;
  }

  it('before start: stop() makes no AWS call at all, twice gives the same promise, events$ completes', async () => {
    const options = await freshSetup(local(), 'stop-before');
    const dynamodb = gated(local().dynamodb, 'none');
    const kinesis = gated(local().kinesis, 'none');
    const consumer = new Kinsumer({ ...options, dynamodb: dynamodb.client, kinesis: kinesis.client });
    let eventsComplete = false;
    consumer.events$.subscribe({ complete: () => { eventsComplete = true; } });
    const first = consumer.stop();
    expect(consumer.stop()).to.equal(first);
    await first;
    expect(eventsComplete).to.equal(true);
    expect([...dynamodb.sent, ...kinesis.sent]).to.deep.equal([]);
  });

  for (const [what, service, held] of [
    ['the table check', 'dynamodb', 'DescribeTableCommand'],
    ['the stream check', 'kinesis', 'ListShardsCommand'],
  ] as const) {
    it(`during start, while ${what} is in flight: stop() settles, records$ completes, nothing starts afterwards`, async () => {
      const options = await freshSetup(local(), 'stop-during');
      await putRecords(local().kinesis, options.streamName, [{ partitionKey: 'k', data: 'never read' }]);
      const dynamodb = gated(local().dynamodb, service === 'dynamodb' ? held : 'none');
      const kinesis = gated(local().kinesis, service === 'kinesis' ? held : 'none');
      const consumer = new Kinsumer({ ...options, dynamodb: dynamodb.client, kinesis: kinesis.client });
      const run = record(consumer);
      await eventually(() => (service === 'dynamodb' ? dynamodb : kinesis).reached(), `${held} to be sent`);

      const stopped = consumer.stop();
      expect(consumer.stop()).to.equal(stopped);
      await stopped;
      // Settled with the check still held: stop() does not wait for start-up to finish.
      await eventually(() => run.outcome().kind === 'complete', 'records$ to complete');
      expect(run.eventsComplete()).to.equal(true);

      const gate = service === 'dynamodb' ? dynamodb : kinesis;
      const sentBefore = { dynamodb: dynamodb.sent.length, kinesis: kinesis.sent.length };
      gate.open();
      await eventually(() => gate.settled(), `the held ${held} to return`);
      // A subscription made after stop() is refused at once.
      const late = await lastValueFrom(consumer.records$).then(() => undefined, (error: unknown) => error);
      expect(late).to.be.instanceOf(Error).with.property('message').that.contains('stopped');
      // No heartbeat, no capture, no read happened after stop() (one more round trip to the
      // server first, so a wrongly started client has had its chance): no client row, no lease, no record.
      expect(await clientRows(options.applicationName)).to.equal(0);
      expect(run.records).to.deep.equal([]);
      expect(run.events.filter((e) => e.type === 'lease-acquired')).to.deep.equal([]);
      expect(dynamodb.sent.filter((name) => name === 'PutItemCommand')).to.deep.equal([]);
      expect(kinesis.sent.filter((name) => name === 'GetShardIteratorCommand' || name === 'GetRecordsCommand')).to.deep.equal([]);
      // The start-up checks already under way may finish (read-only, and their answer is ignored);
      // nothing else is sent after stop().
      const after = [...dynamodb.sent.slice(sentBefore.dynamodb), ...kinesis.sent.slice(sentBefore.kinesis)];
      expect(after.filter((name) => name !== 'DescribeTableCommand' && name !== 'ListShardsCommand')).to.deep.equal([]);
    });
  }

  it('twice while records await their acks: both wait for the drain, and the acks are committed', async () => {
    const options = await freshSetup(local(), 'stop-drain');
    await putRecords(local().kinesis, options.streamName, ['a', 'b', 'c'].map((data) => ({ partitionKey: 'k', data })));
    // A drain bound far longer than the round trip below, so "not settled yet" is not a race.
    const consumer = new Kinsumer({ ...options, leaseTtlMs: 20_000, shutdownTimeoutMs: 20_000 });
    const held: KinsumerRecord[] = [];
    const run = record(consumer, (r) => { held.push(r); return false; });
    await eventually(() => held.length === 3, 'three unacked records');

    let settled = 0;
    const first = consumer.stop().then(() => { settled += 1; });
    const second = consumer.stop().then(() => { settled += 1; });
    // Still draining after a round trip to the server: the stop waits for the three emitted records.
    expect(await clientRows(options.applicationName)).to.equal(1);
    expect(settled).to.equal(0);
    for (const r of held) r.ack();
    await Promise.all([first, second]);
    expect(settled).to.equal(2);
    const released = run.events.find((e) => e.type === 'lease-released');
    expect(released?.type === 'lease-released' ? released.checkpoint?.sequenceNumber : undefined).to.equal(held[2]?.sequenceNumber);
    expect(run.outcome().kind).to.equal('complete');
    expect(held.map(text)).to.deep.equal(['a', 'b', 'c']);
  });

  it('after a graceful stop, leases$, every lease\'s records$ and records$ complete (lastValueFrom does not hang)', async () => {
    const options = await freshSetup(local(), 'stop-complete', { shards: 2 });
    const consumer = new Kinsumer(options);
    const leaseEnds = new Map<string, string>();
    let leasesEnd = 'running';
    consumer.leases$.subscribe({
      next: (lease) => {
        leaseEnds.set(lease.shardId, 'running');
        lease.records$.subscribe({ next: (r) => r.ack(), complete: () => leaseEnds.set(lease.shardId, 'complete'), error: () => leaseEnds.set(lease.shardId, 'error') });
      },
      complete: () => { leasesEnd = 'complete'; },
    });
    const all = lastValueFrom(consumer.records$, { defaultValue: undefined });
    await eventually(() => leaseEnds.size === 2, 'both leases');
    await consumer.stop();
    await all;
    expect(leasesEnd).to.equal('complete');
    expect([...leaseEnds.values()]).to.deep.equal(['complete', 'complete']);
  });
});
