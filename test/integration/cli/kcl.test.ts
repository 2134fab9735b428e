import { DescribeTableCommand, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { encodeAckedRanges } from '../../../src/checkpoint/acked-ranges.js';
import type { KclPlan } from '../../../src/index.js';
import { createStream } from '../../../src/testing/index.js';
import { cli, documentedCodes, endpointArgs, startCli } from '../../support/cli.js';
import { hashKeys, putInto } from '../../support/kcl-fixtures.js';
import { KclLeaseWriter, createKclTable } from '../../support/kcl-rows.js';
import { eventually, uniqueName, useLocalAws } from '../../support/local.js';

describe('CLI: import-kcl and export-kcl (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  /** A 2-shard stream with records, a KCL table as KCL 3.x writes it (shard 0 checkpointed at its 2nd record, shard 1 as given), and a fresh app. */
  async function setup(second: 'TRIM_HORIZON' | 'AT_TIMESTAMP' = 'TRIM_HORIZON') {
    const stream = uniqueName('kcl-cli');
    await createStream(local().kinesis, stream, 2);
    const keys = await hashKeys(local().kinesis, stream);
    const [s0 = '', s1 = ''] = [...keys.keys()].sort();
    const put = await putInto(local().kinesis, stream, keys.get(s0) ?? '', ['a', 'b', 'c']);
    const table = uniqueName('kcl-leases');
    await createKclTable(local().dynamodb, table, '3.x');
    const kcl = new KclLeaseWriter(local().dynamodb, table, '3.x');
    await kcl.create({ shardId: s0 });
    await kcl.take(s0, 'worker-a');
    await kcl.checkpoint(s0, { sequenceNumber: put[1]?.sequenceNumber ?? '', subSequenceNumber: 0 });
    await kcl.create({ shardId: s1, checkpoint: second });
    const app = uniqueName('kcl-app');
    return { stream, table, app, s0, s1, kcl, seq: put[1]?.sequenceNumber ?? '', after: put[2]?.sequenceNumber ?? '', args: ['--lease-table', table, '--stream', stream, '--app', app, ...endpointArgs(local())] };
  }

  const short = (sequenceNumber: string) => `${sequenceNumber.slice(0, 6)}…${sequenceNumber.slice(-6)}`;
  const longest = (text: string) => Math.max(...text.split('\n').map((line) => line.length));
  const tableMissing = (table: string) => local().dynamodb.send(new DescribeTableCommand({ TableName: table })).then(() => false, (error: Error) => error.name === 'ResourceNotFoundException');

  it('--help of both: usage, options and exit codes 0, 1, 2, 3', async () => {
    for (const [name, usage] of [
      ['import-kcl', 'Usage: kinsumer import-kcl --lease-table <KCL table> --stream <name|arn> --app <name> [--watch-ms 15000] [--timestamp <ISO time>] [--dry-run] [--force] [--json]'],
      ['export-kcl', 'Usage: kinsumer export-kcl --app <name> --stream <name|arn> --lease-table <KCL table>'],
    ] as const) {
      const help = await cli([name, '--help']);
      expect(help.code).to.equal(0);
      // The usage wraps at 80 columns (a pipe): compared with its line breaks taken out.
      expect(help.stdout.replace(/\s+/g, ' ')).to.contain(usage);
      for (const option of ['--lease-table <table>', '--watch-ms <ms>', '--dry-run', '--force', '--json', '--endpoint <url>', '--region <region>']) expect(help.stdout, `${name} ${option}`).to.contain(option);
      expect(documentedCodes(help.stdout), name).to.deep.equal([0, 1, 2, 3]);
    }
    expect((await cli(['import-kcl', '--help'])).stdout).to.contain('--timestamp <ISO time>');
    expect((await cli(['export-kcl', '--help'])).stdout).to.contain('--initial-position <position>');
    expect((await cli(['--help'])).stdout).to.match(/^ {2}import-kcl +\S/m).and.match(/^ {2}export-kcl +\S/m);
  });

  it('--dry-run prints one plan line per shard (KCL checkpoint, kinsumer start, action) and writes nothing, not even the tables', async () => {
    const { app, s0, s1, seq, args } = await setup();
    const result = await cli(['import-kcl', ...args, '--watch-ms', '50', '--dry-run']);
    expect(result.code, result.stderr).to.equal(0);
    const lines = result.stdout.split('\n');
    // 80 columns in a pipe: sequence numbers shortened as status shows them (newcomer trial 4: 150-310).
    expect(longest(result.stdout), result.stdout).to.be.at.most(80);
    expect(lines[0]).to.match(/^SHARD +KCL CHECKPOINT +KINSUMER START +ACTION$/);
    expect(lines[1]).to.match(new RegExp(`^${s0} +${short(seq)}/0 +after ${short(seq)} +write$`));
    expect(lines[2]).to.match(new RegExp(`^${s1} +TRIM_HORIZON +TRIM_HORIZON +write$`));
    // The whole sentence (it was cut: "... would be written; nothing was"), and the tables it would create.
    expect(result.stdout.replace(/\n {2}/g, ' ')).to.contain(`dry run: kinsumer's tables ${app}_clients, ${app}_checkpoints, ${app}_metadata would be created\n`);
    expect(result.stdout.replace(/\n {2}/g, ' ')).to.contain(`dry run: 2 checkpoint rows of app ${app} would be written; nothing was written\n`);
    const wide = await cli(['import-kcl', ...args, '--watch-ms', '50', '--dry-run', '--wide']);
    expect(wide.stdout.split('\n')[1]).to.match(new RegExp(`^${s0} +${seq}/0 +after ${seq} +write$`));
    expect(result.stderr).to.contain('watching 2 KCL leases and 0 kinsumer rows with an owner for 50 ms');
    expect(await tableMissing(`${app}_checkpoints`)).to.equal(true);
  });

  it('imports (exit 0), --json prints the plan; a second run finds kinsumer there already', async () => {
    const { app, s0, seq, args } = await setup();
    const result = await cli(['import-kcl', ...args, '--watch-ms', '50', '--json']);
    expect(result.code, result.stderr).to.equal(0);
    const plan = JSON.parse(result.stdout) as KclPlan;
    expect(plan.written).to.equal(2);
    expect(result.stdout, '--json prints the plan only').to.not.contain('created');
    expect(plan.shards[0]).to.deep.equal({ shardId: s0, leaseKey: s0, kcl: { checkpoint: seq, subSequenceNumber: 0 }, start: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: seq }, action: 'write' });
    const row = (await local().dynamodb.send(new GetItemCommand({ TableName: `${app}_checkpoints`, Key: { Shard: { S: s0 } }, ConsistentRead: true }))).Item;
    expect(row?.SequenceNumber).to.deep.equal({ S: seq });
    const again = await cli(['import-kcl', ...args, '--watch-ms', '50']);
    expect(again.code).to.equal(0);
    expect(again.stdout).to.match(new RegExp(`^${s0} .* skip$`, 'm')).and.match(new RegExp(`^${s0}: kinsumer is there already$`, 'm'));
    expect(again.stdout, 'the tables were there').to.not.contain('created');
    expect(again.stdout).to.contain(`imported 0 checkpoints from`);
  });

  it('refuses an AT_TIMESTAMP lease without --timestamp (exit 3, nothing written), imports it with one; export-kcl then prints the time the KCL must be configured with', async () => {
    const { app, s1, args } = await setup('AT_TIMESTAMP');
    const refused = await cli(['import-kcl', ...args, '--watch-ms', '50']);
    expect(refused.code).to.equal(3);
    expect(refused.stdout).to.match(new RegExp(`^${s1} +AT_TIMESTAMP +INITIAL_POSITION +refuse$`, 'm'));
    expect(refused.stdout.replace(/\n {2}/g, ' ')).to.match(new RegExp(`^${s1}: AT_TIMESTAMP: .*--timestamp$`, 'm'));
    expect(refused.stderr).to.contain('kinsumer import-kcl: refused:').and.contain('1 of the stream\'s shards are refused').and.contain('Nothing was written.');
    const timestamp = '2026-01-31T12:00:00.000Z';
    const imported = await cli(['import-kcl', ...args, '--watch-ms', '50', '--timestamp', timestamp]);
    expect(imported.code, imported.stderr).to.equal(0);
    // A time on a whole second is shown without its .000 (80 columns beside a shortened sequence number).
    const shown = '2026-01-31T12:00:00Z';
    expect(longest(imported.stdout), imported.stdout).to.be.at.most(80);
    expect(imported.stdout).to.match(new RegExp(`^${s1} +AT_TIMESTAMP +AT_TIMESTAMP ${shown} +write$`, 'm'));

    const exported = await cli(['export-kcl', ...args, '--watch-ms', '50']);
    expect(exported.code, exported.stderr).to.equal(0);
    expect(longest(exported.stdout), exported.stdout).to.be.at.most(80);
    expect(exported.stdout).to.match(new RegExp(`^${s1} +AT_TIMESTAMP ${shown} +AT_TIMESTAMP +write$`, 'm'));
    const flat = exported.stdout.replace(/\n {2}/g, ' ');
    expect(flat).to.match(new RegExp(`^${s1}: AT_TIMESTAMP ${shown}: the KCL application must be configured`, 'm'));
    expect(flat).to.contain(`exported 2 checkpoints of app ${app}`);
    expect(flat).to.contain(`configure the KCL application with InitialPositionInStream AT_TIMESTAMP ${timestamp}`);
    // No acked ranges in these rows: no caveat about them.
    expect(flat).to.not.contain('acked ranges');
  });

  it('export-kcl says records acked beyond the checkpoint are not carried over only where a row holds such ranges, naming the shards', async () => {
    const { app, s0, seq, after, args } = await setup();
    expect((await cli(['import-kcl', ...args, '--watch-ms', '50'])).code).to.equal(0);
    // As a consumer leaves it when it acked the 3rd record of shard 0 before the 2nd... 's successor.
    const ranges = encodeAckedRanges({ type: 'position', position: { sequenceNumber: seq } }, [{ from: { sequenceNumber: after }, to: { sequenceNumber: after } }]);
    await local().dynamodb.send(new UpdateItemCommand({
      TableName: `${app}_checkpoints`, Key: { Shard: { S: s0 } }, UpdateExpression: 'SET AckedRanges = :r', ExpressionAttributeValues: { ':r': { S: ranges?.text ?? '' } },
    }));
    const exported = await cli(['export-kcl', ...args, '--watch-ms', '50', '--dry-run']);
    expect(exported.code, exported.stderr).to.equal(0);
    expect(exported.stdout.replace(/\n {2}/g, ' ')).to.contain(`Records kinsumer acked beyond an unacked one (acked ranges, on 1 shard: ${s0}) are not carried over: the KCL processes them again.`);
    expect(longest(exported.stdout), exported.stdout).to.be.at.most(80);
  });

  it('refuses while the KCL fleet renews a lease during the watch (exit 3, nothing written), naming the lease', async () => {
    const { app, s0, kcl, args } = await setup();
    // The watch is long enough that the test's renewal, sent once the command says it watches, lands inside it.
    const running = startCli(['import-kcl', ...args, '--watch-ms', '3000']);
    await eventually(() => running.stderr().includes('watching'), 'the command to start watching');
    await kcl.renew(s0);
    const result = await running.done;
    expect(result.code).to.equal(3);
    expect(result.stderr).to.contain('the KCL fleet is alive').and.contain(s0).and.contain('Nothing was written.');
    expect(await tableMissing(`${app}_checkpoints`), 'not even the tables were created').to.equal(true);
  });

  it('usage errors exit 2; a missing KCL table exits 1 and names it', async () => {
    const { args, table } = await setup();
    expect((await cli(['import-kcl', '--stream', 's', '--app', 'a'])).code).to.equal(2);
    expect((await cli(['import-kcl', ...args, '--timestamp', 'yesterday'])).stderr).to.contain('--timestamp must be an ISO 8601 time');
    expect((await cli(['import-kcl', ...args, '--watch-ms', '0'])).code).to.equal(2);
    expect((await cli(['export-kcl', ...args, '--initial-position', 'EARLIEST'])).code).to.equal(2);
    const missing = await cli(['import-kcl', ...args.map((a) => (a === table ? `${table}-nope` : a)), '--watch-ms', '50']);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.contain(`the KCL lease table ${table}-nope was not found`);
  });
});
