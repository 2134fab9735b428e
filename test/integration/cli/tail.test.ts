import { expect } from 'chai';
import { createStream, putRecords, splitShard } from '../../../src/testing/index.js';
import { cli, startCli, type RunningCli } from '../../support/cli.js';
import { aggregate } from '../../support/kpl-aggregate.js';
import { eventually, uniqueName, useLocalAws } from '../../support/local.js';

interface TailJson {
  readonly shardId: string;
  readonly sequenceNumber: string;
  readonly subSequenceNumber?: number;
  readonly partitionKey: string;
  readonly approximateArrivalTimestamp: string;
  readonly encoding: 'utf8' | 'base64';
  readonly data: string;
}

describe('CLI: tail (kinesalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  async function setup(shards = 2): Promise<{ stream: string; args: string[] }> {
    const stream = uniqueName('tail');
    await createStream(local().kinesis, stream, shards);
    // No DynamoDB option: tail takes none (cli-help.test.ts checks it refuses them).
    return { stream, args: ['--stream', stream, '--kinesis-endpoint', local().endpoints.kinesis] };
  }

  /** Waits until tail has an iterator on each of `count` shards: from then on every new record is seen. */
  async function reading(tail: RunningCli, count: number): Promise<void> {
    await eventually(() => (tail.stderr().match(/^reading shardId-\d+ from /gm)?.length ?? 0) >= count, `tail reading ${count} shards (stderr: ${tail.stderr()})`);
  }

  it('from LATEST (the default) prints only records put after it started, with shard, sequence, key and data', async () => {
    const { stream, args } = await setup();
    await putRecords(local().kinesis, stream, [{ partitionKey: 'old', data: 'before the tail' }]);
    const tail = startCli(['tail', ...args, '--limit', '4']);
    await reading(tail, 2);
    expect(tail.stderr()).to.contain('reading shardId-000000000000 from LATEST');
    const put = await putRecords(local().kinesis, stream, ['a', 'b', 'c', 'd'].map((key) => ({ partitionKey: key, data: `value ${key}` })));
    const result = await tail.done;
    expect(result.code, result.stderr).to.equal(0);
    const lines = result.stdout.trimEnd().split('\n').map((line) => line.split('\t'));
    const expected = ['a', 'b', 'c', 'd'].map((key, i) => [put[i]?.shardId, put[i]?.sequenceNumber, key, `value ${key}`]);
    // Shards interleave; within a shard, sequence order.
    expect(lines).to.have.deep.members(expected);
    expect(result.stdout).not.to.contain('before the tail');
  });

  it('from TRIM_HORIZON with --json prints every record, binary data as base64, KPL sub-records one by one', async () => {
    const { stream, args } = await setup(1);
    const binary = new Uint8Array([0, 1, 2, 255, 254]);
    const kpl = aggregate([{ partitionKey: 'u1', data: 'first' }, { partitionKey: 'u2', data: 'second' }]);
    const put = await putRecords(local().kinesis, stream, [
      { partitionKey: 'text', data: 'héllo wörld' },
      { partitionKey: 'bin', data: binary },
      { partitionKey: 'nl', data: 'two\nlines' },
      kpl,
    ]);
    const result = await cli(['tail', ...args, '--from', 'TRIM_HORIZON', '--json', '--limit', '5']);
    expect(result.code, result.stderr).to.equal(0);
    const records = result.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as TailJson);
    expect(records.map((r) => [r.shardId, r.sequenceNumber, r.subSequenceNumber, r.partitionKey, r.encoding])).to.deep.equal([
      ['shardId-000000000000', put[0]?.sequenceNumber, undefined, 'text', 'utf8'],
      ['shardId-000000000000', put[1]?.sequenceNumber, undefined, 'bin', 'base64'],
      ['shardId-000000000000', put[2]?.sequenceNumber, undefined, 'nl', 'base64'],
      ['shardId-000000000000', put[3]?.sequenceNumber, 0, 'u1', 'utf8'],
      ['shardId-000000000000', put[3]?.sequenceNumber, 1, 'u2', 'utf8'],
    ]);
    expect(records[0]?.data).to.equal('héllo wörld');
    expect(new Uint8Array(Buffer.from(String(records[1]?.data), 'base64'))).to.deep.equal(binary);
    expect(Buffer.from(String(records[2]?.data), 'base64').toString()).to.equal('two\nlines');
    expect(records.slice(3).map((r) => r.data)).to.deep.equal(['first', 'second']);
    expect(Date.parse(String(records[0]?.approximateArrivalTimestamp))).to.be.closeTo(Date.now(), 60_000);
    // The text form keeps one record per line: a newline in the data goes out as base64.
    const text = await cli(['tail', ...args, '--from', 'TRIM_HORIZON', '--limit', '5']);
    expect(text.stdout.trimEnd().split('\n')).to.have.length(5);
    expect(text.stdout).to.contain(`\tnl\tbase64:${Buffer.from('two\nlines').toString('base64')}\n`);
    expect(text.stdout).to.contain(`${put[3]?.sequenceNumber}/1\tu2\tsecond\n`);
  });

  it('in a terminal: a line per record at its width, the sequence number shortened, long data cut; --wide and a pipe print records whole', async () => {
    const { stream, args } = await setup(1);
    const long = 'x'.repeat(100);
    const put = await putRecords(local().kinesis, stream, [{ partitionKey: 'k0', data: '{"n":0}' }, { partitionKey: 'k1', data: long }]);
    const sequence = put[0]?.sequenceNumber ?? '';
    const terminal = await cli(['tail', ...args, '--from', 'TRIM_HORIZON', '--limit', '2'], undefined, 80);
    expect(terminal.code, terminal.stderr).to.equal(0);
    const lines = terminal.stdout.trimEnd().split('\n');
    expect(lines[0]).to.equal(`shardId-000000000000  ${sequence.slice(0, 6)}…${sequence.slice(-6)}  k0  {"n":0}`);
    expect(lines[1]).to.have.length(80).and.match(/x…$/);
    const wide = await cli(['tail', ...args, '--from', 'TRIM_HORIZON', '--limit', '2', '--wide'], undefined, 80);
    expect(wide.stdout).to.contain(`shardId-000000000000\t${sequence}\tk0\t{"n":0}\n`).and.contain(`\tk1\t${long}\n`);
    const piped = await cli(['tail', ...args, '--from', 'TRIM_HORIZON', '--limit', '2']);
    expect(piped.stdout).to.equal(wide.stdout);
  });

  it('from a timestamp, and on --shard only, starts there', async () => {
    const { stream, args } = await setup(2);
    await putRecords(local().kinesis, stream, [{ partitionKey: 'early', data: 'early' }]);
    const first = await cli(['tail', ...args, '--from', 'TRIM_HORIZON', '--json', '--limit', '1']);
    const early = JSON.parse(first.stdout) as TailJson;
    const after = new Date(Date.parse(early.approximateArrivalTimestamp) + 1);
    await eventually(() => Date.now() > after.getTime(), 'the clock to pass the first record');
    const put = await putRecords(local().kinesis, stream, Array.from({ length: 10 }, (_, i) => ({ partitionKey: `late${i}`, data: `late${i}` })));
    const shard = early.shardId;
    const late = put.filter((p) => p.shardId === shard);
    const result = await cli(['tail', ...args, '--from', after.toISOString(), '--shard', shard, '--json', '--limit', String(late.length)]);
    expect(result.code, result.stderr).to.equal(0);
    const records = result.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as TailJson);
    expect(records.map((r) => r.sequenceNumber)).to.deep.equal(late.map((p) => p.sequenceNumber));
    expect(records.every((r) => r.shardId === shard)).to.equal(true);
    expect(result.stderr).to.contain(`reading ${shard} from ${after.toISOString()}`);
  });

  it('follows a split: the children are read from their beginning', async () => {
    const { stream, args } = await setup(1);
    const tail = startCli(['tail', ...args, '--json', '--refresh-ms', '100']);
    try {
      await reading(tail, 1);
      const children = await splitShard(local().kinesis, stream, 'shardId-000000000000');
      const put = await putRecords(local().kinesis, stream, Array.from({ length: 10 }, (_, i) => ({ partitionKey: `after-split-${i}`, data: String(i) })));
      expect(new Set(put.map((p) => p.shardId))).to.deep.equal(new Set(children));
      const printed = await eventually(() => {
        const lines = tail.stdout().trimEnd().split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as TailJson);
        return lines.length >= put.length && lines;
      }, 'the records of both children');
      expect(printed.map((r) => [r.shardId, r.sequenceNumber])).to.have.deep.members(put.map((p) => [p.shardId, p.sequenceNumber]));
      for (const child of children) expect(tail.stderr()).to.contain(`reading ${child} from TRIM_HORIZON`);
    } finally {
      tail.interrupt();
    }
    expect((await tail.done).code).to.equal(0);
  });

  it('stops with exit 0 on SIGINT (the io signal) while waiting for records', async () => {
    const { args } = await setup(1);
    const tail = startCli(['tail', ...args]);
    await reading(tail, 1);
    tail.interrupt();
    const result = await tail.done;
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.equal('');
  });

  it('refuses bad options with exit 2 and a missing stream with exit 1', async () => {
    const { args } = await setup(1);
    for (const [bad, message] of [
      [['--limit', '0'], '--limit must be a whole number >= 1'],
      [['--limit', 'many'], "not 'many'"],
      [['--from', 'yesterday'], '--from must be LATEST, TRIM_HORIZON or an ISO 8601 timestamp'],
      [['--shard', 'shardId-999'], 'not a shard of stream'],
    ] as const) {
      const result = await cli(['tail', ...args, ...bad]);
      expect(result.code, `${bad.join(' ')}: ${result.stderr}`).to.equal(2);
      expect(result.stderr).to.contain(message);
    }
    const missing = await cli(['tail', '--stream', 'no-such-stream', '--kinesis-endpoint', local().endpoints.kinesis]);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.contain('Kinesis stream no-such-stream not found');
  });
});
