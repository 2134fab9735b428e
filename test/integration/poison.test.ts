import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { createTables } from '../../src/index.js';
import { createStream, putRecords } from '../../src/testing/index.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';
import type { PoisonWorkerConfig, PoisonWorkerReport } from '../support/poison-worker.js';

const WORKER = fileURLToPath(new URL('../support/poison-worker.ts', import.meta.url));

// Design §9.3 with real processes: a worker that dies on one record — process.exit() in its
// handler, or SIGKILL while it handles it — restarted by the test (as a supervisor would, with the
// same clientId) gets past the record by itself: after maxDeliveries deliveries it goes to onFailure.
describe('poison that crashes the process: worker processes on kinesalite + dynalite', function () {
  this.timeout(120_000);
  const local = useLocalAws();
  const children: ChildProcess[] = [];
  // A test that fails leaves no worker behind.
  afterEach(() => { for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });

  it('process.exit() on the record, then SIGKILL while it handles it: the third delivery goes to onFailure (maxDeliveries 2); every other record is processed', async () => {
    const streamName = uniqueName('poison');
    const applicationName = uniqueName('poison');
    await createStream(local().kinesis, streamName, 1);
    await createTables({ dynamodb: local().dynamodb, applicationName });
    await putRecords(local().kinesis, streamName, Array.from({ length: 8 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    const reports: PoisonWorkerReport[] = [];
    const config = (onPoison: 'exit' | 'hang'): PoisonWorkerConfig => ({
      aws: { region: local().region, credentials: local().credentials, endpoints: local().endpoints },
      streamName, applicationName, clientId: 'worker', poison: 'r3', onPoison, maxDeliveries: 2,
      // Commits far apart: the acks of r0..r2 are not written before r3 kills the process.
      timings: { throttleDelayMs: 200, commitFrequencyMs: 2500, shardCheckFrequencyMs: 500, leaderActionFrequencyMs: 1000, leaseTtlMs: 3000, shutdownTimeoutMs: 3000 },
    });
    const start = (onPoison: 'exit' | 'hang'): { child: ChildProcess; exited: Promise<number | null> } => {
      const child = fork(WORKER, [JSON.stringify(config(onPoison))], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      children.push(child);
      child.on('message', (message: PoisonWorkerReport) => {
        reports.push(message);
        if (onPoison === 'hang' && message.type === 'handling' && message.data === 'r3') child.kill('SIGKILL');
      });
      return { child, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
    };

    // The supervisor: a new process with the same clientId as soon as the old one is gone.
    expect(await start('exit').exited, 'process.exit(1) in the handler').to.equal(1);
    expect(await start('hang').exited, 'SIGKILLed while handling').to.equal(null);
    const last = start('exit');
    const processed = () => new Set(reports.filter((r) => r.type === 'processed').map((r) => r.data));
    await eventually(() => processed().size === 7 && reports.some((r) => r.type === 'dead-letter'), 'r3 dead-lettered and the rest processed', 60_000);
    last.child.send('stop');
    expect(await last.exited).to.equal(0);

    const calls = reports.filter((r) => r.type === 'handling' && r.data === 'r3').map((r) => (r.type === 'handling' ? r.deliveryCount : 0));
    expect(calls, 'r3 handed to a handler twice: deliveryCount 1, then 2').to.deep.equal([1, 2]);
    expect(reports.filter((r) => r.type === 'dead-letter')).to.deep.equal([{ type: 'dead-letter', data: 'r3', deliveryCount: 3, error: 'TooManyDeliveriesError' }]);
    expect([...processed()].sort()).to.deep.equal(['r0', 'r1', 'r2', 'r4', 'r5', 'r6', 'r7']);
  });
});
