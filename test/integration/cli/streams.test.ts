// The operator's commands on a group that reads several streams (--streams): status per stream,
// reset of one stream, clearing a dropped stream's rows; and the refusal to treat one kind of
// group as the other.
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { Kinsumer, createTables, type KinsumerRecord } from '../../../src/index.js';
import { parseShardKey } from '../../../src/ports/stream-key.js';
import { createStream, putRecords } from '../../../src/testing/index.js';
import type { StatusJson } from '../../../src/cli/commands/status.js';
import { cli, endpointArgs } from '../../support/cli.js';
import { eventually, uniqueName, useLocalAws } from '../../support/local.js';
import { FAST } from '../../support/memory-group.js';

describe('CLI: a group over many streams (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  /** Two streams a group read to their ends and left (its rows and shard list written), and a third never created. */
  async function readGroup(): Promise<{ orders: string; payments: string; missing: string; app: string; endpoints: string[] }> {
    const [orders, payments, missing] = [uniqueName('orders'), uniqueName('payments'), uniqueName('missing')];
    const app = uniqueName('streams-cli');
    await Promise.all([createStream(local().kinesis, orders, 2), createStream(local().kinesis, payments, 1), createTables({ dynamodb: local().dynamodb, applicationName: app })]);
    await putRecords(local().kinesis, orders, Array.from({ length: 10 }, (_, i) => ({ partitionKey: `k${i}`, data: `o${i}` })));
    await putRecords(local().kinesis, payments, Array.from({ length: 4 }, (_, i) => ({ partitionKey: `k${i}`, data: `p${i}` })));
    const kinsumer = new Kinsumer({ ...FAST, streams: [orders, payments, missing], applicationName: app, kinesis: local().kinesis, dynamodb: local().dynamodb, clientId: 'c1' });
    const received: KinsumerRecord[] = [];
    kinsumer.records$.subscribe((record) => { received.push(record); record.ack(); });
    await eventually(() => received.length === 14, 'every record', 20_000);
    await kinsumer.stop();
    return { orders, payments, missing, app, endpoints: endpointArgs(local()) };
  }

  async function keys(app: string): Promise<string[]> {
    const out = await local().dynamodb.send(new ScanCommand({ TableName: `${app}_checkpoints`, ConsistentRead: true }));
    return (out.Items ?? []).map((item) => item.Shard?.S ?? '').sort();
  }

  it('status --streams: every shard under its key with its stream (JSON); a section per stream, its shards by their own ids, and the stream not found (text)', async () => {
    const { orders, payments, missing, app, endpoints } = await readGroup();
    const json = await cli(['status', '--streams', `${orders},${payments},${missing}`, '--app', app, '--json', ...endpoints]);
    expect(json.code, json.stderr).to.equal(0);
    const status = JSON.parse(json.stdout) as StatusJson;
    expect(status.streams).to.deep.equal([orders, payments, missing]);
    expect(status.stream).to.equal(undefined);
    expect(status.shards.map((s) => [s.streamName, parseShardKey(s.shardId)?.stream.streamName, parseShardKey(s.shardId)?.shardId])).to.deep.equal([
      [orders, orders, 'shardId-000000000000'], [orders, orders, 'shardId-000000000001'], [payments, payments, 'shardId-000000000000'],
    ]);
    expect(status.shards.every((s) => s.checkpoint !== null)).to.equal(true);

    const text = await cli(['status', '--streams', `${orders},${payments},${missing}`, '--app', app, ...endpoints]);
    expect(text.code, text.stderr).to.equal(0);
    const lines = text.stdout.split('\n');
    expect(text.stdout.replace(/\s+/g, ' ')).to.match(new RegExp(`^streams ${orders}, ${payments}, ${missing}, app ${app}: 3 shards`));
    const section = (name: string) => lines.findIndex((line) => line.startsWith(`stream ${name} `) || line.startsWith(`stream ${name}:`));
    expect(lines.slice(section(orders), section(orders) + 2).join(' ').replace(/\s+/g, ' ')).to.match(/: 2 shards \(2 open\), 0 leased by live clients$/);
    expect(lines[section(orders) + 3]).to.match(/^shardId-000000000000 /);
    expect(lines.slice(section(payments), section(payments) + 2).join(' ').replace(/\s+/g, ' ')).to.match(/: 1 shard \(1 open\)/);
    expect(lines[section(missing)]).to.equal(`stream ${missing}: not found (or it has no shard): nothing of it is read`);
    expect(Math.max(...lines.map((line) => line.length))).to.be.at.most(80);
  });

  it('reset --streams one stream: only its shards move; --stream on this group is refused (exit 2), as --streams on a one-stream group', async () => {
    const { orders, payments, app, endpoints } = await readGroup();
    const before = await keys(app);
    const refusedOne = await cli(['reset', '--stream', orders, '--app', app, '--to', 'TRIM_HORIZON', ...endpoints]);
    expect(refusedOne.code).to.equal(2);
    expect(refusedOne.stderr).to.match(/reads several streams/);
    expect(await keys(app)).to.deep.equal(before);

    const reset = await cli(['reset', '--streams', payments, '--app', app, '--to', 'TRIM_HORIZON', ...endpoints]);
    expect(reset.code, reset.stderr).to.equal(0);
    expect(reset.stdout).to.match(/:shardId-000000000000:\s+\S+\s+->\s+TRIM_HORIZON/);
    const json = JSON.parse((await cli(['status', '--streams', `${orders},${payments}`, '--app', app, '--json', ...endpoints])).stdout) as StatusJson;
    const checkpoints = new Map(json.shards.map((s) => [s.streamName, s.checkpoint]));
    expect(checkpoints.get(payments)).to.deep.include({ type: 'TRIM_HORIZON' });
    expect(json.shards.filter((s) => s.streamName === orders).every((s) => s.checkpoint?.type === 'position')).to.equal(true);

    const oneStream = uniqueName('one');
    const oneApp = uniqueName('one-app');
    await Promise.all([createStream(local().kinesis, oneStream, 1), createTables({ dynamodb: local().dynamodb, applicationName: oneApp })]);
    const one = new Kinsumer({ ...FAST, streamName: oneStream, applicationName: oneApp, kinesis: local().kinesis, dynamodb: local().dynamodb });
    const leases: unknown[] = [];
    one.leases$.subscribe((lease) => leases.push(lease));
    await eventually(() => leases.length === 1, 'the one-stream group running', 10_000);
    await one.stop();
    const refusedMany = await cli(['reset', '--streams', oneStream, '--app', oneApp, '--to', 'LATEST', ...endpoints]);
    expect(refusedMany.code).to.equal(2);
    expect(refusedMany.stderr).to.match(/reads one stream/);
  });

  it('export-kcl --all-streams --dry-run: one plan line per shard of every stream the group has rows of, each under its multi-stream lease key', async () => {
    const { orders, payments, app, endpoints } = await readGroup();
    const table = uniqueName('kcl-table');
    const plan = await cli(['export-kcl', '--all-streams', '--app', app, '--lease-table', table, '--watch-ms', '100', '--dry-run', '--json', ...endpoints]);
    expect(plan.code, plan.stderr).to.equal(0);
    const lines = (JSON.parse(plan.stdout) as { shards: { shardId: string; leaseKey: string; action: string }[] }).shards;
    expect(lines.map((line) => [parseShardKey(line.shardId)?.stream.streamName, line.action])).to.deep.equal([[orders, 'write'], [orders, 'write'], [payments, 'write']]);
    expect(lines.every((line) => line.leaseKey === line.shardId)).to.equal(true);
    const usage = await cli(['export-kcl', '--all-streams', '--stream', orders, '--app', app, '--lease-table', table, ...endpoints]);
    expect(usage.code).to.equal(2);
  });

  it('reset --streams --clear deletes every row of a (dropped) stream, and only those', async () => {
    const { orders, payments, app, endpoints } = await readGroup();
    const usage = await cli(['reset', '--stream', payments, '--app', app, '--clear', ...endpoints]);
    expect(usage.code).to.equal(2);
    const cleared = await cli(['reset', '--streams', payments, '--app', app, '--clear', ...endpoints]);
    expect(cleared.code, cleared.stderr).to.equal(0);
    expect(cleared.stdout).to.match(/:shardId-000000000000:\s+\S+\s+->\s+row deleted/);
    expect(cleared.stdout).to.match(new RegExp(`cleared 1 row of streams ${payments}`));
    expect((await keys(app)).map((key) => parseShardKey(key)?.stream.streamName)).to.deep.equal([orders, orders]);
  });
});
