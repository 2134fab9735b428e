import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { eventually } from '../support/local.js';

const run = promisify(execFile);

/** Runs `examples/<name>.ts` as its own process (as a reader would) and returns what it printed. */
async function example(name: string): Promise<string> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', `examples/${name}.ts`], {
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    timeout: 90_000,
  });
  return stdout;
}

// Each example starts its own local servers, consumes a stream it filled and exits 0 on its own
// (a non-zero exit or a hang fails the test). They are type-checked by test/static.test.ts.
describe('examples/ run against the local servers', function () {
  this.timeout(120_000);

  it('basic: every record handled once (the sum of the payloads matches)', async () => {
    // 200 records with n = 0..199: sum 19900 only if each was handled exactly once.
    expect(await example('basic')).to.contain('basic: 200 records handled, sum of n = 19900');
  });

  it('batches: processBatches puts all records in per-shard batches of at most 100', async () => {
    const out = await example('batches');
    const match = /batches: (\d+) records in (\d+) batches \(largest (\d+)\)/.exec(out);
    expect(match, out).to.not.equal(null);
    const [, records, batches, largest] = match!.map(Number);
    expect(records).to.equal(1000);
    expect(batches).to.be.at.least(10);
    expect(largest).to.be.at.most(100);
  });

  it("out-of-order: processRecords ordering 'partitionKey' acks all records, none out of order within its key, each shard checkpointed at its last record", async () => {
    const out = await example('out-of-order');
    const match = /out-of-order: (\d+) records, (\d+) finished after a later one, (\d+) out of order within their key, (\d+) of (\d+) shards checkpointed at their last record/.exec(out);
    expect(match, out).to.not.equal(null);
    const [, records, , keyOrderBroken, complete, shards] = match!.map(Number);
    expect(records).to.equal(300);
    expect(keyOrderBroken).to.equal(0);
    expect([complete, shards]).to.deep.equal([2, 2]);
  });

  it('dead-letter: the poison record ends up on the dead-letter stream after 3 attempts, every other record is processed once, the checkpoints move past it', async () => {
    const out = await example('dead-letter');
    const match = /dead-letter: (\d+) records, (\d+) processed \(sum of n = (\d+)\), (\d+) dead-lettered; dead-letter stream holds: (\w+): .* after (\d+) attempts; (\d+) of (\d+) shards checkpointed at their last record/.exec(out);
    expect(match, out).to.not.equal(null);
    const [, records, processed, sum, deadLettered, , attempts, complete, shards] = match!.map(Number);
    // 200 good records with n = 0..199: sum 19900 only if each was handled exactly once.
    expect([records, processed, sum, deadLettered, attempts]).to.deep.equal([201, 200, 19900, 1, 3]);
    expect(match![5]).to.equal('TypeError');
    expect([complete, shards]).to.deep.equal([2, 2]);
  });

  it('graceful-shutdown: SIGTERM stops, releasing both leases with their final checkpoint', async () => {
    expect(await example('graceful-shutdown')).to.contain('graceful-shutdown: SIGTERM: 100 records handled, 2 leases released');
  });

  it('metrics: Prometheus fed by status() (gauges at each scrape) and events$ (counters): delivered = acked = 200, checkpoints written, both leases held while running and none after stop()', async () => {
    const out = await example('metrics');
    const [running = '', stopped = ''] = out.split('# after stop()');
    const total = (text: string, name: string) => [...text.matchAll(new RegExp(`^${name}\\{shard="[^"]+"\\} (\\d+)$`, 'gm'))].reduce((sum, m) => sum + Number(m[1]), 0);
    expect(running).to.match(/^kinsumer_leases_held 2$/m);
    expect([...running.matchAll(/^kinsumer_shard_pending\{shard="[^"]+"\} 0$/gm)]).to.have.length(2);
    expect([...running.matchAll(/^kinsumer_shard_millis_behind_latest\{shard="[^"]+"\} \d+$/gm)]).to.have.length(2);
    expect(total(stopped, 'kinsumer_records_delivered_total')).to.equal(200);
    expect(total(stopped, 'kinsumer_records_acked_total')).to.equal(200);
    expect(total(stopped, 'kinsumer_checkpoints_written_total')).to.be.at.least(2);
    expect(stopped).to.match(/^kinsumer_delivery_seconds_count 200$/m);
    expect(stopped).to.match(/^kinsumer_events_total\{type="lease-acquired"\} 2$/m);
    expect(stopped).to.match(/^kinsumer_leases_held 0$/m);
  });

  it('health: /healthz and /readyz answer 200 once running; paused (SIGUSR2) /readyz is 503 saying why while /healthz stays 200; resumed, ready again; SIGTERM stops it', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/health.ts'], {
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', PORT: '0' },
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { out += chunk.toString(); });
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const probe = async (path: string): Promise<{ code: number; body: Record<string, unknown> }> => {
      const url = /listening on (http:\S+)/.exec(out)?.[1];
      if (url === undefined) throw new Error('not listening yet');
      const response = await fetch(`${url}${path}`);
      return { code: response.status, body: await response.json() as Record<string, unknown> };
    };
    try {
      const ready = await eventually(async () => { const r = await probe('/readyz'); return r.code === 200 && r; }, `ready (output: ${out})`, 60_000);
      expect(ready.body).to.deep.equal({ ready: true, state: 'running', shards: ready.body.shards, members: 1 });
      await eventually(async () => (await probe('/readyz')).body.shards === 2, 'both shards held', 30_000);
      expect(await probe('/healthz')).to.deep.equal({ code: 200, body: { status: 'ok', state: 'running' } });

      child.kill('SIGUSR2');
      const paused = await eventually(async () => { const r = await probe('/readyz'); return r.code === 503 && r; }, 'not ready once paused', 30_000);
      expect(paused.body).to.deep.equal({ ready: false, state: 'paused', reason: 'paused: holding its leases, reading nothing until resume()', shards: 2, members: 1 });
      expect(await probe('/healthz')).to.deep.equal({ code: 200, body: { status: 'ok', state: 'paused' } });

      child.kill('SIGUSR2');
      await eventually(async () => (await probe('/readyz')).code === 200, 'ready again once resumed', 30_000);
      child.kill('SIGTERM');
      expect(await exit, out).to.equal(0);
      expect(out).to.contain('health: stopped');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
