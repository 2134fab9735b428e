// startTimeoutMs on the local servers (issue 16 item 1, newcomer trial §3 "DynamoDB endpoint down
// at start"): a client whose DynamoDB endpoint refuses connections errors records$ with
// StartTimeoutError, the last error as its cause, instead of retrying silently forever.
import { expect } from 'chai';
import { EndpointError, Kinsumer, KinsumerError, StartTimeoutError, type KinsumerEvent } from '../../src/index.js';
import { createStream, localDynamoDbClient } from '../../src/testing/index.js';
import { freePort } from '../../src/testing/servers.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';
import { FAST } from '../support/memory-group.js';

/** The error and its causes, outermost first. */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e: unknown = error; e !== undefined && chain.length < 6; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

describe('startTimeoutMs (kinesalite, DynamoDB on a closed port)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  it('errors records$ and leases$ with StartTimeoutError whose cause is the last error: connection refused', async () => {
    const streamName = uniqueName('start');
    await createStream(local().kinesis, streamName, 1);
    const dynamodb = localDynamoDbClient(local(), { endpoint: `http://127.0.0.1:${await freePort()}`, maxAttempts: 1 });
    const consumer = new Kinsumer({ ...FAST, streamName, applicationName: uniqueName('app'), kinesis: local().kinesis, dynamodb, startTimeoutMs: 2000 });
    const events: KinsumerEvent[] = [];
    consumer.events$.subscribe((event) => events.push(event));
    let recordsError: unknown;
    let leasesError: unknown;
    consumer.records$.subscribe({ error: (error: unknown) => { recordsError = error; } });
    consumer.leases$.subscribe({ error: (error: unknown) => { leasesError = error; } });
    await eventually(() => recordsError !== undefined, 'records$ to error');
    expect(recordsError).to.be.instanceOf(StartTimeoutError);
    expect(leasesError).to.equal(recordsError);
    const error = recordsError as StartTimeoutError;
    expect(error).to.be.instanceOf(KinsumerError);
    expect(error.timeoutMs).to.equal(2000);
    // The last error seen while starting: the table check, refused by the closed port.
    const lastRetry = events.filter((e): e is Extract<KinsumerEvent, { type: 'retrying' }> => e.type === 'retrying').at(-1);
    expect(error.cause).to.equal(lastRetry?.error);
    const chain = causes(error.cause);
    expect(chain.some((e) => e instanceof EndpointError && e.service === 'DynamoDB')).to.equal(true);
    expect(chain.some((e) => (e as { code?: unknown }).code === 'ECONNREFUSED')).to.equal(true);
    expect(consumer.status().state).to.equal('failed');
    await consumer.stop();
    dynamodb.destroy();
  });

  it('names the root cause in its message, warns after the first failed attempts, and its stop() reports nothing more', async () => {
    const streamName = uniqueName('start');
    await createStream(local().kinesis, streamName, 1);
    const port = await freePort();
    const dynamodb = localDynamoDbClient(local(), { endpoint: `http://127.0.0.1:${port}`, maxAttempts: 1 });
    const consumer = new Kinsumer({ ...FAST, streamName, applicationName: uniqueName('app'), kinesis: local().kinesis, dynamodb, startTimeoutMs: 3000 });
    const events: KinsumerEvent[] = [];
    consumer.events$.subscribe((event) => events.push(event));
    let recordsError: unknown;
    consumer.records$.subscribe({ error: (error: unknown) => { recordsError = error; } });
    await eventually(() => recordsError !== undefined, 'records$ to error');
    // The last error's own words (its message carries the same root cause on top, said once here).
    const root = `cannot reach DynamoDB at http://127.0.0.1:${port}: connection refused (is the server running, and is this its port?)`;
    const last = (events.filter((e) => e.type === 'retrying').at(-1) as { error: Error }).error.message;
    expect(last.endsWith(`_clients failed: ${root}`), last).to.equal(true);
    expect((recordsError as Error).message).to.equal(`could not start within 3000 ms: ${root} (last error: ${last.slice(0, -root.length - 2)})`);
    const failing = events.filter((e): e is Extract<KinsumerEvent, { type: 'start-failing' }> => e.type === 'start-failing');
    expect(failing).to.have.length(1);
    expect(failing[0]?.attempts).to.equal(3);
    expect(events.indexOf(failing[0] as KinsumerEvent)).to.be.below(events.findIndex((e) => e.type === 'error'));
    const reported = events.length;
    await consumer.stop();
    // Leaving a group it never joined would only fail three times more (deregister, step down, epoch).
    expect(events.slice(reported).filter((e) => e.type === 'error')).to.deep.equal([]);
    dynamodb.destroy();
  });
});
