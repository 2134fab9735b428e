// The user documentation's TypeScript (README.md and the pages under docs/), checked as a reader
// would use it (newcomer trial 3: the OpenTelemetry snippet used `...options` and `tracerProvider`
// without defining them, and printed nothing in a short run). Every ```ts block is compiled as a
// module of its own, against the sources (`kinsumer` and `kinsumer/testing` mapped to src/ by
// tsconfig paths), with the repository's strict settings. A block that is a fragment on purpose
// says so in an HTML comment right before it (test/support/doc-snippets.ts lists the kinds): given
// declarations are compiled with it, an acks-every-record recipe also runs on a consumer group in
// virtual time, a run program runs as written (tsx).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import type { Kinsumer } from '../../src/index.js';
import { SOURCES, docPages, docSnippets, readerProject, type Snippet } from '../support/doc-snippets.js';
import { MemoryGroup } from '../support/memory-group.js';

const ROOT = process.cwd();

function run(command: string, args: readonly string[], cwd: string, timeoutMs = 120_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(command, args, { cwd, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

/** What each `run` snippet must print; a run snippet without an entry here fails. */
const RUNS: Readonly<Record<string, (stdout: string) => void>> = {
  'quick-start': (stdout) => {
    const lines = stdout.trim().split('\n');
    expect(lines).to.have.length(10);
    const numbers = lines.map((line) => Number(/^shardId-\d{12} \{ n: (\d+) \}$/.exec(line)?.[1]));
    expect(numbers.sort((a, b) => a - b)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  },
  opentelemetry: (stdout) => {
    // The metrics reach the exporter with their final values (the shutdown's export), and every handler call is a span.
    for (const metric of ['kinsumer.records.delivered', 'kinsumer.records.acked', 'kinsumer.checkpoints.written']) expect(stdout).to.contain(`name: '${metric}'`);
    const lastAcked = stdout.slice(stdout.lastIndexOf("name: 'kinsumer.records.acked'")).split('descriptor:')[0] ?? '';
    expect([...lastAcked.matchAll(/value: (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0), 'records acked, summed over the shards').to.equal(100);
    expect(stdout.split("name: 'process events'").length - 1).to.equal(100);
    // One export shows the client running (newcomer trial 4: exported only after stop(), it read
    // "0 leases held"): both leases held, each shard's lag.
    const exports = (name: string) => stdout.split(`name: '${name}'`).slice(1).map((block) => block.split('descriptor:')[0] ?? '');
    const values = (block: string) => [...block.matchAll(/value: (\d+)/g)].map((m) => Number(m[1]));
    expect(exports('kinsumer.leases.held').map((block) => values(block).reduce((sum, v) => sum + v, 0)), 'leases held, per export').to.include(2);
    expect(exports('kinsumer.shard.millis_behind_latest').map((block) => values(block).length), 'lag series, per export').to.include(2);
  },
  'testing-kit': (stdout) => expect(stdout.trim()).to.equal(''),
};

/**
 * The snippet as a module the test imports: its imports (the package mapped to the sources) and
 * its body in a function of `consumer` and the other names it was given (async no-ops).
 */
function recipeModule(snippet: Snippet): string {
  const lines = snippet.code.split('\n');
  const imports = lines.filter((l) => l.startsWith('import '));
  if (imports.some((l) => !/ from '[^']+';$/.test(l))) throw new Error(`${snippet.document}:${snippet.line}: write each import of a recipe on one line`);
  const body = lines.filter((l) => !l.startsWith('import ')).join('\n');
  const names = [...snippet.given.matchAll(/declare function (\w+)/g)].map((m) => m[1] ?? '');
  const mapped = imports.map((l) => l.replace(/ from '(kinsumer(?:\/testing)?)';$/, (_, name: keyof typeof SOURCES) => ` from '${pathToFileURL(SOURCES[name]).href}';`));
  return [...mapped, `export default function (consumer: any, given: any): void {`, `  const { ${names.join(', ')} } = given;`, body, '}', ''].join('\n');
}

/** Runs a recipe on a group of one client on two shards, in virtual time; resolves once every record put is acked. */
async function everyRecordAcked(module: string, dir: string, names: readonly string[], limitMs = 5 * 60_000): Promise<void> {
  const file = join(dir, `recipe-${Math.random().toString(36).slice(2)}.ts`);
  await writeFile(file, module);
  const group = new MemoryGroup(2);
  const put = group.stream.putRecords(Array.from({ length: 40 }, (_, n) => ({
    partitionKey: `k${n % 8}`, data: JSON.stringify({ n, type: n % 3 === 0 ? 'refund' : 'order', amount: n }),
  })));
  const last = new Map(put.map((p) => [p.shardId, p.sequenceNumber]));
  // The group's own subscriber acks nothing: only the recipe can.
  const member = group.join('recipe', { ack: () => false, keepFailure: true });
  const recipe = (await import(pathToFileURL(file).href) as { default: (consumer: Kinsumer, given: object) => void }).default;
  recipe(member.kinsumer, Object.fromEntries(names.map((name) => [name, () => Promise.resolve()])));
  try {
    await group.scheduler.until(() => [...last].every(([shardId, sequenceNumber]) => {
      const checkpoint = group.checkpoints.rows().find((r) => r.shardId === shardId)?.checkpoint;
      return checkpoint?.type === 'position' && checkpoint.position.sequenceNumber === sequenceNumber;
    }), 'every record to be acked (both checkpoints at their last record)', limitMs, 500);
    expect(member.failure).to.equal(undefined);
  } finally {
    let stopped = false;
    void member.kinsumer.stop().catch(() => undefined).finally(() => { stopped = true; });
    await group.scheduler.until(() => stopped, 'the stop', 120_000);
  }
}

describe("the documentation's TypeScript snippets (README.md and docs/*.md: compiled; the runnable ones run)", function () {
  this.timeout(300_000);
  let dir: string;
  let all: Snippet[];
  /** tsc's errors by snippet file, as lines of their pages. */
  const errors = new Map<string, string[]>();

  before(async () => {
    // Throws where a doc-test comment does not sit right before a ```ts block.
    all = docSnippets();
    dir = await readerProject('kinsumer-readme-', all.map((s) => s.file));
    for (const snippet of all) await writeFile(join(dir, snippet.file), `${snippet.given}\n${snippet.code}\nexport {};\n`);
    const { stdout } = await run(process.execPath, [resolve(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], dir);
    for (const [, file = '', line = '0', rest = ''] of stdout.matchAll(/^(snippet-\d+\.ts)\((\d+),\d+\): (.*)$/gm)) {
      const snippet = all.find((s) => s.file === file);
      const pageLine = (snippet?.line ?? 0) + Number(line) - 1 - (snippet === undefined || snippet.given === '' ? 1 : snippet.given.split('\n').length);
      errors.set(file, [...(errors.get(file) ?? []), `${snippet?.document ?? '?'}:${pageLine}: ${rest}`]);
    }
    const unplaced = stdout.split('\n').filter((l) => l.includes('error TS') && !/^snippet-\d+\.ts\(/.test(l));
    expect(unplaced, 'errors outside the snippets').to.deep.equal([]);
  });

  after(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('has snippets, each compiled; fragments are few and say what they are given', () => {
    expect(all.length).to.be.at.least(8);
    const fragments = all.filter((s) => s.mode === 'given' || s.mode === 'acks-every-record');
    expect(fragments.every((s) => s.given.includes('declare '))).to.equal(true);
    expect(fragments.length, 'fragments (compiled with declarations) stay the exception').to.be.below(all.length);
  });

  it('the README\'s prose fits 80 columns (code blocks, tables and comments may be wider)', () => {
    let code = false;
    const wide = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').flatMap((line, i) => {
      if (line.startsWith('```')) code = !code;
      return code || line.startsWith('```') || line.startsWith('|') || line.startsWith('<!--') || line.length <= 80 ? [] : [`README.md:${i + 1}: ${line.length} columns`];
    });
    expect(wide).to.deep.equal([]);
  });

  it('every ```ts block compiles (strict, NodeNext, against the sources)', () => {
    const failures = all.flatMap((s) => errors.get(s.file) ?? []);
    expect(failures).to.deep.equal([]);
  });

  describe('the runnable snippets, run as written on the local servers', () => {
    for (const name of Object.keys(RUNS)) {
      it(`runs '${name}' to its end, exit 0, and prints what it should`, async function () {
        const snippet = all.find((s) => s.mode === 'run' && s.name === name);
        if (snippet === undefined) throw new Error(`no <!-- doc-test run ${name} --> snippet in ${docPages().join(', ')}`);
        const result = await run(process.execPath, ['--import', 'tsx', snippet.file], dir);
        expect(result.code, `${snippet.document}:${snippet.line}\n${result.stdout}\n${result.stderr}`).to.equal(0);
        RUNS[name]?.(result.stdout);
      });
    }

    it('every run snippet has its expectations here', () => {
      expect(all.filter((s) => s.mode === 'run').map((s) => s.name).filter((name) => name === undefined || !(name in RUNS))).to.deep.equal([]);
    });
  });

  describe('the recipes ack every record (a consumer group in virtual time)', () => {
    it('each acks-every-record snippet leaves every record acked', async () => {
      const recipes = all.filter((s) => s.mode === 'acks-every-record');
      expect(recipes.length).to.be.at.least(4);
      for (const snippet of recipes) {
        const names = [...snippet.given.matchAll(/declare function (\w+)/g)].map((m) => m[1] ?? '');
        try {
          await everyRecordAcked(recipeModule(snippet), dir, names);
        } catch (error) {
          throw new Error(`${snippet.document}:${snippet.line}: ${(error as Error).message}`, { cause: error });
        }
      }
    });

    it('the check can fail: a filter() before processRecords drops records nobody acks, and the shard stalls', async () => {
      const stalling: Snippet = {
        document: '(this test)', line: 0, mode: 'acks-every-record', name: undefined, file: '', given: '',
        code: [
          "import { filter } from 'rxjs';",
          "import { processRecords } from 'kinsumer';",
          'consumer.records$.pipe(',
          "  filter((record) => record.json<{ type: string }>().type === 'order'),",
          '  processRecords(async () => undefined, { scheduler: consumer.options.scheduler }),',
          ').subscribe();',
        ].join('\n'),
      };
      let failure: unknown;
      await everyRecordAcked(recipeModule(stalling), dir, [], 60_000).catch((error: unknown) => { failure = error; });
      expect(String(failure)).to.contain('still waiting for every record to be acked');
    });
  });
});
