import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { COMMANDS } from '../../src/cli/run.js';
import { createStream, putRecords } from '../../src/testing/index.js';
import { cli } from '../support/cli.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';

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
    it(`${command.name} --help prints its usage and every option it accepts, with exit 0`, async () => {
      const help = await cli([command.name, '--help']);
      expect(help.code).to.equal(0);
      expect(help.stderr).to.equal('');
      expect(help.stdout).to.contain(`Usage: kinsumer ${command.name}`);
      for (const option of [...Object.keys(command.options), 'stream', 'app', 'region', 'endpoint', 'profile', 'help']) {
        expect(help.stdout, option).to.match(new RegExp(`^  --${option}\\b`, 'm'));
      }
      for (const text of expected[command.name] ?? []) expect(help.stdout).to.contain(text);
      // -h too, and help wins over missing required options.
      expect((await cli([command.name, '-h'])).stdout).to.equal(help.stdout);
    });
  }

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
    const common = ['--stream', 's', '--app', 'a', '--region', 'us-east-1', '--endpoint', 'http://127.0.0.2:9'];
    for (const args of [['status', ...common], ['reset', ...common, '--to', 'LATEST'], ['tail', ...common, '--limit', '1']]) {
      const { code, output } = await run(args);
      expect(code, output).to.equal(1);
      expect(output).to.contain(`kinsumer ${String(args[0])}: `);
      for (const word of [keyId, secret]) expect(output).not.to.contain(word);
    }
  });
});
