import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { expect } from 'chai';
import { asyncScheduler } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ConfigError, Kinsumer, KinsumerError, type KinsumerOptions } from '../../src/index.js';
import { DEFAULTS } from '../../src/options.js';

const kinesis = new KinesisClient({ region: 'us-east-1' });
const dynamodb = new DynamoDBClient({ region: 'us-east-1' });
const base: KinsumerOptions = { streamName: 'events', applicationName: 'billing', kinesis, dynamodb };

/** Builds options from the valid base with some keys changed (or removed with `undefined`). */
function withOptions(changes: Record<string, unknown>): KinsumerOptions {
  const options: Record<string, unknown> = { ...base, ...changes };
  for (const [key, value] of Object.entries(changes)) if (value === undefined) delete options[key];
  return options as unknown as KinsumerOptions;
}

function configError(changes: Record<string, unknown>): ConfigError {
  try {
    new Kinsumer(withOptions(changes));
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    expect(error).to.be.instanceOf(KinsumerError);
    return error as ConfigError;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(Object.keys(changes))}`);
}

describe('options: new Kinsumer validates synchronously', () => {
  it('accepts the minimal options and fills in the contract defaults', () => {
    const { options } = new Kinsumer(base);
    expect(options.stream).to.deep.equal({ streamName: 'events' });
    expect(options.initialPosition).to.equal('TRIM_HORIZON');
    expect(options.throttleDelayMs).to.equal(250);
    expect(options.commitFrequencyMs).to.equal(1000);
    expect(options.shardCheckFrequencyMs).to.equal(5000);
    expect(options.leaderActionFrequencyMs).to.equal(10000);
    expect(options.leaseTtlMs).to.equal(15000);
    expect(options.maxInFlightRecords).to.equal(10000);
    expect(options.maxInFlightBytes).to.equal(256 * 1024 * 1024);
    expect(options.onDataLoss).to.equal('continue');
    expect(options.shutdownTimeoutMs).to.equal(30000);
    expect(options.stallWarningMs).to.equal(60000);
    expect(options.requestTimeoutMs).to.equal(10000);
    expect(options.startTimeoutMs).to.equal(60000);
    expect(options.readMode).to.equal('polling');
    expect(options.consumerName).to.equal('billing');
    expect(options.createTables).to.equal(false);
    expect(options.scheduler).to.equal(asyncScheduler);
    expect(options.clientId).to.match(/^[0-9a-f-]{36}$/);
    expect(options.clientName).to.be.a('string').and.not.empty;
    expect(DEFAULTS.throttleDelayMs).to.equal(options.throttleDelayMs);
  });

  it('gives every instance its own random clientId unless one is set', () => {
    expect(new Kinsumer(base).options.clientId).to.not.equal(new Kinsumer(base).options.clientId);
    expect(new Kinsumer({ ...base, clientId: 'worker-1' }).options.clientId).to.equal('worker-1');
  });

  it('accepts the small timings tests and demos use', () => {
    const { options } = new Kinsumer({
      ...base, throttleDelayMs: 200, commitFrequencyMs: 100, shardCheckFrequencyMs: 500,
      leaderActionFrequencyMs: 500, leaseTtlMs: 3000, shutdownTimeoutMs: 1000, maxInFlightRecords: 1,
    });
    expect(options.leaseTtlMs).to.equal(3000);
  });

  it('startTimeoutMs defaults to 60000, or to twice a lease TTL above 30000', () => {
    expect(new Kinsumer({ ...base, leaseTtlMs: 30_000 }).options.startTimeoutMs).to.equal(60_000);
    expect(new Kinsumer({ ...base, leaseTtlMs: 45_000 }).options.startTimeoutMs).to.equal(90_000);
  });

  it('accepts a stream ARN instead of a name', () => {
    const streamArn = 'arn:aws:kinesis:eu-west-1:123456789012:stream/events';
    expect(new Kinsumer(withOptions({ streamName: undefined, streamArn })).options.stream).to.deep.equal({ streamArn });
  });

  it('accepts AT_TIMESTAMP, LATEST and a scheduler', () => {
    const timestamp = new Date('2026-01-01T00:00:00Z');
    expect(new Kinsumer({ ...base, initialPosition: { timestamp } }).options.initialPosition).to.deep.equal({ timestamp });
    expect(new Kinsumer({ ...base, initialPosition: 'LATEST' }).options.initialPosition).to.equal('LATEST');
    const scheduler = new TestScheduler(() => undefined);
    expect(new Kinsumer({ ...base, scheduler }).options.scheduler).to.equal(scheduler);
  });

  it('clock: the host\'s wall and monotonic clocks by default, the scheduler\'s now() with a scheduler, or the one given', () => {
    const host = new Kinsumer(base).options.clock;
    // The wall clock steps a minute back: wallNow follows it, elapsedNow (performance.now) does not.
    const realDateNow = Date.now;
    const steppedMs = realDateNow() - 60_000;
    Date.now = () => steppedMs;
    try {
      expect(host.wallNow()).to.equal(steppedMs);
      expect(host.elapsedNow() - steppedMs).to.be.within(59_000, 61_000);
    } finally {
      Date.now = realDateNow;
    }
    const scheduler = new TestScheduler(() => undefined);
    scheduler.frame = 1234;
    const virtual = new Kinsumer({ ...base, scheduler }).options.clock;
    expect([virtual.wallNow(), virtual.elapsedNow()]).to.deep.equal([1234, 1234]);
    const given = { wallNow: () => 1, elapsedNow: () => 2 };
    expect(new Kinsumer({ ...base, scheduler, clock: given }).options.clock).to.equal(given);
  });

  const rules: Array<[string, Record<string, unknown>, string, RegExp]> = [
    ['missing stream', { streamName: undefined }, 'streamName', /required/],
    ['both stream name and ARN', { streamArn: 'arn:aws:kinesis:eu-west-1:123456789012:stream/events' }, 'streamName', /not both/],
    ['bad stream name', { streamName: 'has space' }, 'streamName', /characters/],
    ['bad stream ARN', { streamName: undefined, streamArn: 'arn:aws:s3:::bucket' }, 'streamArn', /ARN/],
    ['missing application name', { applicationName: undefined }, 'applicationName', /required/],
    ['empty application name', { applicationName: '' }, 'applicationName', /characters/],
    ['application name unfit for a table name', { applicationName: 'a/b' }, 'applicationName', /table names/],
    ['missing kinesis client', { kinesis: undefined }, 'kinesis', /KinesisClient/],
    ['kinesis not a client', { kinesis: {} }, 'kinesis', /send/],
    ['missing dynamodb client', { dynamodb: undefined }, 'dynamodb', /DynamoDBClient/],
    ['dynamodb not a client', { dynamodb: 'client' }, 'dynamodb', /send/],
    ['empty clientId', { clientId: '' }, 'clientId', /non-empty/],
    ['non-string clientName', { clientName: 42 }, 'clientName', /non-empty/],
    ['unknown initialPosition', { initialPosition: 'EARLIEST' }, 'initialPosition', /TRIM_HORIZON/],
    ['invalid timestamp', { initialPosition: { timestamp: new Date('nope') } }, 'initialPosition', /valid Date/],
    ['throttleDelayMs below 200', { throttleDelayMs: 199 }, 'throttleDelayMs', /at least 200/],
    ['non-finite throttleDelayMs', { throttleDelayMs: Number.POSITIVE_INFINITY }, 'throttleDelayMs', /finite/],
    ['zero commitFrequencyMs', { commitFrequencyMs: 0 }, 'commitFrequencyMs', /positive/],
    ['negative shardCheckFrequencyMs', { shardCheckFrequencyMs: -1 }, 'shardCheckFrequencyMs', /positive/],
    ['NaN leaderActionFrequencyMs', { leaderActionFrequencyMs: Number.NaN }, 'leaderActionFrequencyMs', /finite/],
    ['string duration', { leaseTtlMs: '15000' }, 'leaseTtlMs', /number/],
    ['duration beyond the timer range', { shutdownTimeoutMs: 2 ** 31 }, 'shutdownTimeoutMs', /at most/],
    ['leader refresh faster than the shard check', { shardCheckFrequencyMs: 5000, leaderActionFrequencyMs: 4000 }, 'leaderActionFrequencyMs', /shardCheckFrequencyMs/],
    ['lease TTL not twice the heartbeat', { shardCheckFrequencyMs: 5000, leaseTtlMs: 9999 }, 'leaseTtlMs', /twice shardCheckFrequencyMs/],
    ['lease TTL not longer than the commit interval', { commitFrequencyMs: 15000 }, 'leaseTtlMs', /commitFrequencyMs/],
    ['lease TTL not longer than the throttle delay', { throttleDelayMs: 20000, shardCheckFrequencyMs: 1000, leaderActionFrequencyMs: 1000, leaseTtlMs: 20000 }, 'leaseTtlMs', /throttleDelayMs/],
    ['zero maxInFlightRecords', { maxInFlightRecords: 0 }, 'maxInFlightRecords', /positive integer/],
    ['fractional maxInFlightRecords', { maxInFlightRecords: 1.5 }, 'maxInFlightRecords', /positive integer/],
    ['zero maxInFlightBytes', { maxInFlightBytes: 0 }, 'maxInFlightBytes', /positive integer/],
    ['fractional maxInFlightBytes', { maxInFlightBytes: 1024.5 }, 'maxInFlightBytes', /positive integer/],
    ['unknown onDataLoss', { onDataLoss: 'skip' }, 'onDataLoss', /'continue' or 'stop-shard'/],
    ['zero shutdownTimeoutMs', { shutdownTimeoutMs: 0 }, 'shutdownTimeoutMs', /positive/],
    ['zero stallWarningMs', { stallWarningMs: 0 }, 'stallWarningMs', /positive/],
    ['stallWarningMs beyond the timer range', { stallWarningMs: 2 ** 31 }, 'stallWarningMs', /at most/],
    ['non-number stallWarningMs', { stallWarningMs: '60000' }, 'stallWarningMs', /number/],
    ['zero startTimeoutMs', { startTimeoutMs: 0 }, 'startTimeoutMs', /positive/],
    ['zero requestTimeoutMs', { requestTimeoutMs: 0 }, 'requestTimeoutMs', /positive/],
    ['unknown readMode', { readMode: 'push' }, 'readMode', /polling/],
    ['bad consumerName', { consumerName: 'a b' }, 'consumerName', /characters/],
    ['non-boolean createTables', { createTables: 'yes' }, 'createTables', /boolean/],
    ['logger without methods', { logger: { info() {} } }, 'logger', /pino/],
    ['stats with a non-function', { stats: { checkpoint: 1 } }, 'stats', /checkpoint must be a function/],
    ['scheduler not a scheduler', { scheduler: {} }, 'scheduler', /SchedulerLike/],
    ['misspelt option', { throttleDelay: 250 }, 'throttleDelay', /not a kinsumer option/],
    ['clock without elapsedNow()', { clock: { wallNow: () => 0 } }, 'clock', /elapsedNow\(\)/],
    ['null clock', { clock: null }, 'clock', /Clock/],
    // The same rules, reached by the other kinds of bad value each check guards against.
    ['non-string stream name', { streamName: 42 }, 'streamName', /characters/],
    ['stream name longer than 128', { streamName: 's'.repeat(129) }, 'streamName', /1-128/],
    ['non-string stream ARN', { streamName: undefined, streamArn: 42 }, 'streamArn', /ARN/],
    ['stream ARN without an account', { streamName: undefined, streamArn: 'arn:aws:kinesis:eu-west-1::stream/events' }, 'streamArn', /ARN/],
    ['non-string application name', { applicationName: 7 }, 'applicationName', /characters/],
    ['application name too long for the table names', { applicationName: 'a'.repeat(244) }, 'applicationName', /1-243/],
    ['null kinesis client', { kinesis: null }, 'kinesis', /required/],
    ['dynamodb whose send is not a function', { dynamodb: { send: 1 } }, 'dynamodb', /send/],
    ['non-string clientId', { clientId: 12 }, 'clientId', /non-empty string/],
    ['clientId longer than 1024', { clientId: 'c'.repeat(1025) }, 'clientId', /at most 1024/],
    ['empty clientName', { clientName: '' }, 'clientName', /non-empty/],
    ['non-string consumerName', { consumerName: 5 }, 'consumerName', /non-empty string/],
    ['consumerName longer than 128', { consumerName: 'c'.repeat(129) }, 'consumerName', /1-128/],
    ['null initialPosition', { initialPosition: null }, 'initialPosition', /TRIM_HORIZON/],
    ['numeric initialPosition', { initialPosition: 0 }, 'initialPosition', /TRIM_HORIZON/],
    ['lower-case initialPosition', { initialPosition: 'latest' }, 'initialPosition', /TRIM_HORIZON/],
    ['timestamp that is not a Date', { initialPosition: { timestamp: '2026-01-01' } }, 'initialPosition', /valid Date/],
    ['string throttleDelayMs', { throttleDelayMs: '250' }, 'throttleDelayMs', /number/],
    ['negative leaseTtlMs', { leaseTtlMs: -15000 }, 'leaseTtlMs', /positive/],
    ['commitFrequencyMs beyond the timer range', { commitFrequencyMs: 2 ** 31, leaseTtlMs: 2 ** 31 - 1 }, 'commitFrequencyMs', /at most 2147483647/],
    ['null shardCheckFrequencyMs', { shardCheckFrequencyMs: null }, 'shardCheckFrequencyMs', /positive finite/],
    ['string maxInFlightRecords', { maxInFlightRecords: '10' }, 'maxInFlightRecords', /positive integer/],
    ['negative maxInFlightRecords', { maxInFlightRecords: -1 }, 'maxInFlightRecords', /positive integer/],
    ['maxInFlightRecords beyond 2^53', { maxInFlightRecords: 2 ** 53 }, 'maxInFlightRecords', /positive integer/],
    ['string maxInFlightBytes', { maxInFlightBytes: '256MiB' }, 'maxInFlightBytes', /positive integer/],
    ['maxInFlightBytes beyond 2^53', { maxInFlightBytes: 2 ** 53 }, 'maxInFlightBytes', /positive integer/],
    ['null onDataLoss', { onDataLoss: null }, 'onDataLoss', /'continue' or 'stop-shard'/],
    ['non-string onDataLoss', { onDataLoss: true }, 'onDataLoss', /'continue' or 'stop-shard'/],
    ['non-string readMode', { readMode: true }, 'readMode', /fan-out/],
    ['numeric createTables', { createTables: 1 }, 'createTables', /boolean/],
    ['logger that is a string', { logger: 'console' }, 'logger', /debug, info, warn and error/],
    ['null logger', { logger: null }, 'logger', /pino/],
    ['logger with a non-function debug', { logger: { debug: 1, info() {}, warn() {}, error() {} } }, 'logger', /pino/],
    ['stats that is not an object', { stats: 'prometheus' }, 'stats', /StatReceiver/],
    ['null stats', { stats: null }, 'stats', /StatReceiver/],
    ['stats with a non-function eventToClient', { stats: { eventToClient: 'x' } }, 'stats', /eventToClient must be a function/],
    ['stats with a non-function eventsFromKinesis', { stats: { eventsFromKinesis: {} } }, 'stats', /eventsFromKinesis must be a function/],
    ['null scheduler', { scheduler: null }, 'scheduler', /SchedulerLike/],
    ['scheduler without now()', { scheduler: { schedule() {} } }, 'scheduler', /now\(\)/],
  ];

  for (const [title, changes, option, rule] of rules) {
    it(`rejects ${title} with a ConfigError naming ${option}`, () => {
      const error = configError(changes);
      expect(error.option).to.equal(option);
      expect(error.message).to.contain(option);
      expect(error.rule).to.match(rule);
      expect(error.retriable).to.equal(false);
    });
  }

  it('accepts every rule at its boundary', () => {
    const { options } = new Kinsumer({
      ...base,
      applicationName: 'a'.repeat(243),
      streamName: 's'.repeat(128),
      clientId: 'c'.repeat(1024),
      // Equal frequencies, a TTL of exactly twice the heartbeat, the longest timer.
      shardCheckFrequencyMs: 1000, leaderActionFrequencyMs: 1000, leaseTtlMs: 2000,
      commitFrequencyMs: 1999, throttleDelayMs: 1999,
      shutdownTimeoutMs: 2 ** 31 - 1,
      maxInFlightRecords: Number.MAX_SAFE_INTEGER,
      // One byte: every shard may still hold one record, delivered alone.
      maxInFlightBytes: 1, onDataLoss: 'stop-shard',
    });
    expect(options.maxInFlightBytes).to.equal(1);
    expect(options.onDataLoss).to.equal('stop-shard');
    expect(options.leaseTtlMs).to.equal(2000);
    expect(options.shutdownTimeoutMs).to.equal(2 ** 31 - 1);
    // The default consumer name is the application name cut to the 128 characters Kinesis allows.
    expect(options.consumerName).to.equal('a'.repeat(128));
  });

  it('accepts fan-out mode, a consumer name, a logger, stats and createTables', () => {
    const logger = { debug() {}, info() {}, warn() {}, error() {} };
    const stats = { checkpoint() {}, eventToClient() {}, eventsFromKinesis() {} };
    const { options } = new Kinsumer({ ...base, readMode: 'fan-out', consumerName: 'billing-efo', logger, stats, createTables: true });
    expect(options.readMode).to.equal('fan-out');
    expect(options.consumerName).to.equal('billing-efo');
    expect(options.logger).to.equal(logger);
    expect(options.stats).to.equal(stats);
    expect(options.createTables).to.equal(true);
  });

  it('an unknown option names the nearest known one, as TypeScript does (did you mean ...?)', () => {
    expect(configError({ throttleDelay: 250 }).rule).to.equal('is not a kinsumer option (did you mean throttleDelayMs?)');
    expect(configError({ leaseTTLMs: 3000 }).rule).to.equal('is not a kinsumer option (did you mean leaseTtlMs?)');
    expect(configError({ streamname: 'events' }).message).to.contain('did you mean streamName?');
    expect(configError({ shutdownTimeout: 1 }).message).to.contain('did you mean shutdownTimeoutMs?');
    expect(configError({ logLevel: 'info' }).rule).to.equal('is not a kinsumer option');
    expect(configError({ x: 1 }).rule).to.equal('is not a kinsumer option');
  });

  it('names the first option at fault when several break a rule', () => {
    // The stream is checked before the timings.
    expect(configError({ streamName: '', throttleDelayMs: 1 }).option).to.equal('streamName');
  });

  it('rejects a non-object', () => {
    expect(() => new Kinsumer(null as unknown as KinsumerOptions)).to.throw(ConfigError, /options/);
    expect(() => new Kinsumer('events' as unknown as KinsumerOptions)).to.throw(ConfigError, /must be an object/);
  });

  it('does no I/O in the constructor (clients are never called)', () => {
    let calls = 0;
    const spy = { send: () => { calls += 1; return Promise.resolve({}); } };
    new Kinsumer(withOptions({ kinesis: spy, dynamodb: spy }));
    expect(calls).to.equal(0);
  });
});
