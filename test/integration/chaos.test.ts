import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Kinsumer, createTables, type KinsumerEvent, type KinsumerRecord } from '../../src/index.js';
import { createStream, localDynamoDbClient, localKinesisClient, putRecords } from '../../src/testing/index.js';
import type { ChaosReport } from '../chaos/report.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';
import { FAST } from '../support/memory-group.js';

/** Runs the chaos command as CI would, and resolves with its exit code and output once it exits. */
function runChaosCommand(args: readonly string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/chaos/run.ts', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}

describe('chaos run (worker processes, SIGKILL, SIGSTOP, reshards, 5 % faults)', function () {
  // 45 s of chaos, plus start, drain and the checker: about a minute and a half on 2 cores.
  this.timeout(300_000);

  it('a short run: every record acked, order and fencing kept, duplicates explained and bounded, no worker died', async () => {
    const report = join(mkdtempSync(join(tmpdir(), 'kinsumer-chaos-test-')), 'chaos-report.json');
    const { code, output } = await runChaosCommand(['--duration', '45', '--workers', '3', '--seed', '20240601', '--report', report, '--quiet']);
    const result = JSON.parse(readFileSync(report, 'utf8')) as ChaosReport;
    expect(result.violations, output).to.deep.equal([]);
    expect(result.failures, output).to.deep.equal([]);
    expect(result.passed).to.equal(true);
    expect(code, output).to.equal(0);
    expect(result.counts.produced).to.be.greaterThan(0);
    expect(result.counts.lost).to.equal(0);
    expect(result.counts.consumedUnique).to.equal(result.counts.produced);
    for (const kind of ['kill', 'zombie', 'split', 'merge'] as const) expect(result.actionsDone[kind], kind).to.be.at.least(1);
    // The faults really reached kinsumer: injected on both services, retried by kinsumer itself.
    expect(result.faults.kinesis.totalFaults).to.be.greaterThan(0);
    expect(result.faults.dynamodb.totalFaults).to.be.greaterThan(0);
    expect(result.retries).to.be.greaterThan(0);
  });

  it('refuses bad arguments with exit code 2', async () => {
    const { code, output } = await runChaosCommand(['--workers', '7']);
    expect(code).to.equal(2);
    expect(output).to.contain('--workers must be 3, 4 or 5');
  });
});

describe('regressions found by the chaos run (kinesalite, dynalite, fault proxy)', function () {
  this.timeout(60_000);
  const local = useLocalAws();
  let proxies: FaultProxy[] = [];
  afterEach(async () => {
    await Promise.all(proxies.map((p) => p.stop()));
    proxies = [];
  });

  it('a transient fault while starting (DescribeTable, ListShards) is retried, not the end of the client', async () => {
    const stream = uniqueName('chaos-start');
    const applicationName = uniqueName('chaos-start');
    await createStream(local().kinesis, stream, 1);
    await createTables({ dynamodb: local().dynamodb, applicationName });
    const kinesisProxy = await startFaultProxy({ target: local().endpoints.kinesis });
    const dynamoProxy = await startFaultProxy({ target: local().endpoints.dynamodb });
    proxies.push(kinesisProxy, dynamoProxy);
    dynamoProxy.script('DescribeTable', 1, { kind: 'error', error: 'InternalServerError' });
    kinesisProxy.script('ListShards', 1, { kind: 'error', error: 'InternalFailure' });
    // One SDK attempt per call, so the injected faults reach kinsumer instead of the SDK's own retries.
    const consumer = new Kinsumer({
      ...FAST, streamName: stream, applicationName,
      kinesis: localKinesisClient(local(), { endpoint: kinesisProxy.endpoint, maxAttempts: 1 }),
      dynamodb: localDynamoDbClient(local(), { endpoint: dynamoProxy.endpoint, maxAttempts: 1 }),
    });
    const events: KinsumerEvent[] = [];
    const received: KinsumerRecord[] = [];
    let failure: unknown;
    consumer.events$.subscribe((event) => events.push(event));
    consumer.records$.subscribe({ next: (record) => { received.push(record); record.ack(); }, error: (error: unknown) => { failure = error; } });
    try {
      await putRecords(local().kinesis, stream, [{ partitionKey: 'k', data: 'after a rough start' }]);
      await eventually(() => received.length === 1 || failure !== undefined, 'the record (or the failure)', 30_000);
      expect(failure).to.equal(undefined);
      expect(new TextDecoder().decode(received[0]?.data)).to.equal('after a rough start');
      const retried = events.filter((e) => e.type === 'retrying' && e.operation === 'prepare');
      expect(retried.map((e) => (e.type === 'retrying' ? e.error.name : ''))).to.deep.equal(['KinsumerError', 'InternalFailure']);
      expect(dynamoProxy.counts().byFault).to.deep.equal({ InternalServerError: 1 });
      expect(kinesisProxy.counts().byFault).to.deep.equal({ InternalFailure: 1 });
    } finally {
      await consumer.stop();
    }
  });
});
