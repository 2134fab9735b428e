// `kinsumer status --watch` as a user runs it: the bin as its own process against the local
// servers, its output in a pipe (one block per refresh) and on a terminal (redrawn in place; the
// terminal is a pseudo-terminal from util-linux `script`).
import { type ChildProcess, spawn } from 'node:child_process';
import { expect } from 'chai';
import { CLEAR_SCREEN } from '../../../src/cli/commands/status.js';
import { createTables } from '../../../src/index.js';
import { createStream } from '../../../src/testing/index.js';
import { endpointArgs } from '../../support/cli.js';
import { eventually, uniqueName, useLocalAws } from '../../support/local.js';

const BIN = ['--import', 'tsx', 'src/cli/main.ts'];
const ENV = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };

/** A process and what it printed so far; `exit` settles with its exit code. */
function started(child: ChildProcess): { output: () => string; exit: Promise<number | null> } {
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  return { output: () => output, exit: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
}

const count = (text: string, part: string): number => text.split(part).length - 1;

describe('CLI: status --watch, run as a process (kinesalite + dynalite)', function () {
  this.timeout(90_000);
  const local = useLocalAws();

  async function setup(): Promise<string[]> {
    const stream = uniqueName('watch');
    const app = uniqueName('watch-app');
    await createStream(local().kinesis, stream, 2);
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    return ['status', '--stream', stream, '--app', app, ...endpointArgs(local()), '--watch', '--interval', '0.2'];
  }

  it('in a pipe: a new block at each refresh, blank-line separated, no terminal codes; SIGINT ends it with exit 0', async () => {
    const args = await setup();
    const child = spawn(process.execPath, [...BIN, ...args], { env: ENV });
    const run = started(child);
    try {
      await eventually(() => count(run.output(), 'shards (2 open)') >= 3, 'three refreshes', 60_000);
      child.kill('SIGINT');
      expect(await run.exit, run.output()).to.equal(0);
      const out = run.output();
      expect(out).not.to.contain('\u001b[');
      const blocks = out.split(/\n\n(?=read at )/);
      expect(blocks.length).to.be.at.least(3);
      // Each block says when it was read and how often, then the group.
      for (const block of blocks) expect(block).to.match(/^read at \d\d:\d\d:\d\d, every 0\.2 s, Ctrl-C to stop\nstream watch-\d+-\d+, app watch-app-\d+-\d+: 2 shards \(2 open\)/);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('in a pipe with --json: one JSON document per line and refresh', async () => {
    const args = await setup();
    const child = spawn(process.execPath, [...BIN, ...args, '--json'], { env: ENV });
    const run = started(child);
    try {
      await eventually(() => count(run.output(), '\n') >= 2, 'two refreshes', 60_000);
      child.kill('SIGINT');
      expect(await run.exit, run.output()).to.equal(0);
      const lines = run.output().trim().split('\n');
      const documents = lines.map((line) => JSON.parse(line) as { at: string; shards: unknown[] });
      expect(documents.length).to.be.at.least(2);
      for (const document of documents) expect(document.shards).to.have.length(2);
      expect(new Set(documents.map((d) => d.at)).size, 'each line is a new read').to.equal(documents.length);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('on a terminal: clears the screen and redraws in place at each refresh', async () => {
    const args = await setup();
    const command = [process.execPath, ...BIN, ...args].map((part) => `'${part.replace(/'/g, "'\\''")}'`).join(' ');
    // `script` gives the command a pseudo-terminal (isTTY); its own group, so the signal reaches both.
    const child = spawn('script', ['-qfec', command, '/dev/null'], { env: ENV, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const run = started(child);
    const group = child.pid;
    try {
      await eventually(() => count(run.output(), CLEAR_SCREEN) >= 3, 'three redraws', 60_000);
      if (group !== undefined) process.kill(-group, 'SIGINT');
      expect(await run.exit, run.output()).to.equal(0);
      const frames = run.output().split(CLEAR_SCREEN).slice(1);
      expect(frames.length).to.be.at.least(3);
      for (const frame of frames) expect(frame).to.match(/^read at \d\d:\d\d:\d\d, every 0\.2 s, Ctrl-C to stop\r?\nstream watch-\d+-\d+, app watch-app-\d+-\d+: 2 shards \(2 open\)/);
    } finally {
      if (group !== undefined) try { process.kill(-group, 'SIGKILL'); } catch { /* already gone */ }
    }
  });
});
