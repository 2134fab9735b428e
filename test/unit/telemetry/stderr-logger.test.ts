// The default logger (issue 26 item 1): with no logger given, warnings and errors go to stderr,
// one line each, so the waits of a first run are not silent; routine lines do not.
import { expect } from 'chai';
import { KinsumerError, LeaseLostError } from '../../../src/index.js';
import { logEvent } from '../../../src/telemetry/event-log.js';
import { explainEndpointError } from '../../../src/errors/endpoint-error.js';
import { resolveOptions } from '../../../src/options.js';
import { stderrLogger } from '../../../src/telemetry/stderr-logger.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';

/** The logger a client gets when its options name none. */
const DEFAULT_LOGGER = resolveOptions({ streamName: 's', applicationName: 'a', kinesis: { send: () => undefined } as never, dynamodb: { send: () => undefined } as never }).logger;

/** Runs `work` with process.stderr.write captured. */
async function capturingStderr(work: () => Promise<void>): Promise<string[]> {
  const written: string[] = [];
  const original = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => { written.push(String(chunk)); return true; });
  try {
    await work();
  } finally {
    process.stderr.write = original;
  }
  return written;
}

describe('the default logger: warnings and errors on stderr', () => {
  it('writes one line per warn or error: level, message, the object as JSON with errors and their causes; drops debug and info', () => {
    const lines: string[] = [];
    const logger = stderrLogger((line) => lines.push(line));
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    const err = new KinsumerError('describing table a_clients failed', { cause: explainEndpointError(refused, { service: 'DynamoDB', endpoint: 'http://127.0.0.1:9' }), retriable: true });
    logger.debug({ shardId: 's' }, 'kinsumer: checkpoint committed');
    logger.info({ shardId: 's' }, 'kinsumer: lease acquired');
    logger.warn({ operation: 'prepare', attempt: 2, err }, 'kinsumer: retrying after a transient error');
    logger.error({ err: new Error('plain') }, 'kinsumer: error');
    logger.warn({}, 'kinsumer: no object');
    expect(lines).to.have.length(3);
    expect(lines[0]).to.match(/^WARN kinsumer: retrying after a transient error \{"operation":"prepare","attempt":2,"err":\{"name":"KinsumerError",.*"cannot reach DynamoDB at http:\/\/127.0.0.1:9.*"code":"ECONNREFUSED"\}\}\}\}\n$/);
    expect(lines[1]).to.equal('ERROR kinsumer: error {"err":{"name":"Error","message":"plain"}}\n');
    expect(lines[2]).to.equal('WARN kinsumer: no object\n');
  });

  it('a client given no logger says on stderr that it waits behind a crashed process\'s leases; a healthy run writes nothing', async () => {
    const group = new MemoryGroup(2);
    const healthy = await capturingStderr(async () => {
      const old = group.join('old', { extra: { logger: DEFAULT_LOGGER } });
      await group.scheduler.until(() => group.counts().get('old') === 2, 'the first process holds both shards', 20_000);
      await group.scheduler.advanceBy(FAST.shardCheckFrequencyMs);
      old.pause();
    });
    expect(healthy).to.deep.equal([]);
    const restart = await capturingStderr(async () => {
      group.join('fresh', { extra: { logger: DEFAULT_LOGGER } });
      await group.scheduler.until(() => group.counts().get('fresh') === 2, 'the new process holds both shards', 30_000);
    });
    // The wait is info at first (a healthy join waits too); it is a warning once it outlives the holder's shard check.
    expect(restart.filter((line) => /^WARN kinsumer: still waiting for .*leased by old, .* in \d+ ms \(leaseTtlMs\)/.test(line)), restart.join('')).to.have.length(1);
    // The old process wakes up to find its leases taken (its warnings are not this test's).
    await capturingStderr(() => Promise.all(group.members.map((m) => { m.resume(); return m.kinsumer.stop(); })).then(() => undefined));
  });
});

describe('the default logger: a lease revoked by a reset is not "lost to another client"', () => {
  it('says the lease was revoked by a reset, and that the shard is captured again', () => {
    const lines: string[] = [];
    const logger = stderrLogger((line) => lines.push(line));
    logEvent(logger, { type: 'lease-lost', shardId: 's0', error: new LeaseLostError('s0', { revoked: true }) });
    logEvent(logger, { type: 'lease-lost', shardId: 's1', error: new LeaseLostError('s1') });
    expect(lines[0]).to.match(/^WARN kinsumer: lease revoked by a reset \(kinsumer reset --force, resetCheckpoints or import-kcl\): captured again, reading from the new checkpoint \{"shardId":"s0",/);
    expect(lines[1]).to.match(/^WARN kinsumer: lease lost to another client \{"shardId":"s1",/);
  });
});
