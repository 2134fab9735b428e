import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';

const run = promisify(execFile);

async function sh(command: string, args: string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await run(command, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false' } });
    return stdout;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stdout}${stderr}`);
  }
}

// The package as a user gets it: `npm pack`, installed into an empty project with its peer
// dependencies, then imported by plain Node (no tsx) and type-checked by tsc.
describe('the packed package (npm pack, installed elsewhere)', function () {
  this.timeout(600_000);
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kinsumer-pack-'));
    await sh('npm', ['pack', '--pack-destination', dir], process.cwd());
    const tarball = (await readdir(dir)).find((name) => name.endsWith('.tgz'));
    if (tarball === undefined) throw new Error('npm pack produced no tarball');
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'user-app', private: true, type: 'module' }));
    await sh('npm', ['install', '--prefer-offline', '--no-package-lock', join(dir, tarball), 'kinesalite', 'dynalite', 'typescript@~5.9.3', '@types/node@20'], dir);
  });

  after(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("imports 'kinsumer/testing' and runs a stream round trip on the local servers", async () => {
    await writeFile(join(dir, 'smoke.mjs'), `
      import { startLocalAws, createStream, putRecords, openShardIds } from 'kinsumer/testing';
      import { Kinsumer, ConfigError, createTables } from 'kinsumer';
      const local = await startLocalAws();
      try {
        await createStream(local.kinesis, 'packed', 2);
        const put = await putRecords(local.kinesis, 'packed', [{ partitionKey: 'a', data: 'hello' }]);
        await createTables({ dynamodb: local.dynamodb, applicationName: 'packed' });
        let rule = '';
        try { new Kinsumer({ applicationName: 'packed', kinesis: local.kinesis, dynamodb: local.dynamodb }); }
        catch (error) { rule = error instanceof ConfigError ? error.option : 'wrong error'; }
        console.log(JSON.stringify({ shards: (await openShardIds(local.kinesis, 'packed')).length, put: put.length, rule }));
      } finally {
        await local.stop();
      }
    `);
    const output = await sh('node', ['smoke.mjs'], dir);
    expect(JSON.parse(output.trim().split('\n').pop() ?? '{}')).to.deep.equal({ shards: 2, put: 1, rule: 'streamName' });
  });

  it('ships types that a strict NodeNext TypeScript project accepts', async () => {
    await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] },
      files: ['use.ts'],
    }));
    await writeFile(join(dir, 'use.ts'), `
      import { Kinsumer, type KinsumerRecord, type KinsumerOptions } from 'kinsumer';
      import { startLocalAws, type LocalAws } from 'kinsumer/testing';
      const start: () => Promise<LocalAws> = startLocalAws;
      export function build(options: KinsumerOptions): Kinsumer { return new Kinsumer(options); }
      export function size(record: KinsumerRecord): number { return record.data.byteLength; }
      void start;
    `);
    const output = await sh('npx', ['--no-install', 'tsc', '-p', 'tsconfig.json'], dir);
    expect(output.trim()).to.equal('');
  });
});
