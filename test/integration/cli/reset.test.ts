import { expect } from 'chai';
import { firstValueFrom } from 'rxjs';
import { Dynamo } from '../../../src/dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../../src/dynamodb/lease-store.js';
import { Kinsumer, createTables, type KinsumerEvent, type KinsumerRecord } from '../../../src/index.js';
import type { CheckpointRow } from '../../../src/ports/lease-store.js';
import { createStream, putRecords } from '../../../src/testing/index.js';
import { cli, endpointArgs } from '../../support/cli.js';
import { eventually, uniqueName, useLocalAws } from '../../support/local.js';
import { FAST } from '../../support/memory-group.js';

const SHARD0 = 'shardId-000000000000';
const SHARD1 = 'shardId-000000000001';

describe('CLI: reset (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  async function setup(shards = 2): Promise<{ stream: string; app: string; args: string[] }> {
    const stream = uniqueName('reset');
    const app = uniqueName('reset-app');
    await createStream(local().kinesis, stream, shards);
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    return { stream, app, args: ['--stream', stream, '--app', app, ...endpointArgs(local())] };
  }

  function store(app: string, clientId = 'test', now: () => number = Date.now): DynamoLeaseStore {
    return new DynamoLeaseStore({ dynamo: new Dynamo(local().dynamodb), table: `${app}_checkpoints`, clientId, clientName: clientId, leaseTtlMs: FAST.leaseTtlMs, now });
  }

  async function row(app: string, shardId: string): Promise<CheckpointRow | undefined> {
    return firstValueFrom(store(app).read(shardId));
  }

  /** A consumer of the test's stream that acks everything and keeps what it received. */
  function consumer(stream: string, app: string, clientId: string, clientName = `${clientId}-host`): { kinsumer: Kinsumer; received: KinsumerRecord[]; events: KinsumerEvent[] } {
    const kinsumer = new Kinsumer({ ...FAST, streamName: stream, applicationName: app, kinesis: local().kinesis, dynamodb: local().dynamodb, clientId, clientName });
    const received: KinsumerRecord[] = [];
    const events: KinsumerEvent[] = [];
    kinsumer.events$.subscribe((event) => events.push(event));
    kinsumer.records$.subscribe((record) => {
      received.push(record);
      record.ack();
    });
    return { kinsumer, received, events };
  }

  const longest = (output: string) => Math.max(...output.split('\n').map((line) => line.length));
  const text = (records: readonly KinsumerRecord[]) => records.map((r) => new TextDecoder().decode(r.data));

  it('refuses with exit 3 while a live consumer holds leases, changing nothing; --force fences it and it reads again from TRIM_HORIZON', async () => {
    const { stream, app, args } = await setup();
    const put = await putRecords(local().kinesis, stream, Array.from({ length: 6 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    const last = new Map(put.map((p) => [p.shardId, p.sequenceNumber]));
    const committedLast = async (shardId: string) => {
      const checkpoint = (await row(app, shardId))?.checkpoint;
      return checkpoint?.type === 'position' && checkpoint.position.sequenceNumber === last.get(shardId);
    };
    // A UUID, as clientId defaults to: the report names it by clientName and a short id (80 columns).
    const live = consumer(stream, app, '0b6a4c1e-9f7d-4c25-8a51-3d2f7e9c1b40', 'w-live');
    try {
      // Settled: every record read and its checkpoint committed, so nothing moves but a reset.
      await eventually(async () => live.received.length === 6 && await committedLast(SHARD0) && await committedLast(SHARD1), 'the consumer to read and commit everything');
      const before = [await row(app, SHARD0), await row(app, SHARD1)];
      const refused = await cli(['reset', ...args, '--to', 'TRIM_HORIZON', '--lease-ttl-ms', String(FAST.leaseTtlMs)]);
      expect(refused.code).to.equal(3);
      expect(refused.stderr).to.contain(`2 shards are leased; watching them for ${FAST.leaseTtlMs + 100} ms`);
      expect(refused.stderr).to.contain('refused: 2 of 2 shards are leased by live clients');
      expect(refused.stderr).to.contain(`${SHARD0}  w-live (0b6a4c1e…), renewed `);
      expect(longest(refused.stderr), refused.stderr).to.be.at.most(80);
      expect(refused.stderr).to.contain('Nothing was changed.');
      expect((await row(app, SHARD0))?.checkpoint).to.deep.equal(before[0]?.checkpoint);
      expect((await row(app, SHARD1))?.checkpoint).to.deep.equal(before[1]?.checkpoint);

      const forced = await cli(['reset', ...args, '--to', 'TRIM_HORIZON', '--force']);
      expect(forced.code, forced.stderr).to.equal(0);
      const previous = String(before[0]?.checkpoint?.type === 'position' ? before[0].checkpoint.position.sequenceNumber : '');
      expect(forced.stdout.replace(/\n {2}/g, ' ')).to.contain(`${SHARD0}: ${previous.slice(0, 6)}…${previous.slice(-6)} -> TRIM_HORIZON (lease of w-live (0b6a4c1e…) revoked)`);
      expect(longest(forced.stdout), forced.stdout).to.be.at.most(80);
      expect(forced.stdout).to.contain('reset 2 shards of app');
      // The fenced consumer loses both leases, captures them again and re-reads every record.
      await eventually(() => live.received.length >= 12, 'the consumer to read the shards again from TRIM_HORIZON');
      expect(text(live.received.slice(6)).sort()).to.deep.equal(text(live.received.slice(0, 6)).sort());
      expect(live.events.filter((e) => e.type === 'lease-lost').map((e) => (e.type === 'lease-lost' ? e.shardId : '')).sort()).to.deep.equal([SHARD0, SHARD1]);
    } finally {
      await live.kinsumer.stop();
    }
  });

  it('to LATEST: a consumer started afterwards skips what was in the stream, and gets every record put after the reset (design §8.3)', async () => {
    const { stream, app, args } = await setup();
    await putRecords(local().kinesis, stream, Array.from({ length: 6 }, (_, i) => ({ partitionKey: `k${i}`, data: `old${i}` })));
    // The bound (README): a record that arrived more than 2 s before the reset is never delivered.
    const putAt = Date.now();
    await eventually(() => Date.now() > putAt + 2_100, 'the clock to pass the old records by the bound');
    const before = Date.now();
    const result = await cli(['reset', ...args, '--to', 'LATEST']);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.contain(`${SHARD0}: - -> LATEST`);
    // The reset's moment is stored (DynamoDB's Date header: whole seconds, this host's clock for dynalite).
    for (const shardId of [SHARD0, SHARD1]) {
      const checkpoint = (await row(app, shardId))?.checkpoint;
      expect(checkpoint?.type).to.equal('LATEST');
      expect(checkpoint?.type === 'LATEST' ? checkpoint.resetAt?.getTime() : undefined).to.be.within(before - 1000, Date.now());
    }
    // Put after the reset, before any consumer runs: a LATEST taken at capture would skip them.
    const between = Array.from({ length: 6 }, (_, i) => ({ partitionKey: `k${i}`, data: `between${i}` }));
    await putRecords(local().kinesis, stream, between);
    // The Kinsumer's initialPosition is TRIM_HORIZON (the default): only the stored LATEST keeps it from the old records.
    const fresh = consumer(stream, app, 'fresh');
    try {
      await eventually(() => fresh.received.length >= between.length, 'the records put after the reset');
      expect(text(fresh.received).sort()).to.deep.equal(between.map((r) => r.data).sort());
    } finally {
      await fresh.kinsumer.stop();
    }
  });

  it('to a timestamp: a consumer starts at the first record at or after it', async () => {
    const { stream, app, args } = await setup(1);
    await putRecords(local().kinesis, stream, [{ partitionKey: 'a', data: 'early' }]);
    // The early record's arrival time, read without touching the application's checkpoints.
    const peek = await cli(['tail', '--stream', stream, '--kinesis-endpoint', local().endpoints.kinesis, '--from', 'TRIM_HORIZON', '--json', '--limit', '1']);
    const { approximateArrivalTimestamp } = JSON.parse(peek.stdout) as { approximateArrivalTimestamp: string };
    const at = new Date(Date.parse(approximateArrivalTimestamp) + 1);
    await eventually(() => Date.now() > at.getTime(), 'the clock to pass the early record');
    await putRecords(local().kinesis, stream, [{ partitionKey: 'b', data: 'late1' }, { partitionKey: 'c', data: 'late2' }]);

    const result = await cli(['reset', ...args, '--to', at.toISOString()]);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.contain(`${SHARD0}: - -> AT_TIMESTAMP ${at.toISOString()}`);
    expect((await row(app, SHARD0))?.checkpoint).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: at });
    // Without the reset, this consumer would start at TRIM_HORIZON (its initialPosition) and read 'early' first.
    const late = consumer(stream, app, 'late');
    try {
      await eventually(() => late.received.length >= 2, 'the two late records');
      expect(text(late.received)).to.deep.equal(['late1', 'late2']);
    } finally {
      await late.kinsumer.stop();
    }
  });

  it('--shard resets only the shards named; an expired owner does not block; a finished shard is said to stay finished', async () => {
    const { app, args } = await setup();
    const longAgo = Date.now() - 60_000;
    await firstValueFrom(store(app, 'crashed', () => longAgo).capture(SHARD0));
    const finisher = store(app, 'finisher');
    const held = await firstValueFrom(finisher.capture(SHARD1));
    if (held === undefined) throw new Error('capture failed');
    await firstValueFrom(finisher.release(held, { checkpoint: { type: 'position', position: { sequenceNumber: '77' } }, finished: true }));

    const one = await cli(['reset', ...args, '--to', 'TRIM_HORIZON', '--shard', SHARD0, '--lease-ttl-ms', String(FAST.leaseTtlMs)]);
    expect(one.code, one.stderr).to.equal(0);
    // One shard, one word: `reset 1 shard`, not `1 shards` (newcomer trial 3).
    expect(one.stdout).to.equal(`${SHARD0}: - -> TRIM_HORIZON\nreset 1 shard of app ${app} to TRIM_HORIZON\n`);
    expect(one.stderr).to.contain(`kinsumer reset: 1 shard is leased; watching it for ${FAST.leaseTtlMs + 100} ms`);
    expect((await row(app, SHARD0))?.checkpoint).to.deep.equal({ type: 'TRIM_HORIZON' });
    // The reset fenced the crashed owner: were it only paused, its next write would fail.
    expect(await row(app, SHARD0)).to.deep.include({ ownerId: undefined, leaseCounter: 2 });
    expect((await row(app, SHARD1))?.checkpoint).to.deep.equal({ type: 'position', position: { sequenceNumber: '77' } });

    const finished = await cli(['reset', ...args, '--to', 'LATEST', '--shard', `${SHARD1},${SHARD1}`]);
    expect(finished.code, finished.stderr).to.equal(0);
    expect(finished.stdout.replace(/\n {2}/g, ' ')).to.contain(`${SHARD1}: 77 -> LATEST (finished: it stays finished and is not read again)`);
    expect(longest(finished.stdout), finished.stdout).to.be.at.most(80);
    // The replaced checkpoint stays as a floor: a LATEST start never re-reads what was consumed.
    expect(await row(app, SHARD1)).to.deep.include({ finished: true });
    expect((await row(app, SHARD1))?.checkpoint).to.deep.include({ type: 'LATEST', after: { sequenceNumber: '77' } });
  });

  it('refuses bad command lines with exit 2 and changes nothing', async () => {
    const { app, args } = await setup(1);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    for (const [bad, message] of [
      [[], 'missing --to'],
      [['--to', 'yesterday'], '--to must be LATEST, TRIM_HORIZON or an ISO 8601 timestamp'],
      [['--to', '2026-13-45T00:00:00Z'], '--to must be'],
      [['--to', future], 'is in the future'],
      [['--to', 'LATEST', '--shard', 'shardId-999'], 'not a shard of stream'],
      [['--to', 'LATEST', '--lease-ttl-ms', '0'], '--lease-ttl-ms must be a whole number >= 1'],
    ] as const) {
      const result = await cli(['reset', ...args, ...bad]);
      expect(result.code, `${bad.join(' ')}: ${result.stderr}`).to.equal(2);
      expect(result.stderr).to.contain(message);
    }
    const badApp = await cli(['reset', ...args.slice(0, 2), '--app', 'no spaces allowed', ...endpointArgs(local()), '--to', 'LATEST']);
    expect(badApp.code).to.equal(2);
    expect(badApp.stderr).to.contain('applicationName');
    expect(await row(app, SHARD0)).to.equal(undefined);
    const noTable = await cli(['reset', ...args.slice(0, 2), '--app', 'no-such-app', ...endpointArgs(local()), '--to', 'LATEST']);
    expect(noTable.code).to.equal(1);
    expect(noTable.stderr).to.contain('no-such-app_checkpoints not found');
  });
});
