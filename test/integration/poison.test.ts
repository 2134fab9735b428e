import { type ChildProcess, fork } from 'node:child_process';
import { CreateTableCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { createTables } from '../../src/index.js';
import { type LocalAws, createStream, putRecords } from '../../src/testing/index.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';
import { TIERS, skipUnless } from '../support/tiers.js';
import type { PoisonWorkerConfig, PoisonWorkerReport } from '../support/poison-worker.js';

const WORKER = fileURLToPath(new URL('../support/poison-worker.ts', import.meta.url));

// Design §9.3 with real processes: a worker that dies on one record — process.exit() in its
// handler, or SIGKILL while it handles it — restarted by the test (as a supervisor would, with the
// same clientId) gets past the record by itself: after maxDeliveries deliveries it goes to onFailure.
const children: ChildProcess[] = [];
// A test that fails leaves no worker behind.
afterEach(() => { for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });

function forkWorker(config: PoisonWorkerConfig, reports: PoisonWorkerReport[], onReport: (child: ChildProcess, report: PoisonWorkerReport) => void = () => undefined) {
  const child = fork(WORKER, [JSON.stringify(config)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  children.push(child);
  child.on('message', (message: PoisonWorkerReport) => {
    reports.push(message);
    onReport(child, message);
  });
  return { child, exited: new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code))) };
}

/** A stream of `count` records r0, r1, … and the tables of a new application, on `local`. */
async function setUp(local: LocalAws, count: number) {
  const streamName = uniqueName('poison');
  const applicationName = uniqueName('poison');
  await createStream(local.kinesis, streamName, 1);
  await createTables({ dynamodb: local.dynamodb, applicationName });
  await putRecords(local.kinesis, streamName, Array.from({ length: count }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
  return { streamName, applicationName, aws: { region: local.region, credentials: local.credentials, endpoints: local.endpoints } };
}

// Commits far apart: the acks of the records before the poison are not written before it kills the process.
const TIMINGS = { throttleDelayMs: 200, commitFrequencyMs: 2500, shardCheckFrequencyMs: 500, leaderActionFrequencyMs: 1000, leaseTtlMs: 3000, shutdownTimeoutMs: 3000 };

describe('poison that crashes the process: worker processes on kinesalite + dynalite', function () {
  this.timeout(120_000);
  const local = useLocalAws();

  it('process.exit() on the record, then SIGKILL while it handles it: the third delivery goes to onFailure (maxDeliveries 2); every other record is processed', async () => {
    const reports: PoisonWorkerReport[] = [];
    const config = { ...await setUp(local(), 8), clientId: 'worker', poison: 'r3', maxDeliveries: 2, timings: TIMINGS };
    const start = (onPoison: 'exit' | 'hang') => forkWorker({ ...config, onPoison }, reports, (child, message) => {
      if (onPoison === 'hang' && message.type === 'handling' && message.data === 'r3') child.kill('SIGKILL');
    });

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

const tier = TIERS.find((t) => t.options.dynamodb === 'dynamodb-local');

describe('dead letters exactly once: worker processes on kinesalite + DynamoDB Local', function () {
  this.timeout(180_000);
  if (tier !== undefined) skipUnless(tier);
  const local = useLocalAws({ kinesis: 'kinesalite', dynamodb: 'dynamodb-local' });

  it('two processes exit on r1; the third dead-letters it with { writes }, committed with its checkpoint: one item, written once', async () => {
    const setup = await setUp(local(), 4);
    const deadLetters = `${setup.applicationName}_dead_letters`;
    await local().dynamodb.send(new CreateTableCommand({
      TableName: deadLetters, BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'record', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'record', KeyType: 'HASH' }],
    }));
    const reports: PoisonWorkerReport[] = [];
    const config: PoisonWorkerConfig = { ...setup, clientId: 'worker', poison: 'r1', onPoison: 'exit', maxDeliveries: 2, deadLetters, timings: TIMINGS };
    expect(await forkWorker(config, reports).exited).to.equal(1);
    expect(await forkWorker(config, reports).exited).to.equal(1);
    const last = forkWorker(config, reports);
    const written = async () => (await local().dynamodb.send(new ScanCommand({ TableName: deadLetters, ConsistentRead: true }))).Items?.map((item) => [item.record?.S, Number(item.written?.N)]);
    await eventually(async () => (await written())?.length === 1 && reports.some((r) => r.type === 'processed' && r.data === 'r3'), 'the dead letter and r3', 60_000);
    last.child.send('stop');
    expect(await last.exited).to.equal(0);
    expect(await written()).to.deep.equal([['r1', 1]]);
    expect(reports.filter((r) => r.type === 'dead-letter').map((r) => (r.type === 'dead-letter' ? [r.data, r.deliveryCount] : []))).to.deep.equal([['r1', 3]]);
  });
});
