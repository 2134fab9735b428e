import { spawn } from 'node:child_process';
import { expect } from 'chai';
import { createStream, putRecords } from '../../src/testing/index.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';

const BIN = ['--import', 'tsx', 'src/cli/main.ts'];

describe('CLI: the bin in a pipe (kinesalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  it('tail ends quietly with exit 0 when the reader closes the pipe (`kinsumer tail | head -1`)', async () => {
    const stream = uniqueName('pipe-tail');
    await createStream(local().kinesis, stream, 1);
    await putRecords(local().kinesis, stream, Array.from({ length: 50 }, (_, i) => ({ partitionKey: 'k', data: `record ${i}` })));
    const child = spawn(process.execPath, [...BIN, 'tail', '--stream', stream, '--from', 'TRIM_HORIZON', '--endpoint', local().endpoints.kinesis]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await eventually(() => stdout.includes('record 0'), `the first record (stderr: ${stderr})`, 30_000);
      // As `head` does after its line: the read end goes away; later writes hit EPIPE.
      child.stdout.destroy();
      await putRecords(local().kinesis, stream, [{ partitionKey: 'k', data: 'after the reader left' }]);
      expect(await exit, stderr).to.equal(0);
      expect(stderr).not.to.contain('EPIPE');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
