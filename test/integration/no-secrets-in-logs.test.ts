// What kinsumer logs never holds credentials or record contents (partition keys included), even
// on the paths that log AWS errors: transient faults (retrying), an undecodable KPL aggregate, a
// stream deleted mid-run (fatal) — nor do its events written as JSON (errors' toJSON). And with no
// logger given, a healthy run writes nothing at all (the default logger prints only warnings).
// Faults come from the fault proxy in front of the local servers (real HTTP error answers).
import { expect } from 'chai';
import { inspect } from 'node:util';
import { firstValueFrom, take, tap, toArray } from 'rxjs';
import { Kinsumer, type Logger } from '../../src/index.js';
import { deleteStream, localDynamoDbClient, localKinesisClient, putRecords, type LocalAwsConfig } from '../../src/testing/index.js';
import { freshSetup, record } from '../support/bad-input.js';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js';
import { eventually, useLocalAws } from '../support/local.js';

const ACCESS_KEY_ID = 'AKIANOLEAKCHECK4711';
const SECRET_ACCESS_KEY = 'nOlEaK/sEcReT+kinsumer0123456789abcdefgh';
const SESSION_TOKEN = 'NoLeakSessionToken0123456789';
const DATA_MARKER = 'RECORD-BODY-do-not-log';
const KEY_MARKER = 'PARTITION-KEY-do-not-log';
/** The KPL aggregate magic: the record below starts like one, then fails its checksum. */
const KPL_MAGIC = [0xf3, 0x89, 0x9a, 0xc2];

/** Everything a pino logger would write for a call: enumerable properties, and for errors their name, message, stack and cause. */
function pinoLike(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('latin1');
  if (typeof value !== 'object' || value === null) return value;
  if (seen.has(value) || depth > 12) return '[...]';
  seen.add(value);
  const out: Record<string, unknown> = {};
  if (value instanceof Error) {
    out.type = value.constructor.name;
    out.message = value.message;
    out.stack = value.stack;
    if (value.cause !== undefined) out.cause = pinoLike(value.cause, depth + 1, seen);
  }
  for (const [key, inner] of Object.entries(value)) out[key] = pinoLike(inner, depth + 1, seen);
  return out;
}

/** A logger keeping every line, at every level, as pino and as console.log(util.inspect) would print it. */
function capturingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const write = (level: string) => (obj: object, msg?: string) => {
    lines.push(`${level} ${msg ?? ''} ${JSON.stringify(pinoLike(obj))}`);
    lines.push(`${level} ${msg ?? ''} ${inspect(obj, { depth: 12 })}`);
  };
  return { logger: { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') }, lines };
}

describe('no secrets in logs (kinesalite + dynalite behind the fault proxy)', function () {
  this.timeout(60_000);
  const local = useLocalAws();
  const proxies: FaultProxy[] = [];
  afterEach(async () => {
    await Promise.all(proxies.splice(0).map((p) => p.stop()));
  });

  /** Clients with marked credentials, through fault proxies; the SDK's own retries off, so kinsumer's show. */
  async function markedClients() {
    const kinesisProxy = await startFaultProxy({ target: local().endpoints.kinesis });
    const dynamoProxy = await startFaultProxy({ target: local().endpoints.dynamodb });
    proxies.push(kinesisProxy, dynamoProxy);
    const config: LocalAwsConfig = {
      region: local().region,
      endpoints: { kinesis: kinesisProxy.endpoint, dynamodb: dynamoProxy.endpoint },
      credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY, sessionToken: SESSION_TOKEN } as LocalAwsConfig['credentials'],
    };
    return {
      kinesisProxy, dynamoProxy,
      kinesis: localKinesisClient(config, { maxAttempts: 1 }),
      dynamodb: localDynamoDbClient(config, { maxAttempts: 1 }),
    };
  }

  it('a run with transient faults, an undecodable record and a deleted stream logs neither keys nor record contents', async () => {
    const options = await freshSetup(local(), 'no-secrets');
    const clients = await markedClients();
    const corruptAggregate = new Uint8Array([...KPL_MAGIC, ...new TextEncoder().encode(`${DATA_MARKER}-kpl`), ...new Uint8Array(16)]);
    await putRecords(local().kinesis, options.streamName, [
      ...Array.from({ length: 5 }, (_, i) => ({ partitionKey: `${KEY_MARKER}-${i}`, data: `${DATA_MARKER}-${i}` })),
      { partitionKey: `${KEY_MARKER}-kpl`, data: corruptAggregate },
    ]);
    clients.kinesisProxy.script('GetRecords', 2, { kind: 'error', error: 'InternalFailure', status: 500 });
    clients.kinesisProxy.script('GetShardIterator', 1, { kind: 'drop' });
    clients.dynamoProxy.script('UpdateItem', 1, { kind: 'error', error: 'ProvisionedThroughputExceededException', status: 400 });

    const { logger, lines } = capturingLogger();
    const run = record(new Kinsumer({ ...options, kinesis: clients.kinesis, dynamodb: clients.dynamodb, logger }));
    await eventually(() => run.records.length === 6, 'all six records');
    await eventually(() => run.events.some((e) => e.type === 'checkpoint' && e.checkpoint?.sequenceNumber === run.records[5]?.sequenceNumber), 'the last commit');
    await deleteStream(local().kinesis, options.streamName);
    await eventually(() => run.outcome().kind === 'error', 'the fatal error');
    await run.consumer.stop();

    // The run went through the paths that log AWS errors, with the SDK's errors as causes.
    const all = lines.join('\n');
    expect(all).to.contain('kinsumer: retrying after a transient error').and.contain('InternalFailure');
    expect(all).to.contain('kinsumer: KPL aggregate could not be decoded');
    expect(all).to.contain('error kinsumer: error').and.contain('StreamNotFoundError').and.contain('ResourceNotFoundException');
    expect(all).to.contain('kinsumer: lease acquired');
    // ... and none of it holds a credential or a byte of a record.
    for (const secret of [ACCESS_KEY_ID, SECRET_ACCESS_KEY, SESSION_TOKEN, DATA_MARKER, KEY_MARKER]) {
      const leak = lines.find((line) => line.includes(secret));
      expect(leak, `a log line holds ${secret}`).to.equal(undefined);
    }
    // The events as a log pipeline without an error serializer writes them: the errors keep their
    // messages and causes (toJSON), and still hold no secret.
    const asJson = run.events.map((event) => JSON.stringify(event));
    expect(asJson.filter((line) => line.includes('"type":"retrying"') && line.includes('InternalFailure'))).to.not.deep.equal([]);
    for (const secret of [ACCESS_KEY_ID, SECRET_ACCESS_KEY, SESSION_TOKEN, DATA_MARKER, KEY_MARKER]) {
      expect(asJson.find((line) => line.includes(secret)), `an event as JSON holds ${secret}`).to.equal(undefined);
    }
  });

  it('with no logger given, a healthy run writes nothing to the console or stderr', async () => {
    const { logger: _quiet, ...options } = await freshSetup(local(), 'silent');
    await putRecords(local().kinesis, options.streamName, [{ partitionKey: KEY_MARKER, data: DATA_MARKER }]);
    const written: string[] = [];
    const methods = ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const;
    const originals = new Map(methods.map((m) => [m, Reflect.get(console, m) as unknown]));
    const stderrWrite = process.stderr.write.bind(process.stderr);
    for (const m of methods) console[m] = (...args: unknown[]) => { written.push(args.map(String).join(' ')); };
    process.stderr.write = ((chunk: string | Uint8Array) => { written.push(String(chunk)); return true; });
    try {
      const consumer = new Kinsumer(options);
      await firstValueFrom(consumer.records$.pipe(tap((r) => r.ack()), take(1), toArray()));
      await consumer.stop();
    } finally {
      for (const m of methods) Reflect.set(console, m, originals.get(m));
      process.stderr.write = stderrWrite;
    }
    expect(written).to.deep.equal([]);
  });
});
