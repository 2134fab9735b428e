import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { type Subscription, concatMap, firstValueFrom, interval } from 'rxjs';
import { COMMANDS, commandOptions } from '../../../src/cli/run.js';
import { Dynamo } from '../../../src/dynamodb/dynamo.js';
import { DynamoMembershipStore } from '../../../src/dynamodb/membership-store.js';
import { DynamoLeaseStore } from '../../../src/dynamodb/lease-store.js';
import { createTables } from '../../../src/index.js';
import { createStream, putRecords } from '../../../src/testing/index.js';
import { cli, documentedCodes, endpointArgs } from '../../support/cli.js';
import { KclLeaseWriter, createKclTable } from '../../support/kcl-rows.js';
import { eventually, uniqueName, useLocalAws } from '../../support/local.js';

/** The bin as a separate node process, run from source through tsx (no build needed). */
const BIN = ['--import', 'tsx', 'src/cli/main.ts'];

describe('CLI: --help on every command', () => {
  it('lists status, tail and reset in the main help', async () => {
    const help = await cli(['--help']);
    for (const name of ['status', 'tail', 'reset']) expect(help.stdout).to.match(new RegExp(`^  ${name} +\\S`, 'm'));
  });

  const expected: Record<string, readonly string[]> = {
    status: ['Usage: kinsumer status --stream <name|arn> --app <name>', '--json', '--lease-ttl-ms <ms>'],
    tail: ['Usage: kinsumer tail --stream <name|arn>', '--from <position>', '--limit <N>', '--shard <id,...>', '--json', 'takes no leases'],
    reset: ['Usage: kinsumer reset --stream <name|arn> --app <name> --to LATEST|TRIM_HORIZON|<ISO timestamp>', '--to <position>', '--force', '--shard <id,...>'],
  };

  for (const command of COMMANDS) {
    it(`${command.name} --help prints its usage and exactly the options it accepts, with exit 0`, async () => {
      const help = await cli([command.name, '--help']);
      expect(help.code).to.equal(0);
      expect(help.stderr).to.equal('');
      expect(help.stdout).to.contain(`Usage: kinsumer ${command.name}`);
      const listed = [...help.stdout.matchAll(/^ {2}--([\w-]+)/gm)].map((m) => m[1]).sort();
      expect(listed).to.deep.equal(Object.keys(commandOptions(command)).sort());
      for (const option of [...Object.keys(command.options), 'region', 'profile', 'help']) expect(listed, option).to.include(option);
      // Wrapped to 80 columns: compared with single spaces.
      for (const text of expected[command.name] ?? []) expect(help.stdout.replace(/\s+/g, ' ')).to.contain(text);
      // -h too, and help wins over missing required options.
      expect((await cli([command.name, '-h'])).stdout).to.equal(help.stdout);
    });
  }

  it('tail --help lists only what tail uses: no --app, no DynamoDB endpoint; tail refuses them (exit 2)', async () => {
    const help = (await cli(['tail', '--help'])).stdout;
    expect(help).not.to.match(/--app\b/);
    expect(help).not.to.contain('--dynamodb-endpoint');
    const refused = await cli(['tail', '--stream', 's', '--app', 'a']);
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.contain("unknown option '--app'");
  });

  it('create-tables and delete-tables list no Kinesis options (they touch DynamoDB only)', async () => {
    for (const name of ['create-tables', 'delete-tables']) {
      const help = (await cli([name, '--help'])).stdout;
      expect(help, name).not.to.match(/--stream\b/);
      expect(help, name).not.to.contain('--kinesis-endpoint');
    }
  });

  it('--version and -V print the package version (exit 0), and the main help mentions it', async () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const out = await cli([flag]);
      expect([out.code, out.stdout, out.stderr], flag).to.deep.equal([0, `${version}\n`, '']);
    }
    expect((await cli(['--help'])).stdout).to.match(/^ {2}--version, -V +\S/m);
    const { stdout } = await promisify(execFile)(process.execPath, [...BIN, '--version']);
    expect(stdout).to.equal(`${version}\n`);
  });

  it('every command documents its exit codes in --help', async () => {
    for (const command of COMMANDS) {
      const codes = documentedCodes((await cli([command.name, '--help'])).stdout);
      expect(codes, command.name).to.include.members([0, 1, 2]);
    }
  });

  it('prints a command\'s help with exit 2 after a usage error', async () => {
    const result = await cli(['reset', '--stream', 's', '--app', 'a']);
    expect(result.code).to.equal(2);
    expect(result.stderr).to.contain('kinsumer reset: missing --to');
    expect(result.stderr).to.contain('Usage: kinsumer reset');
  });

  it('prints tail --help from the bin (a separate process)', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [...BIN, 'tail', '--help']);
    expect(stdout).to.contain('Usage: kinsumer tail --stream <name|arn>');
  });
});

// Newcomer trial 3: at 80 columns the help broke mid-word (7 of 13 lines of `--help`, up to 180
// characters in `reset --help`). Every help text wraps at the terminal's width, 80 in a pipe.
describe('CLI: --help at 80 columns (and at the terminal width)', () => {
  const helps = ['--help', ...COMMANDS.map((c) => `${c.name} --help`)];
  const longer = (text: string, width: number) => text.split('\n').filter((line) => line.length > width);
  /** The words of a help text, in order: what must survive any wrapping whole. */
  const words = (text: string) => text.split(/\s+/).filter((w) => w !== '');

  for (const help of helps) {
    it(`kinsumer ${help}: no line over 80 columns when the output is not a terminal, nor over 60 on a 60-column terminal, and no word lost or cut`, async () => {
      const piped = await cli(help.split(' '));
      expect(longer(piped.stdout, 80)).to.deep.equal([]);
      const narrow = await cli(help.split(' '), undefined, 60);
      expect(longer(narrow.stdout, 60)).to.deep.equal([]);
      const wide = await cli(help.split(' '), undefined, 400);
      expect(words(narrow.stdout)).to.deep.equal(words(wide.stdout));
      expect(words(piped.stdout)).to.deep.equal(words(wide.stdout));
    });
  }

  it('an option\'s text goes on under a hanging indent at its column, and an exit code\'s under its meaning', async () => {
    const { stdout } = await cli(['reset', '--help']);
    const lines = stdout.split('\n');
    const force = lines.findIndex((l) => l.startsWith('  --force '));
    const column = (lines[force] ?? '').indexOf('reset shards');
    expect(column).to.be.greaterThan(10);
    // The --force text is longer than one line: the next line continues it at the same column.
    expect(lines[force + 1]?.slice(0, column)).to.equal(' '.repeat(column));
    expect(lines[force + 1]?.[column]).to.match(/\S/);
    expect(lines[force]?.endsWith(' their') || lines[force + 1]?.includes('owners are fenced')).to.equal(true);
    const usage = lines.slice(0, lines.indexOf(''));
    expect(usage.length).to.be.greaterThan(1);
    // A bracketed group of the usage is never split across lines.
    expect(usage.some((l) => l.includes('[--shard <id>[,<id>...]]'))).to.equal(true);
    const codes = (await cli(['deregister-consumer', '--help'])).stdout.split('\n');
    const one = codes.findIndex((l) => l.startsWith('  1  the stream was not found'));
    expect(codes[one + 1]).to.match(/^ {5}\S/);
  });

  it('the bin in a pipe (not a terminal) wraps at 80 columns', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [...BIN, 'reset', '--help']);
    expect(longer(stdout, 80)).to.deep.equal([]);
    expect(stdout).to.contain('--force');
  });
});

describe('CLI: the bin as a process (kinesalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  it('tail stops on SIGINT with exit 0', async () => {
    const stream = uniqueName('bin-tail');
    await createStream(local().kinesis, stream, 1);
    const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [...BIN, 'tail', '--stream', stream, '--endpoint', local().endpoints.kinesis]);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await eventually(() => stderr.includes('reading shardId-000000000000 from LATEST'), `tail to start (stderr: ${stderr})`, 30_000);
      child.kill('SIGINT');
      expect(await exit).to.equal(0);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('tail ends quietly with exit 0 when the reader closes the pipe (`kinsumer tail | head -1`)', async () => {
    const stream = uniqueName('pipe-tail');
    await createStream(local().kinesis, stream, 1);
    await putRecords(local().kinesis, stream, Array.from({ length: 50 }, (_, i) => ({ partitionKey: 'k', data: `record ${i}` })));
    const child = spawn(process.execPath, [...BIN, 'tail', '--stream', stream, '--from', 'TRIM_HORIZON', '--endpoint', local().endpoints.kinesis]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await eventually(() => stdout.includes('record 0'), `the first record (stderr: ${stderr})`, 30_000);
      // As `head` does after its line: the read end goes away; later writes hit EPIPE.
      child.stdout.destroy();
      await putRecords(local().kinesis, stream, [{ partitionKey: 'k', data: 'after the reader left' }]);
      expect(await exit, stderr).to.equal(0);
      expect(stderr).not.to.contain('EPIPE');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('never prints credentials, even when a request fails', async () => {
    const keyId = 'AKIDNEVERPRINTED0001';
    const secret = 'secret-never-printed-0123456789';
    // 127.0.0.2 is not taken for a local server, so the SDK's default chain (these variables) signs the requests.
    const env = { ...process.env, AWS_ACCESS_KEY_ID: keyId, AWS_SECRET_ACCESS_KEY: secret, AWS_SESSION_TOKEN: `${secret}-token`, AWS_MAX_ATTEMPTS: '1' };
    const run = (args: readonly string[]) => new Promise<{ code: number | null; output: string }>((resolve) => {
      execFile(process.execPath, [...BIN, ...args], { env }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : (error.code as number), output: stdout + stderr }));
    });
    const common = ['--stream', 's', '--region', 'us-east-1', '--endpoint', 'http://127.0.0.2:9'];
    for (const args of [['status', ...common, '--app', 'a'], ['reset', ...common, '--app', 'a', '--to', 'LATEST'], ['tail', ...common, '--limit', '1']]) {
      const { code, output } = await run(args);
      expect(code, output).to.equal(1);
      expect(output).to.contain(`kinsumer ${String(args[0])}: `);
      for (const word of [keyId, secret]) expect(output).not.to.contain(word);
    }
  });
});

// Every exit code a command's help documents, caused for real on the local servers. deregister-consumer
// needs a server with enhanced fan-out: its codes are checked in cli-consumer.test.ts (kinesis-local).
describe('CLI: each documented exit code happens (kinesalite + dynalite)', function () {
  this.timeout(120_000);
  const local = useLocalAws();
  const closed = 'http://127.0.0.1:9';
  let stream: string;
  let app: string;
  const renewals: Subscription[] = [];
  after(() => { for (const renewal of renewals) renewal.unsubscribe(); });

  before(async () => {
    stream = uniqueName('codes');
    app = uniqueName('codes-app');
    await createStream(local().kinesis, stream, 1);
    await putRecords(local().kinesis, stream, [{ partitionKey: 'k', data: 'one' }]);
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
  });

  const all = () => endpointArgs(local());
  const dynamodb = () => ['--endpoint', local().endpoints.dynamodb];
  const kinesis = () => ['--endpoint', local().endpoints.kinesis];
  const cases: Record<string, Record<number, () => Promise<string[]> | string[]>> = {
    'create-tables': {
      0: () => ['create-tables', '--app', app, ...dynamodb()],
      1: () => ['create-tables', '--app', 'x', '--endpoint', closed],
      2: () => ['create-tables', '--app', 'x', '--billing-mode', 'FREE', ...dynamodb()],
    },
    'delete-tables': {
      0: () => ['delete-tables', '--app', uniqueName('absent'), ...dynamodb()],
      1: () => ['delete-tables', '--app', 'x', '--endpoint', closed],
      2: () => ['delete-tables'],
    },
    status: {
      0: () => ['status', '--stream', stream, '--app', app, ...all()],
      1: () => ['status', '--stream', uniqueName('none'), '--app', app, ...all()],
      2: () => ['status', '--stream', stream, ...all()],
    },
    tail: {
      0: () => ['tail', '--stream', stream, '--from', 'TRIM_HORIZON', '--limit', '1', ...kinesis()],
      1: () => ['tail', '--stream', uniqueName('none'), ...kinesis()],
      2: () => ['tail', '--stream', stream, '--from', 'yesterday', ...kinesis()],
    },
    reset: {
      0: async () => {
        const fresh = uniqueName('codes-reset');
        await createTables({ dynamodb: local().dynamodb, applicationName: fresh });
        return ['reset', '--stream', stream, '--app', fresh, '--to', 'LATEST', ...all()];
      },
      1: () => ['reset', '--stream', uniqueName('none'), '--app', app, '--to', 'LATEST', ...all()],
      2: () => ['reset', '--stream', stream, '--app', app, ...all()],
      // Live means renewing: an unforced reset watches the row for one lease TTL and refuses if it changes.
      3: async () => ['reset', '--stream', stream, '--app', await liveHolder(), '--to', 'LATEST', '--lease-ttl-ms', '3000', ...all()],
    },
    drain: {
      0: async () => ['drain', '--app', await withMember(), '--client', 'member-1', ...dynamodb()],
      1: () => ['drain', '--app', app, '--client', 'member-1', '--endpoint', closed],
      2: () => ['drain', '--app', app, ...dynamodb()],
      3: () => ['drain', '--app', app, '--client', 'nobody', ...dynamodb()],
    },
    'import-kcl': {
      0: async () => ['import-kcl', '--lease-table', await kclTable('TRIM_HORIZON'), '--stream', stream, '--app', uniqueName('codes-kcl'), '--watch-ms', '50', ...all()],
      1: () => ['import-kcl', '--lease-table', uniqueName('absent'), '--stream', stream, '--app', app, '--watch-ms', '50', ...all()],
      2: () => ['import-kcl', '--stream', stream, '--app', app, ...all()],
      // An AT_TIMESTAMP lease without the application's time.
      3: async () => ['import-kcl', '--lease-table', await kclTable('AT_TIMESTAMP'), '--stream', stream, '--app', uniqueName('codes-kcl'), '--watch-ms', '50', ...all()],
    },
    'export-kcl': {
      0: () => ['export-kcl', '--lease-table', uniqueName('codes-kcl-out'), '--stream', stream, '--app', app, '--watch-ms', '50', ...all()],
      1: () => ['export-kcl', '--lease-table', uniqueName('codes-kcl-out'), '--stream', uniqueName('none'), '--app', app, ...all()],
      2: () => ['export-kcl', '--lease-table', 't-1', '--stream', stream, '--app', app, '--initial-position', 'EARLIEST', ...all()],
      // A live client: its lease row is renewed while the export watches it.
      3: async () => ['export-kcl', '--lease-table', uniqueName('codes-kcl-out'), '--stream', stream, '--app', await liveHolder(), '--watch-ms', '2000', ...all()],
    },
  };

  /** A fresh app whose shard a client captured just now and renews every 300 ms (a live lease). */
  async function liveHolder(): Promise<string> {
    const held = uniqueName('codes-held');
    await createTables({ dynamodb: local().dynamodb, applicationName: held });
    const store = new DynamoLeaseStore({ dynamo: new Dynamo(local().dynamodb), table: `${held}_checkpoints`, clientId: 'holder', clientName: 'holder', leaseTtlMs: 60_000, now: Date.now });
    const lease = await firstValueFrom(store.capture('shardId-000000000000'));
    if (lease === undefined) throw new Error('the holder could not capture the shard');
    renewals.push(interval(300).pipe(concatMap(() => store.renew(lease))).subscribe());
    return held;
  }

  /** A fresh app with one registered member, `member-1` (its first heartbeat). */
  async function withMember(): Promise<string> {
    const fresh = uniqueName('codes-drain');
    await createTables({ dynamodb: local().dynamodb, applicationName: fresh });
    const membership = new DynamoMembershipStore({ dynamo: new Dynamo(local().dynamodb), table: `${fresh}_clients`, clientId: 'member-1', clientName: 'member-1', leaseTtlMs: 60_000, now: Date.now });
    await firstValueFrom(membership.heartbeat([]));
    return fresh;
  }

  /** A KCL lease table (as KCL 3.x writes it) with one lease of the stream's shard at `checkpoint`. */
  async function kclTable(checkpoint: 'TRIM_HORIZON' | 'AT_TIMESTAMP'): Promise<string> {
    const table = uniqueName('codes-kcl-leases');
    await createKclTable(local().dynamodb, table, '3.x');
    await new KclLeaseWriter(local().dynamodb, table, '3.x').create({ shardId: 'shardId-000000000000', checkpoint });
    return table;
  }

  for (const command of COMMANDS.filter((c) => c.name !== 'deregister-consumer')) {
    it(`${command.name}: every exit code its --help documents happens`, async () => {
      const documented = documentedCodes((await cli([command.name, '--help'])).stdout);
      const commandCases = cases[command.name] ?? {};
      expect(Object.keys(commandCases).map(Number), 'the cases cover the documented codes').to.deep.equal(documented);
      for (const [code, args] of Object.entries(commandCases)) {
        const result = await cli(await args());
        expect(result.code, `${command.name}, expecting ${code}: ${result.stderr}`).to.equal(Number(code));
      }
    });
  }
});
