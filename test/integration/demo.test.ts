// The `npm start` demo, run as a user runs it: a child process whose output is a pipe. It starts
// its own local servers (kinesalite, dynalite) and worker processes; nothing here is mocked.
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { eventually } from '../support/local.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = 'examples/demo/main.ts';

interface Finished {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running demo: its output so far, and its end. */
function demo(command: string, args: readonly string[]): { child: ChildProcess; stdout: () => string; done: Promise<Finished> } {
  const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
  child.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  const done = new Promise<Finished>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, stdout: () => stdout, done };
}

function tempFolder(stdout: string): string {
  const match = /^temp folder (\S+) \(/m.exec(stdout);
  if (match?.[1] === undefined) throw new Error(`no temp folder line in:\n${stdout}`);
  return match[1];
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm start (the demo)', function () {
  this.timeout(240_000);

  it('in a pipe: runs to a tally with nothing lost, showing the failover and the split, in plain lines', async () => {
    const run = await demo('npm', ['start', '--', '--duration', '12']).done;
    const output = `${run.stdout}\n--- stderr ---\n${run.stderr}`;
    expect(run.code, output).to.equal(0);

    const tally = /^tally: produced (\d+), consumed unique (\d+), duplicates (\d+), lost (\d+), failover (.+)$/m.exec(run.stdout);
    expect(tally, output).to.not.equal(null);
    const [produced = 0, unique, , lost] = (tally ?? []).slice(1, 5).map(Number);
    expect(produced).to.be.greaterThan(0);
    expect(lost).to.equal(0);
    expect(unique).to.equal(produced);
    // The failover figure comes with the lease TTL it depends on (the demo's, not the default).
    expect(tally?.[5], 'failover time measured').to.match(/^[\d.]+ (ms|s) \(leaseTtlMs 3 s\)$/);
    expect(run.stdout).to.match(/^ +bounded by leaseTtlMs: 3 s in this demo, 15 s by default$/m);
    expect(run.stdout).to.contain('leaseTtlMs 3 s (default 15 s)');
    expect(run.stdout).to.match(/^result: OK, nothing lost$/m);

    // The crash and its failover, the split and the parent -> child handoff, the restart.
    expect(run.stdout).to.match(/\] SIGKILL w\d \(pid \d+\) while it held shard-\d+/);
    expect(run.stdout).to.match(/\] failover shard-\d+: w\d -> w\d, records flowing again/);
    expect(run.stdout).to.match(/\] split shard-(\d+) -> shard-\d+ \+ shard-\d+/);
    expect(run.stdout).to.match(/\] shard-\d+ finished: w\d read it to its end/);
    expect(run.stdout).to.match(/\] handoff shard-\d+ -> shard-\d+: first record on w\d/);
    expect(run.stdout).to.match(/\] restarted w\d \(pid \d+\)/);

    // A pipe gets plain status lines (no cursor movement), with every shard's owner and labelled lag,
    // no line as long as 120 characters.
    expect(run.stdout).to.not.contain('\u001b');
    const lines = run.stdout.split('\n');
    expect(lines.filter((l) => l.length >= 120)).to.deep.equal([]);
    const running = lines.filter((l) => /^\[ *[\d.]+s\] running · produced \d+ \(\d+\/s\) · consumed \d+ · duplicates \d+$/.test(l));
    expect(running.length).to.be.greaterThan(1);
    expect(run.stdout).to.match(/^ {9}shard-\d+ w\d \d+ consumed, lag \d+ records \/ [\d.]+ (ms|s)/m);

    // One clock for the whole run: the status lines' times never go back (start-up included).
    const clock = lines.flatMap((l) => /^\[ *([\d.]+)s\] (starting|running|draining|stopping|done) · /.exec(l)?.[1] ?? []).map(Number);
    expect(clock.length).to.be.greaterThan(2);
    expect(clock.filter((t, i) => i > 0 && t < (clock[i - 1] ?? 0)), `status times ${clock.join(' ')}`).to.deep.equal([]);

    // The banner's target is the summary's target, and the summary's rate is what was produced over the run.
    expect(run.stdout).to.match(/producer target 100 records\/s for 12 s/);
    const rate = /records put by the producer \((\d+)\/s average, target 100\/s\)/.exec(run.stdout);
    expect(rate, output).to.not.equal(null);
    expect(Number(rate?.[1])).to.be.within(produced / 12 * 0.9, produced / 12 * 1.1);

    // Clean teardown: the temp folder is gone.
    expect(existsSync(tempFolder(run.stdout))).to.equal(false);
  });

  it('Ctrl-C: stops the workers and the servers, removes the temp folder, exits 130', async () => {
    const running = demo(process.execPath, ['--import', 'tsx', MAIN, '--duration', '120']);
    // Wait until the workers hold the shards and the producer runs.
    await eventually(() => /\] running · produced [1-9]/.test(running.stdout()), 'the demo running', 120_000, 100);
    const pids = [...running.stdout().matchAll(/^started w\d \(pid (\d+)\)$/gm)].map((m) => Number(m[1]));
    expect(pids).to.have.length(3);
    expect(pids.every(alive)).to.equal(true);

    running.child.kill('SIGINT');
    const run = await running.done;
    const output = `${run.stdout}\n--- stderr ---\n${run.stderr}`;
    expect(run.code, output).to.equal(130);
    expect(run.stdout).to.contain('interrupted: stopping the workers and the local servers');
    expect(pids.filter(alive), 'worker processes left running').to.deep.equal([]);
    expect(existsSync(tempFolder(run.stdout))).to.equal(false);
  });

  it('--help prints the usage and exits 0; a bad option exits 2', async () => {
    const help = await demo(process.execPath, ['--import', 'tsx', MAIN, '--help']).done;
    expect(help.code).to.equal(0);
    expect(help.stdout).to.match(/^Usage: npm start -- \[--duration <seconds>\]/);
    const bad = await demo(process.execPath, ['--import', 'tsx', MAIN, '--duration', '3']).done;
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.contain('--duration must be a number of seconds, at least 10');
  });
});
