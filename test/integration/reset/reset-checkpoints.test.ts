import { expect } from 'chai';
import { concatMap, firstValueFrom, interval, lastValueFrom } from 'rxjs';
import { Dynamo } from '../../../src/dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../../src/dynamodb/lease-store.js';
import {
  ConfigError, LeaseLostError, StreamNotFoundError, TableNotFoundError, createTables, resetCheckpoints, type ResetCheckpointsOptions,
} from '../../../src/index.js';
import type { HeldLease, StoredCheckpoint } from '../../../src/ports/lease-store.js';
import { createStream } from '../../../src/testing/index.js';
import { uniqueName, useLocalAws } from '../../support/local.js';

const SHARD0 = 'shardId-000000000000';
const SHARD1 = 'shardId-000000000001';
const SEQ = '49590338271490256608559692538361571095921575989136588898';
const TTL_MS = 15_000;
/** The reset's leaseTtlMs: how long an unforced reset watches leased rows (short, to keep the tests short). */
const WATCH_MS = 1500;
const at = (sequenceNumber: string): StoredCheckpoint => ({ type: 'position', position: { sequenceNumber } });

describe('resetCheckpoints (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  async function setup(): Promise<{ streamName: string; applicationName: string; options: ResetCheckpointsOptions }> {
    const streamName = uniqueName('reset-api');
    const applicationName = uniqueName('reset-api-app');
    await createStream(local().kinesis, streamName, 2);
    await createTables({ dynamodb: local().dynamodb, applicationName });
    return { streamName, applicationName, options: { dynamodb: local().dynamodb, kinesis: local().kinesis, applicationName, streamName, to: 'TRIM_HORIZON' } };
  }

  const store = (applicationName: string, clientId: string, now: () => number = Date.now) => new DynamoLeaseStore({
    dynamo: new Dynamo(local().dynamodb), table: `${applicationName}_checkpoints`, clientId, clientName: `${clientId}-host`, leaseTtlMs: TTL_MS, now,
  });
  const captured = async (s: DynamoLeaseStore, shardId: string): Promise<HeldLease> => {
    const held = await firstValueFrom(s.capture(shardId));
    if (held === undefined) throw new Error(`capture of ${shardId} failed`);
    return held;
  };
  const write = (o: ReturnType<DynamoLeaseStore['commit']>) => lastValueFrom(o, { defaultValue: undefined });

  it('resets every shard, says per shard what it was, and fences an owner that was only paused', async () => {
    const { applicationName, options } = await setup();
    // An owner that went quiet a TTL ago (GC pause, SIGSTOP): expired, but about to commit.
    const zombie = store(applicationName, 'zombie', () => Date.now() - TTL_MS - 1000);
    const lease = await captured(zombie, SHARD0);
    await write(zombie.commit(lease, { checkpoint: at(SEQ), finished: false }));

    // Not renewed while the reset watches it for a TTL: not live, whatever its clock.
    const result = await resetCheckpoints({ ...options, leaseTtlMs: WATCH_MS });
    expect(result).to.deep.equal({
      done: true,
      shards: [
        { shardId: SHARD0, outcome: 'reset', previous: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ }, finished: false },
        { shardId: SHARD1, outcome: 'reset', previous: undefined, finished: false },
      ],
    });
    const error = await write(zombie.commit(lease, { checkpoint: at(`${SEQ.slice(0, -1)}9`), finished: false })).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(LeaseLostError);
    for (const shardId of [SHARD0, SHARD1]) {
      expect(await firstValueFrom(zombie.read(shardId))).to.deep.include({ checkpoint: { type: 'TRIM_HORIZON' }, ownerId: undefined });
    }
  });

  it('without force, a live owner on one shard changes nothing: that shard is held (with its owner), the others skipped', async () => {
    const { applicationName, options } = await setup();
    // Live: its clock is five minutes behind, but it renews (every 300 ms, while the reset watches for 1.5 s).
    const owner = store(applicationName, 'live', () => Date.now() - 300_000);
    const lease = await captured(owner, SHARD1);
    await write(owner.commit(lease, { checkpoint: at(SEQ), finished: false }));
    const renewing = interval(300).pipe(concatMap(() => owner.renew(lease))).subscribe();

    const before = Date.now();
    const result = await resetCheckpoints({ ...options, to: 'LATEST', leaseTtlMs: WATCH_MS }).finally(() => renewing.unsubscribe());
    expect(result.done).to.equal(false);
    expect(result.shards.map((s) => [s.shardId, s.outcome])).to.deep.equal([[SHARD0, 'skipped'], [SHARD1, 'held']]);
    expect(result.shards[1]?.liveOwner).to.deep.include({ clientId: 'live', clientName: 'live-host' });
    expect(result.shards[1]?.liveOwner?.renewedAt?.getTime()).to.be.at.most(before);
    expect(await firstValueFrom(owner.read(SHARD0)), 'nothing written').to.equal(undefined);
    expect(await firstValueFrom(owner.read(SHARD1))).to.deep.include({ checkpoint: at(SEQ), ownerId: 'live', leaseCounter: lease.leaseCounter });
  });

  it('R10: the host\'s wall clock stepping back a minute while the reset watches does not make a crashed owner look live (the watch is monotonic)', async () => {
    const { applicationName, options } = await setup();
    const crashed = store(applicationName, 'crashed');
    const lease = await captured(crashed, SHARD0);
    await write(crashed.commit(lease, { checkpoint: at(SEQ), finished: false }));
    // The step comes as the watch begins (an NTP correction): Date.now() runs a minute behind from then on.
    const realDateNow = Date.now;
    let stepMs = 0;
    Date.now = () => realDateNow() + stepMs;
    const result = await resetCheckpoints({
      ...options, leaseTtlMs: WATCH_MS,
      onWatch: () => { stepMs = -60_000; },
    }).finally(() => { Date.now = realDateNow; });
    expect(result.shards.map((s) => [s.shardId, s.outcome])).to.deep.equal([[SHARD0, 'reset'], [SHARD1, 'reset']]);
  });

  it('with force, only the named shards: a live owner loses its lease and the next owner starts at the timestamp', async () => {
    const { applicationName, options } = await setup();
    const owner = store(applicationName, 'live');
    const lease = await captured(owner, SHARD1);
    const timestamp = new Date(Date.now() - 60_000);

    const result = await resetCheckpoints({ ...options, to: { timestamp }, shardIds: [SHARD1, SHARD1], force: true });
    expect(result.done).to.equal(true);
    expect(result.shards).to.have.length(1);
    expect(result.shards[0]).to.deep.include({ shardId: SHARD1, outcome: 'reset', previous: undefined });
    expect(result.shards[0]?.liveOwner?.clientId).to.equal('live');
    // The former owner is told its lease was revoked by a reset (newcomer trial 4: "lease lost to another client").
    const revoked = await write(owner.renew(lease)).catch((e: unknown) => e);
    expect(revoked).to.be.instanceOf(LeaseLostError).and.include({ revoked: true });
    expect((revoked as Error).message).to.equal(`lease on shard ${SHARD1} was revoked: its row names no owner now (a reset, such as kinsumer reset --force, or import-kcl); no other client holds it`);
    expect((await captured(store(applicationName, 'next'), SHARD1)).checkpoint).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp });
    // Once another client holds it, the loss is to that client.
    const taken = await write(owner.renew(lease)).catch((e: unknown) => e);
    expect(taken).to.be.instanceOf(LeaseLostError).and.include({ revoked: false });
    expect((taken as Error).message).to.equal(`lease on shard ${SHARD1} was lost to another client`);
    expect(await firstValueFrom(owner.read(SHARD0)), 'a shard not named is left alone').to.equal(undefined);
  });

  it('previous is where a new owner would have started: a reset to LATEST stands for its moment (and no stored field leaks out)', async () => {
    const { applicationName, options } = await setup();
    await resetCheckpoints({ ...options, to: 'LATEST', shardIds: [SHARD0] });
    const row = await firstValueFrom(store(applicationName, 'reader').read(SHARD0));
    const resetAt = row?.checkpoint?.type === 'LATEST' ? row.checkpoint.resetAt : undefined;
    expect(resetAt, 'the first reset\'s moment').to.be.instanceOf(Date);
    const again = await resetCheckpoints({ ...options, to: 'LATEST', shardIds: [SHARD0] });
    expect(again.shards[0]?.previous).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: resetAt });
  });

  it('bad input is a ConfigError naming the option, and nothing is written', async () => {
    const { applicationName, options } = await setup();
    const cases: Array<[string, unknown]> = [
      ['dynamodb', { ...options, dynamodb: undefined }],
      ['kinesis', { ...options, kinesis: {} }],
      ['applicationName', { ...options, applicationName: 'no spaces' }],
      ['streamName', { ...options, streamArn: 'arn:aws:kinesis:us-east-1:123456789012:stream/x' }],
      ['to', { ...options, to: 'yesterday' }],
      ['to', { ...options, to: { timestamp: new Date(Number.NaN) } }],
      ['to', { ...options, to: { timestamp: new Date(Date.now() + 3_600_000) } }],
      ['shardIds', { ...options, shardIds: [] }],
      ['shardIds', { ...options, shardIds: [SHARD0, 'shardId-000000000999'] }],
      ['force', { ...options, force: 'yes' }],
      ['leaseTtlMs', { ...options, leaseTtlMs: 0 }],
      ['leaseTTL', { ...options, leaseTTL: 5 }],
    ];
    for (const [option, bad] of cases) {
      const error = await resetCheckpoints(bad as ResetCheckpointsOptions).catch((e: unknown) => e);
      expect(error, option).to.be.instanceOf(ConfigError);
      expect((error as ConfigError).option, JSON.stringify((error as Error).message)).to.equal(option);
    }
    const unknown = await resetCheckpoints({ ...options, shardIds: ['shardId-000000000999'] }).catch((e: unknown) => e);
    expect((unknown as Error).message).to.contain('not a shard of stream').and.contain('shardId-000000000999');
    for (const shardId of [SHARD0, SHARD1]) expect(await firstValueFrom(store(applicationName, 'me').read(shardId))).to.equal(undefined);
  });

  it('a missing stream is a StreamNotFoundError, missing tables a TableNotFoundError', async () => {
    const { options } = await setup();
    expect(await resetCheckpoints({ ...options, streamName: 'no-such-stream' }).catch((e: unknown) => e)).to.be.instanceOf(StreamNotFoundError);
    const missing = await resetCheckpoints({ ...options, applicationName: 'no-such-app' }).catch((e: unknown) => e);
    expect(missing).to.be.instanceOf(TableNotFoundError);
    expect((missing as TableNotFoundError).table).to.equal('no-such-app_checkpoints');
  });
});
