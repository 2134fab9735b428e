// The README's first example is a service whose Ctrl-C must be a graceful stop — also when it runs
// under `npx tsx`, as the README runs its snippets (newcomer trial 4, issue 34 item 1). tsx's parent
// forwards a SIGINT to its child and, when the child has not acknowledged it within 30 ms (a busy
// event loop), sends it again; the child's hidden handler (tsx's preflight.cjs) exits the process
// with 130 when a signal arrives and no listener of the application's is left. A `process.once`
// hook is gone after the first signal, so the second one ended the process while stop() was still
// releasing: no final commit, leases left to expire. Here the service (the README's block as
// written, its two clients pointed at the local servers) runs under tsx and gets two SIGINTs as
// tsx's relay sends them: the second once the first was delivered.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { createTables } from '../../src/index.js';
import { decodeCheckpointRow } from '../../src/dynamodb/checkpoint-row.js';
import { createStream, putRecords } from '../../src/testing/index.js';
import { SOURCES, docSnippets, namedSnippet, readerProject } from '../support/doc-snippets.js';
import { eventually, useLocalAws } from '../support/local.js';

const TSX = resolve('node_modules/.bin/tsx');

/**
 * The README's block as a program on the local servers: only its two `new …Client({})` change (a
 * client for AWS, which the block builds, needs a region and credentials; kinesalite also needs
 * HTTP/1.1), and `handle` is given, as the doc test gives it. Two probes for the test come first:
 * the process writes its pid (tsx runs it in a child), and a `once` listener writes a file when the
 * first SIGINT reached the program's JavaScript (gone after it, it keeps no signal handling alive).
 */
function service(code: string): string {
  const local = { KinesisClient: 'localKinesisClient(LOCAL_AWS)', DynamoDBClient: 'localDynamoDbClient(LOCAL_AWS)' };
  let program = code;
  for (const [client, replacement] of Object.entries(local)) {
    const call = `new ${client}({})`;
    expect(program.split(call), `the first example builds one ${call}`).to.have.length(2);
    program = program.replace(call, replacement);
  }
  return [
    "import { writeFileSync } from 'node:fs';",
    "writeFileSync('service.pid', String(process.pid));",
    "process.once('SIGINT', () => writeFileSync('sigint-handled', ''));",
    `import { localDynamoDbClient, localKinesisClient } from '${pathToFileURL(SOURCES['kinsumer/testing']).href}';`,
    "const LOCAL_AWS = JSON.parse(process.env.LOCAL_AWS ?? '');",
    'const handle = async (_data: Uint8Array): Promise<void> => undefined;',
    program,
  ].join('\n');
}

describe("the README's first example stops gracefully on Ctrl-C under tsx", function () {
  this.timeout(120_000);
  const local = useLocalAws();
  let dir: string | undefined;

  after(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('two SIGINTs (tsx re-sends one the service did not acknowledge in 30 ms): stop() completes, every lease released at its last record, exit 0', async () => {
    const snippet = namedSnippet(docSnippets(), 'first-example');
    // The names the block uses: stream `events`, application `billing` (its tables must exist).
    await createStream(local().kinesis, 'events', 2);
    const put = await putRecords(local().kinesis, 'events', Array.from({ length: 20 }, (_, n) => ({ partitionKey: `k${n}`, data: JSON.stringify({ n }) })));
    const last = new Map(put.map((p) => [p.shardId, p.sequenceNumber]));
    await createTables({ dynamodb: local().dynamodb, applicationName: 'billing' });
    dir = await readerProject('kinsumer-shutdown-', ['service.ts']);
    await writeFile(join(dir, 'service.ts'), service(snippet.code));

    const config = { region: local().region, endpoints: local().endpoints, credentials: local().credentials };
    const tsx = spawn(TSX, ['service.ts'], {
      cwd: dir, stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', LOCAL_AWS: JSON.stringify(config) },
    });
    let output = '';
    tsx.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    tsx.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    let exitCode: number | null | undefined;
    tsx.on('exit', (code, signal) => { exitCode = code ?? (signal === null ? null : -1); });
    const rows = async () => ((await local().dynamodb.send(new ScanCommand({ TableName: 'billing_checkpoints', ConsistentRead: true }))).Items ?? [])
      .map((item) => decodeCheckpointRow(item));
    const atLastRecord = (row: Awaited<ReturnType<typeof rows>>[number]) =>
      row.checkpoint?.type === 'position' && row.checkpoint.position.sequenceNumber === last.get(row.shardId);
    let pid: number | undefined;
    try {
      const pidFile = join(dir, 'service.pid');
      pid = await eventually(() => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8')), `the service's pid (output: ${output})`, 30_000);
      const service = pid;
      const handled = join(dir, 'sigint-handled');
      // Running: both leases held, every record handled and checkpointed.
      await eventually(async () => {
        const now = await rows();
        return now.length === 2 && now.every((row) => row.ownerId !== undefined && atLastRecord(row));
      }, `both shards held and read to their last record (output: ${output})`, 60_000);

      // As tsx's relay: the second SIGINT once the program handled the first (its acknowledgement
      // was late), while stop() runs. Both in one synchronous block: the local servers run in this
      // process, so stop() gets no answer from DynamoDB, and cannot end, before the second signal.
      const deadline = Date.now() + 10_000;
      process.kill(service, 'SIGINT');
      while (!existsSync(handled)) {
        if (Date.now() > deadline) throw new Error(`the service did not handle the first SIGINT within 10 s (output: ${output})`);
      }
      process.kill(service, 'SIGINT');

      await eventually(() => exitCode !== undefined, `the service to exit (output: ${output})`, 60_000);
      const after = await rows();
      const clients = (await local().dynamodb.send(new ScanCommand({ TableName: 'billing_clients', ConsistentRead: true }))).Items ?? [];
      expect({
        exitCode,                                                                  // 130: tsx's hidden handler ended it
        leased: after.filter((row) => row.ownerId !== undefined).map((row) => row.shardId),
        notAtLastRecord: after.filter((row) => !atLastRecord(row)).map((row) => row.shardId),
        clientRows: clients.length,                                                // stop() leaves the group last
      }, output).to.deep.equal({ exitCode: 0, leased: [], notAtLastRecord: [], clientRows: 0 });
    } finally {
      if (exitCode === undefined) {
        tsx.kill('SIGKILL');
        if (pid !== undefined) process.kill(pid, 'SIGKILL');
      }
    }
  });
});
