import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { firstValueFrom } from 'rxjs';
import type { ShardStatusJson, StatusJson as FullStatusJson } from '../../../src/cli/commands/status.js';
import { Dynamo } from '../../../src/dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../../src/dynamodb/lease-store.js';
import { Kinsumer, type KinsumerRecord, createTables } from '../../../src/index.js';
import { createStream, putRecords, splitShard } from '../../../src/testing/index.js';
import { cli, endpointArgs } from '../../support/cli.js';
import { eventually, uniqueName, useLocalAws } from '../../support/local.js';
import { FAST } from '../../support/memory-group.js';

const longest = (text: string) => Math.max(...text.split('\n').map((line) => line.length));

interface StatusJson {
  readonly stream: string;
  readonly app: string;
  readonly shards: ShardStatusJson[];
}

describe('CLI: status (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  async function setup(shards = 2): Promise<{ stream: string; app: string; args: string[] }> {
    const stream = uniqueName('status');
    const app = uniqueName('status-app');
    await createStream(local().kinesis, stream, shards);
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    return { stream, app, args: ['--stream', stream, '--app', app, ...endpointArgs(local())] };
  }

  async function statusJson(args: readonly string[]): Promise<StatusJson> {
    const result = await cli(['status', ...args, '--json']);
    expect(result.code, result.stderr).to.equal(0);
    return JSON.parse(result.stdout) as StatusJson;
  }

  function store(app: string, clientId: string, now: () => number): DynamoLeaseStore {
    return new DynamoLeaseStore({ dynamo: new Dynamo(local().dynamodb), table: `${app}_checkpoints`, clientId, clientName: `${clientId}-name`, leaseTtlMs: 15_000, now });
  }

  it('lists every shard with no owner and no checkpoint before anything consumed', async () => {
    const { stream, app, args } = await setup();
    const status = await statusJson(args);
    expect(status).to.include({ stream, app });
    expect(status.shards.map((s) => s.shardId)).to.deep.equal(['shardId-000000000000', 'shardId-000000000001']);
    for (const shard of status.shards) {
      expect(shard).to.deep.include({ parentShardIds: [], open: true, owner: null, checkpoint: null, finished: false, lastUpdate: null, leaseCounter: null, corrupt: null });
    }
    const table = await cli(['status', ...args, '--wide']);
    expect(table.code, table.stderr).to.equal(0);
    expect(table.stdout).to.contain('2 shards (2 open), 0 leased by live clients');
    expect(table.stdout).to.match(/SHARD\s+PARENTS\s+OWNER\s+CHECKPOINT\s+BEHIND\s+ARRIVED\s+ADVANCED\s+FINISHED/);
    expect(table.stdout).to.match(/shardId-000000000000\s+-\s+-\s+-\s+-\s+-\s+-\s+no\n/);
  });

  it('shows a running Kinsumer\'s leases and acked checkpoints, and after stop() the released rows', async () => {
    const { stream, app, args } = await setup();
    const put = await putRecords(local().kinesis, stream, Array.from({ length: 20 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    // The last sequence number put to each shard: what the consumer's checkpoint must reach once all is acked.
    const last = new Map(put.map((p) => [p.shardId, p.sequenceNumber]));
    expect(last.size).to.equal(2);
    const consumer = new Kinsumer({ ...FAST, streamName: stream, applicationName: app, kinesis: local().kinesis, dynamodb: local().dynamodb, clientId: 'status-client', clientName: 'worker-a' });
    consumer.records$.subscribe((record) => record.ack());
    try {
      const running = await eventually(async () => {
        const status = await statusJson(args);
        return status.shards.every((s) => s.checkpoint?.type === 'position' && s.checkpoint.sequenceNumber === last.get(s.shardId)) && status;
      }, 'status to show both checkpoints at the last record');
      for (const shard of running.shards) {
        expect(shard.owner).to.deep.equal({ id: 'status-client', name: 'worker-a', live: true });
        expect(shard.finished).to.equal(false);
        expect(shard.leaseCounter).to.equal(1);
        expect(shard.lastUpdateAgeMs).to.be.a('number').within(-1000, 15_000);
        expect(Date.parse(String(shard.lastUpdate))).to.be.closeTo(Date.now(), 20_000);
      }
      const table = await cli(['status', ...args, '--wide']);
      expect(table.stdout).to.contain('2 leased by live clients');
      // Sequence numbers shortened to their ends; kinesalite reports MillisBehindLatest 0.
      for (const [shardId, sequenceNumber] of last) {
        const short = `${sequenceNumber.slice(0, 6)}…${sequenceNumber.slice(-6)}`;
        expect(table.stdout).to.match(new RegExp(`${shardId}\\s+-\\s+worker-a \\(status-client\\)\\s+${short}\\s+0\\.0s\\s+\\d+\\.\\ds ago\\s+\\d+\\.\\ds ago\\s+no\\n`));
      }
    } finally {
      await consumer.stop();
    }
    const stopped = await statusJson(args);
    for (const shard of stopped.shards) {
      expect(shard.owner).to.equal(null);
      expect(shard.lastOwnerId).to.equal('status-client');
      expect(shard.checkpoint).to.deep.equal({ type: 'position', sequenceNumber: last.get(shard.shardId) });
    }
  });

  it('--json shows the members (heartbeat age, shards held, leader) and per shard the lag: the checkpointed record\'s arrival and MillisBehindLatest, and when the checkpoint last advanced', async () => {
    const { stream, app, args } = await setup(2);
    const startedAt = Date.now();
    const put = await putRecords(local().kinesis, stream, Array.from({ length: 20 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    const last = new Map(put.map((p) => [p.shardId, p.sequenceNumber]));
    const received: KinsumerRecord[] = [];
    const consumers = ['a', 'b'].map((id) => new Kinsumer({
      ...FAST, streamName: stream, applicationName: app, kinesis: local().kinesis, dynamodb: local().dynamodb, clientId: `client-${id}`, clientName: `worker-${id}`,
    }));
    for (const consumer of consumers) consumer.records$.subscribe((record) => { received.push(record); record.ack(); });
    try {
      // Balanced (one shard each), both checkpoints at the last record.
      const status = await eventually(async () => {
        const result = await cli(['status', ...args, '--json']);
        const json = JSON.parse(result.stdout) as FullStatusJson;
        const balanced = json.members.length === 2 && json.members.every((m) => m.shards === 1);
        const caughtUp = json.shards.every((s) => s.checkpoint?.type === 'position' && s.checkpoint.sequenceNumber === last.get(s.shardId) && s.lag !== null);
        return balanced && caughtUp && json;
      }, 'both members holding one shard each, both checkpoints at the last record', 40_000);
      const leaders = consumers.filter((c) => c.status().leader).map((c) => c.status().clientId);
      expect(leaders).to.have.length(1);
      expect(status.leader?.id).to.equal(leaders[0]);
      expect(status.members.map((m) => [m.id, m.name, m.live, m.leader])).to.deep.equal([
        ['client-a', 'worker-a', true, leaders[0] === 'client-a'],
        ['client-b', 'worker-b', true, leaders[0] === 'client-b'],
      ]);
      for (const member of status.members) {
        expect(member.heartbeatAgeMs).to.be.within(-1000, FAST.leaseTtlMs);
        expect(member.instanceId).to.be.a('string');
        const owned = status.shards.filter((s) => s.owner?.id === member.id).map((s) => s.shardId);
        expect(owned).to.deep.equal(consumers.find((c) => c.status().clientId === member.id)?.status().shards.map((s) => s.shardId));
      }
      for (const shard of status.shards) {
        const checkpointed = received.find((r) => r.shardId === shard.shardId && r.sequenceNumber === last.get(shard.shardId));
        expect(shard.lag, shard.shardId).to.deep.include({
          checkpointArrivedAt: checkpointed?.approximateArrivalTimestamp.toISOString(),
          // kinesalite answers MillisBehindLatest 0 for an open shard.
          millisBehindLatest: 0,
        });
        expect(shard.lag?.checkpointRecordAgeMs).to.be.a('number').at.least(0);
        expect(shard.lagError).to.equal(null);
        expect(Date.parse(String(shard.checkpointAdvanced))).to.be.within(startedAt - 1000, Date.now() + 1000);
        expect(shard.checkpointAdvancedAgeMs).to.be.a('number');
      }
      const table = await cli(['status', ...args]);
      expect(table.stdout.replace(/\n {2}/g, ' ')).to.contain('2 leased by live clients; 2 live members, leader worker-');
      expect(longest(table.stdout), table.stdout).to.be.at.most(80);
      expect(table.stdout).to.match(/MEMBER\s+ID\s+HEARTBEAT\s+SHARDS\s+LEADER\s+LIBRARY/);
      expect(table.stdout, 'no Go client: the sticky assignment').to.contain(', sticky assignment\n');
      for (const member of status.members) {
        expect(table.stdout).to.match(new RegExp(`${member.name}\\s+${member.id}\\s+\\d+\\.\\ds ago\\s+1\\s+${member.leader ? 'yes' : '-'}\\s+kinsumer-ts/\\S+\\n`));
      }
    } finally {
      await Promise.all(consumers.map((c) => c.stop()));
    }
    const stopped = await statusJson(args);
    expect(stopped.shards.map((s) => s.owner)).to.deep.equal([null, null]);
  });

  // Newcomer trial 3: 130 columns wide, the client id repeated in OWNER, and BEHIND 0.0s on
  // kinesalite for a shard whose checkpoint stood still behind unread records.
  it('fits 80 columns (client ids only in --wide), BEHIND n/a where kinesalite says 0 though records follow the checkpoint, 0.0s at the last record', async () => {
    const { stream, app, args } = await setup(2);
    const kept = await putRecords(local().kinesis, stream, Array.from({ length: 10 }, (_, i) => ({ partitionKey: `k${i}`, data: `keep-${i}` })));
    const [stalled] = await putRecords(local().kinesis, stream, [{ partitionKey: 'k0', data: 'never-acked' }]);
    if (stalled === undefined) throw new Error('put failed');
    const other = kept.find((p) => p.shardId !== stalled.shardId);
    if (other === undefined) throw new Error('every record went to one shard');
    const lastKept = new Map(kept.map((p) => [p.shardId, p.sequenceNumber]));
    const consumer = new Kinsumer({ ...FAST, streamName: stream, applicationName: app, kinesis: local().kinesis, dynamodb: local().dynamodb, clientName: 'w-alpha' });
    const clientId = consumer.options.clientId;
    consumer.records$.subscribe((record) => { if (record.text() !== 'never-acked') record.ack(); });
    try {
      await eventually(async () => {
        const status = await statusJson(args);
        return status.shards.every((s) => s.checkpoint?.type === 'position' && s.checkpoint.sequenceNumber === lastKept.get(s.shardId));
      }, 'both checkpoints at the last acked record');
      const narrow = await cli(['status', ...args]);
      expect(longest(narrow.stdout), narrow.stdout).to.be.at.most(80);
      expect(narrow.stdout).not.to.contain(clientId);
      expect(narrow.stdout).to.match(new RegExp(`^w-alpha\\s+${clientId.slice(0, 8)}…\\s+\\d+\\.\\ds ago\\s+2\\s+yes\\s+kinsumer-ts/`, 'm'));
      expect(narrow.stdout).to.match(new RegExp(`^${stalled.shardId}\\s+w-alpha\\s+\\S+\\s+n/a\\s`, 'm'));
      expect(narrow.stdout).to.match(new RegExp(`^${other.shardId}\\s+w-alpha\\s+\\S+\\s+0\\.0s\\s`, 'm'));
      expect(narrow.stdout).to.contain('n/a: the server says 0 behind though records follow the checkpoint');
      const json = await statusJson(args);
      const lagOf = (shardId: string) => (json.shards.find((s) => s.shardId === shardId)?.lag as { millisBehindLatest: number | null; recordAfterCheckpoint: boolean | null } | null);
      expect(lagOf(stalled.shardId)).to.deep.include({ millisBehindLatest: null, recordAfterCheckpoint: true });
      expect(lagOf(other.shardId)).to.deep.include({ millisBehindLatest: 0, recordAfterCheckpoint: false });
      // --wide: everything, the client id in the shard table and the member table.
      const wide = (await cli(['status', ...args, '--wide'])).stdout;
      expect(wide).to.contain(`w-alpha (${clientId})`);
      expect(wide).to.match(/SHARD\s+PARENTS\s+OWNER\s+CHECKPOINT\s+BEHIND\s+ARRIVED\s+ADVANCED\s+FINISHED/);
      expect(longest(wide)).to.be.greaterThan(80);
      const both = await cli(['status', ...args, '--wide', '--json']);
      expect([both.code, both.stderr]).to.deep.equal([2, 'kinsumer status: give --wide or --json, not both\n']);
    } finally {
      await consumer.stop();
    }
  });

  it('marks an owner that stopped renewing as expired, per --lease-ttl-ms', async () => {
    const { app, args } = await setup(1);
    const minuteAgo = Date.now() - 60_000;
    await firstValueFrom(store(app, 'gone', () => minuteAgo).capture('shardId-000000000000'));
    const [shard] = (await statusJson(args)).shards;
    expect(shard?.owner).to.deep.equal({ id: 'gone', name: 'gone-name', live: false });
    expect(shard?.lastUpdateAgeMs).to.be.within(60_000, 80_000);
    const table = await cli(['status', ...args, '--wide']);
    expect(table.stdout).to.match(/gone-name \(gone\) \[expired\]\s+-\s+-\s+-\s+-\s+no\n/);
    expect(table.stdout).to.contain('0 leased by live clients');
    const narrow = (await cli(['status', ...args])).stdout;
    expect(narrow).to.match(/shardId-000000000000\s+gone-name\*\s+-\s+-\s+-\s+-\n/);
    expect(narrow).to.contain('* expired: not renewed for --lease-ttl-ms (15000 ms)');
    const [patient] = (await statusJson([...args, '--lease-ttl-ms', '3600000'])).shards;
    expect(patient?.owner?.live).to.equal(true);
  });

  it('shows a split: the parent closed (then finished), the children naming it', async () => {
    const { stream, app, args } = await setup(1);
    const children = await splitShard(local().kinesis, stream, 'shardId-000000000000');
    const operator = store(app, 'op', Date.now);
    const held = await firstValueFrom(operator.capture('shardId-000000000000'));
    if (held === undefined) throw new Error('capture failed');
    const before = await cli(['status', ...args, '--wide']);
    expect(before.stdout).to.match(/shardId-000000000000\s+-\s+op-name \(op\)\s+-\s+-\s+-\s+-\s+no \(closed\)/);
    await firstValueFrom(operator.release(held, { checkpoint: { type: 'position', position: { sequenceNumber: '42', subSequenceNumber: 3 } }, finished: true }));
    const status = await statusJson(args);
    const byId = new Map(status.shards.map((s) => [s.shardId, s]));
    expect(byId.get('shardId-000000000000')).to.deep.include({ open: false, finished: true, owner: null, checkpoint: { type: 'position', sequenceNumber: '42', subSequenceNumber: 3 } });
    for (const child of children) expect(byId.get(child)).to.deep.include({ open: true, parentShardIds: ['shardId-000000000000'] });
    const table = await cli(['status', ...args, '--wide']);
    // 42 is no record of the stream: its lag cannot be read ('?'); the release moved the checkpoint.
    expect(table.stdout).to.match(/shardId-000000000000\s+-\s+-\s+42\/3\s+\?\s+\?\s+\d+\.\ds ago\s+yes/);
    expect(table.stdout).to.match(new RegExp(`${children[0]}\\s+shardId-000000000000\\s+-`));
  });

  it('shows reset starts and a corrupt row without failing the others', async () => {
    const { app, args } = await setup(2);
    await firstValueFrom(store(app, 'op', Date.now).resetCheckpoint('shardId-000000000000', { type: 'AT_TIMESTAMP', timestamp: new Date('2026-01-02T03:04:05.678Z') }, { force: false }));
    await local().dynamodb.send(new PutItemCommand({ TableName: `${app}_checkpoints`, Item: { Shard: { S: 'shardId-000000000001' }, SequenceNumber: { S: 'not-a-number' } } }));
    const status = await statusJson(args);
    expect(status.shards[0]?.checkpoint).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: '2026-01-02T03:04:05.678Z' });
    expect(status.shards[1]?.corrupt).to.contain('SequenceNumber is not a sequence number');
    const table = await cli(['status', ...args, '--wide']);
    expect(table.code).to.equal(0);
    expect(table.stdout).to.contain('AT_TIMESTAMP 2026-01-02T03:04:05.678Z');
    expect(table.stdout).to.match(/shardId-000000000001\s+-\s+-\s+CORRUPT \(/);
  });

  it('fails with exit 1 naming a missing table or stream, and exit 2 without --stream', async () => {
    const { stream, args } = await setup(1);
    const noTable = await cli(['status', '--stream', stream, '--app', 'no-such-app', ...endpointArgs(local())]);
    expect(noTable.code).to.equal(1);
    expect(noTable.stderr).to.contain('no-such-app_checkpoints not found');
    const noStream = await cli(['status', ...args.slice(2).concat(['--stream', 'no-such-stream'])]);
    expect(noStream.code).to.equal(1);
    expect(noStream.stderr).to.contain('Kinesis stream no-such-stream not found');
    const usage = await cli(['status', '--app', 'x']);
    expect(usage.code).to.equal(2);
    expect(usage.stderr).to.contain('missing --stream');
  });
});
