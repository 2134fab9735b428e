import { execFile } from 'node:child_process';
import { access, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';

const run = promisify(execFile);

async function sh(command: string, args: string[], cwd: string): Promise<string> {
  return (await shWithErrors(command, args, cwd)).stdout;
}

async function shWithErrors(command: string, args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(command, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false' } });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stdout}${stderr}`);
  }
}

/** The guides moved out of the README: the API reference's project documents (typedoc.config.js). */
async function guides(): Promise<string[]> {
  const config = await import(pathToFileURL(resolve('typedoc.config.js')).href) as { default: { projectDocuments?: string[] } };
  const pages = config.default.projectDocuments ?? [];
  expect(pages.length, 'the guides in typedoc.config.js').to.be.greaterThan(0);
  return pages;
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
  // Newcomer trial 3: with TypeScript 5.9 and `module: commonjs` (hence node10 resolution),
  // `import ... from 'kinsumer/testing'` failed with TS2307: node10 does not read `exports`.
  it("resolves 'kinsumer' and 'kinsumer/testing' in a CommonJS TypeScript project (module commonjs, moduleResolution node10: typesVersions)", async () => {
    await writeFile(join(dir, 'tsconfig.node10.json'), JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'commonjs', moduleResolution: 'node10', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] },
      files: ['use-node10.ts'],
    }));
    await writeFile(join(dir, 'use-node10.ts'), `
      import { Kinsumer, type KinsumerRecord, type KinsumerOptions } from 'kinsumer';
      import { startLocalAws, createStream, type LocalAws } from 'kinsumer/testing';
      const start: () => Promise<LocalAws> = startLocalAws;
      export function build(options: KinsumerOptions): Kinsumer { return new Kinsumer(options); }
      export function size(record: KinsumerRecord): number { return record.data.byteLength; }
      void start; void createStream;
    `);
    const output = await sh('npx', ['--no-install', 'tsc', '-p', 'tsconfig.node10.json'], dir).catch((error: Error) => error.message);
    expect(output.trim()).to.equal('');
  });

  it('the testing kit exports what it documents, not the suite\'s own helpers (freePort, javaAvailable, awsError)', async () => {
    await writeFile(join(dir, 'kit.mjs'), "console.log(JSON.stringify(Object.keys(await import('kinsumer/testing'))));");
    const names = JSON.parse((await sh('node', ['kit.mjs'], dir)).trim()) as string[];
    expect(names).to.include.members(['startLocalAws', 'createStream', 'putRecords', 'MemoryStream', 'localKinesisClient']);
    expect(names.filter((name) => ['freePort', 'javaAvailable', 'awsError'].includes(name))).to.deep.equal([]);
  });

  it('bounds every peer dependency range: no open-ended >= that accepts any future major', async () => {
    const manifest = JSON.parse(await readFile(join(dir, 'node_modules/kinsumer/package.json'), 'utf8')) as { peerDependencies: Record<string, string> };
    const open = Object.entries(manifest.peerDependencies).filter(([, range]) => !/^[\^~]\d/.test(range) && !range.includes('<'));
    expect(open).to.deep.equal([]);
  });

  it("require('kinsumer') and require('kinsumer/testing') work from a CommonJS file (Node's require(esm)) and consume records", async () => {
    await writeFile(join(dir, 'use.cjs'), `
      const { Kinsumer, KinsumerError, createTables } = require('kinsumer');
      const { startLocalAws, createStream, putRecords } = require('kinsumer/testing');
      const { firstValueFrom, take, tap, toArray } = require('rxjs');
      (async () => {
        const local = await startLocalAws();
        try {
          await createStream(local.kinesis, 'cjs', 1);
          await createTables({ dynamodb: local.dynamodb, applicationName: 'cjs' });
          await putRecords(local.kinesis, 'cjs', ['a', 'b', 'c'].map((data) => ({ partitionKey: data, data })));
          const consumer = new Kinsumer({ streamName: 'cjs', applicationName: 'cjs', kinesis: local.kinesis, dynamodb: local.dynamodb });
          const records = await firstValueFrom(consumer.records$.pipe(tap((r) => r.ack()), take(3), toArray()));
          await consumer.stop();
          const data = records.map((r) => Buffer.from(r.data).toString()).sort();
          console.log(JSON.stringify({ data, errorIsClass: new KinsumerError('x') instanceof Error }));
        } finally {
          await local.stop();
        }
      })().catch((error) => { console.error(error); process.exit(1); });
    `);
    const { stdout, stderr } = await shWithErrors('node', ['use.cjs'], dir);
    expect(JSON.parse(stdout.trim().split('\n').pop() ?? '{}')).to.deep.equal({ data: ['a', 'b', 'c'], errorIsClass: true });
    // Node prints an ExperimentalWarning where require(esm) is still flagged as such.
    expect(stderr).not.to.contain('Warning');
  });

  it('declares the Node versions whose require() loads ES modules (engines >= 20.19)', async () => {
    const manifest = JSON.parse(await readFile(join(dir, 'node_modules/kinsumer/package.json'), 'utf8')) as { engines?: { node?: string } };
    expect(manifest.engines?.node).to.equal('>=20.19');
  });

  it('ships its metadata: repository, homepage, bugs and an MIT LICENSE file', async () => {
    const root = join(dir, 'node_modules/kinsumer');
    const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
      license?: string; homepage?: string; repository?: { type?: string; url?: string }; bugs?: { url?: string };
    };
    expect(manifest.license).to.equal('MIT');
    expect(manifest.repository?.type).to.equal('git');
    expect(manifest.repository?.url).to.match(/^git\+https:\/\/github\.com\/[\w.-]+\/[\w.-]+\.git$/);
    const repo = (manifest.repository?.url ?? '').replace(/^git\+/, '').replace(/\.git$/, '');
    expect(manifest.homepage).to.equal(`${repo}#readme`);
    expect(manifest.bugs?.url).to.equal(`${repo}/issues`);
    const license = await readFile(join(root, 'LICENSE'), 'utf8');
    expect(license).to.match(/^MIT License\n\nCopyright \(c\) \d{4} kinsumer contributors\n/);
    expect(license).to.contain('THE SOFTWARE IS PROVIDED "AS IS"');
  });

  it('ships source maps whose every source resolves (a file in the package, or its text inlined)', async () => {
    const root = join(dir, 'node_modules/kinsumer');
    const maps = (await readdir(join(root, 'dist'), { recursive: true })).filter((name) => name.endsWith('.map'));
    expect(maps.length).to.be.greaterThan(0);
    const unresolved: string[] = [];
    for (const name of maps) {
      const path = join(root, 'dist', name);
      const map = JSON.parse(await readFile(path, 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[] };
      for (const [i, source] of map.sources.entries()) {
        if (typeof map.sourcesContent?.[i] === 'string') continue;
        const exists = await access(resolve(dirname(path), source)).then(() => true, () => false);
        if (!exists) unresolved.push(`${name}: ${source}`);
      }
    }
    expect(unresolved, 'sources neither shipped nor inlined').to.deep.equal([]);
  });
  it('the README and its guides name only what the package or its peers declare (every identifier in their inline code)', async () => {
    const root = join(dir, 'node_modules/kinsumer');
    // The README as shipped, and the guides it links (not shipped).
    const readme = [await readFile(join(root, 'README.md'), 'utf8'), ...await Promise.all((await guides()).map((page) => readFile(page, 'utf8')))].join('\n');
    const dist = join(root, 'dist');
    const files = await readdir(dist, { recursive: true });
    const text = async (ext: string) => (await Promise.all(files.filter((f) => f.endsWith(ext)).map((f) => readFile(join(dist, f), 'utf8')))).join('\n');
    // Declarations without their comments: a name only mentioned in a doc comment is not API.
    const declared = new Set((await text('.d.ts')).replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '').match(/[A-Za-z_]\w*\$?/g));
    const code = await text('.js');
    const peers = new Set<string>();
    for (const peer of ['rxjs', '@aws-sdk/client-kinesis', '@aws-sdk/client-dynamodb', '@smithy/node-http-handler']) {
      for (const name of Object.keys(await import(peer) as object)) peers.add(name);
    }
    const NOT_API: Readonly<Record<string, string>> = {
      throttleDelay: 'the README\'s own example of a misspelt option',
      true: 'a JavaScript value', new: 'a JavaScript keyword', require: 'Node\'s CommonJS loader', backend: 'a placeholder argument',
      requestHandler: 'an AWS SDK client option', disableConcurrentStreams: 'an AWS SDK HTTP/2 handler option',
      MillisBehindLatest: 'a Kinesis response field', NextToken: 'a Kinesis request field', ChildShards: 'a Kinesis response field',
      StreamARN: 'a Kinesis request field',
      Infinity: 'a JavaScript value',
      // The settings of AWS Lambda's Kinesis trigger, in the table that maps them to the operators' options.
      ParallelizationFactor: 'a Lambda setting', MaximumRetryAttempts: 'a Lambda setting', MaximumRecordAgeInSeconds: 'a Lambda setting',
      BisectBatchOnFunctionError: 'a Lambda setting', FunctionResponseTypes: 'a Lambda setting', ReportBatchItemFailures: 'a Lambda setting',
      BatchSize: 'a Lambda setting', MaximumBatchingWindowInSeconds: 'a Lambda setting', StartingPosition: 'a Lambda setting',
      // The AWS KCL's callbacks and settings, in the table that maps them to kinsumer's ("Moving from the KCL").
      ...Object.fromEntries([
        'initialize', 'InitializationInput', 'ProcessRecordsInput', 'prepareCheckpoint', 'leaseLost', 'LeaseLostInput', 'shardEnded', 'ShardEndedInput',
        'shutdownRequested', 'ShutdownRequestedInput', 'startGracefulShutdown', 'workerIdentifier', 'initialPositionInStream', 'failoverTimeMillis',
        'maxRecords', 'idleTimeBetweenReadsInMillis', 'shardSyncIntervalMillis', 'MetricsConfig',
      ].map((name) => [name, 'a KCL callback or setting'])),
      TumblingWindowInSeconds: 'a Lambda setting', FilterCriteria: 'a Lambda setting',
      // The package's own metadata and the TypeScript settings its readers have (README, The package).
      module: 'a package.json and tsconfig value', commonjs: 'a tsconfig value', moduleResolution: 'a tsconfig option', node10: 'a tsconfig value',
      exports: 'a package.json field', typesVersions: 'a package.json field', sourcesContent: 'a source map field',
      tsx: 'the TypeScript runner the examples use',
      // The AWS SDK's warning on Node 20 and the variable that silences it (README, Quick start).
      NodeVersionSupportWarning: 'an AWS SDK warning', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'an AWS SDK environment variable',
    };
    const known = (name: string) => declared.has(name) || peers.has(name) || peers.has(`${name}Command`) || name in NOT_API
      // Environment variables the shipped code reads (by name).
      || (/^[A-Z][A-Z0-9_]+$/.test(name) && code.includes(`'${name}'`));
    const spans = [...readme.replace(/```[\s\S]*?```/g, '').matchAll(/`([^`\n]+)`/g)].map((m) => m[1] ?? '')
      // Shell commands, paths and IAM actions are not code names.
      .filter((span) => !/^(npm|npx|kinsumer) |--|\/|^\w+:\w/.test(span));
    const unknown = new Set<string>();
    for (const span of spans) {
      // Identifiers, but not placeholders (<app>), a member access's receiver (consumer.stop) or parts of dashed words.
      for (const [, name = ''] of span.replace(/<\w+>\w*/g, '').matchAll(/(?<![\w.$:-])([A-Za-z_]\w*\$?)(?![\w.-])/g)) {
        if (!known(name)) unknown.add(name);
      }
    }
    expect([...unknown]).to.deep.equal([]);
  });
});

// `npm run docs` as a reader meets it: the module names in the breadcrumbs, the home page's title.
describe('the API reference (typedoc)', function () {
  this.timeout(300_000);
  let out: string;

  before(async () => {
    out = await mkdtemp(join(tmpdir(), 'kinsumer-docs-'));
    await sh('npx', ['--no-install', 'typedoc', '--out', join(out, 'html'), '--json', join(out, 'api.json')], process.cwd());
  });

  after(async () => {
    if (out !== undefined) await rm(out, { recursive: true, force: true });
  });

  it("names its modules as they are imported ('kinsumer', 'kinsumer/testing'), not after their files", async () => {
    const api = JSON.parse(await readFile(join(out, 'api.json'), 'utf8')) as { name: string; children: { name: string }[] };
    expect(api.name).to.equal('kinsumer');
    expect(api.children.map((module) => module.name)).to.deep.equal(['kinsumer', 'kinsumer/testing']);
  });

  it('shows the title once on the home page (the README brings its own heading)', async () => {
    const home = await readFile(join(out, 'html', 'index.html'), 'utf8');
    expect(home.match(/<h1[\s>]/g)).to.have.length(1);
  });

  it('keeps the inline code of a heading in the page contents (newcomer trial 4: "The demo ()", an empty `kinsumer status`), on the home page and every guide', async () => {
    const pages = [['README.md', 'index.html'], ...(await guides()).map((page) => [page, `documents/${basename(page, '.md')}.html`])];
    const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    const missing: string[] = [];
    let withCode = 0;
    for (const [page = '', html = ''] of pages) {
      const rendered = await readFile(join(out, 'html', html), 'utf8');
      const navigation = rendered.slice(rendered.indexOf('tsd-page-navigation'));
      const contents = [...navigation.matchAll(/<a href="#[^"]*"[^>]*><span>(.*?)<\/span>/g)].map((m) => (m[1] ?? '').replace(/<wbr\/>/g, ''));
      const headings = (await readFile(page, 'utf8')).replace(/```[\s\S]*?```/g, '').match(/^#{1,4} .*`.*$/gm) ?? [];
      withCode += headings.length;
      missing.push(...headings.map((h) => escape(h.replace(/^#+ /, '').replace(/`/g, ''))).filter((text) => !contents.includes(text)).map((text) => `${page}: ${text}`));
    }
    expect(withCode, 'headings with inline code').to.be.greaterThan(0);
    expect(missing).to.deep.equal([]);
  });
});
