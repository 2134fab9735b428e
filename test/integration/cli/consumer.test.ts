import { expect } from 'chai';
import { asyncScheduler, firstValueFrom } from 'rxjs';
import { KinesisStream } from '../../../src/kinesis/kinesis.js';
import { ensureConsumer } from '../../../src/reading/stream-consumer.js';
import { createStream } from '../../../src/testing/index.js';
import { cli, documentedCodes } from '../../support/cli.js';
import { eventually, uniqueName, useLocalAws } from '../../support/local.js';

// `kinsumer deregister-consumer` against kinesis-local (kinesalite has no stream consumers).
describe('CLI: deregister-consumer (kinesis-local)', function () {
  this.timeout(120_000);
  const local = useLocalAws({ kinesis: 'kinesis-local', dynamodb: 'dynalite' });

  async function registered(consumerName: string): Promise<{ stream: string; fanOut: KinesisStream['fanOut'] }> {
    const stream = uniqueName('clic');
    await createStream(local().kinesis, stream, 1);
    const { fanOut } = new KinesisStream(local().kinesis, { streamName: stream });
    await firstValueFrom(ensureConsumer({ port: fanOut, consumerName, scheduler: asyncScheduler, emit: () => undefined }));
    return { stream, fanOut };
  }

  const gone = (fanOut: KinesisStream['fanOut'], name: string) => eventually(
    async () => (await firstValueFrom(fanOut.describeConsumer(name))) === undefined, `consumer ${name} gone`,
  );

  it('deregisters the consumer named by --consumer-name', async () => {
    const { stream, fanOut } = await registered('billing-efo');
    const out = await cli(['deregister-consumer', '--stream', stream, '--consumer-name', 'billing-efo', '--endpoint', local().endpoints.kinesis]);
    expect(out.stderr).to.equal('');
    expect(out.code).to.equal(0);
    expect(out.stdout).to.match(/^consumer billing-efo deregistered from stream \S+ \(arn:aws:kinesis:.*consumer\/billing-efo:\d+, was ACTIVE\)\n$/);
    await gone(fanOut, 'billing-efo');
  });

  it('with --app, deregisters the consumer the library registered for that application (its name)', async () => {
    const { stream, fanOut } = await registered('orders-app');
    const out = await cli(['deregister-consumer', '--stream', stream, '--app', 'orders-app', '--endpoint', local().endpoints.kinesis]);
    expect(out.code).to.equal(0);
    await gone(fanOut, 'orders-app');
  });

  it('is idempotent: no such consumer is nothing to do (exit 0)', async () => {
    const stream = uniqueName('clic');
    await createStream(local().kinesis, stream, 1);
    const out = await cli(['deregister-consumer', '--stream', stream, '--consumer-name', 'nobody', '--endpoint', local().endpoints.kinesis]);
    expect([out.code, out.stdout]).to.deep.equal([0, `no consumer nobody on stream ${stream}: nothing to deregister\n`]);
  });

  it('refuses a command line without a consumer (exit 2) and fails on a missing stream (exit 1)', async () => {
    const neither = await cli(['deregister-consumer', '--stream', 's', '--endpoint', local().endpoints.kinesis]);
    expect(neither.code).to.equal(2);
    expect(neither.stderr).to.contain('give --consumer-name, or --app');
    const noStream = await cli(['deregister-consumer', '--consumer-name', 'x']);
    expect(noStream.code).to.equal(2);
    expect(noStream.stderr).to.contain('missing --stream');
    const help = await cli(['deregister-consumer', '--help']);
    expect(help.code).to.equal(0);
    expect(help.stdout).to.contain('--consumer-name');
    const missing = await cli(['deregister-consumer', '--stream', uniqueName('none'), '--consumer-name', 'x', '--endpoint', local().endpoints.kinesis]);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.contain('not found');
  });

  it('every exit code its --help documents happens (0 deregistered or none, 1 failed, 2 bad command line)', async () => {
    const documented = documentedCodes((await cli(['deregister-consumer', '--help'])).stdout);
    const endpoint = ['--endpoint', local().endpoints.kinesis];
    const { stream } = await registered('codes-efo');
    const cases: Record<number, string[]> = {
      0: ['deregister-consumer', '--stream', stream, '--consumer-name', 'codes-efo', ...endpoint],
      1: ['deregister-consumer', '--stream', uniqueName('none'), '--consumer-name', 'x', ...endpoint],
      2: ['deregister-consumer', '--stream', stream, ...endpoint],
    };
    expect(Object.keys(cases).map(Number)).to.deep.equal(documented);
    for (const [code, args] of Object.entries(cases)) expect((await cli(args)).code, `expecting ${code}`).to.equal(Number(code));
  });
});
