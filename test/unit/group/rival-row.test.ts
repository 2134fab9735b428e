import { expect } from 'chai';
import { ConfigError } from '../../../src/index.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';

const START_TIMEOUT_MS = 20_000;

// Two processes configured with one clientId (a copied config, two pods of a StatefulSet during a
// slow termination): the one that finds the other's live row in its place waits and says so.
describe('one clientId, one process (virtual time, in-memory stores)', function () {
  this.timeout(60_000);

  it('a second live process with the same clientId captures nothing, reports duplicate-client, and fails with ConfigError after startTimeoutMs', async () => {
    const group = new MemoryGroup(2);
    const first = group.join('same');
    await group.scheduler.until(() => group.counts().get('same') === 2, 'the first process holds both shards', 20_000);
    const startedAt = group.scheduler.now();
    const second = group.join('same', { extra: { startTimeoutMs: START_TIMEOUT_MS }, keepFailure: true });
    await group.scheduler.until(() => second.events.some((e) => e.type === 'duplicate-client'), 'duplicate-client', 10 * FAST.shardCheckFrequencyMs);
    expect(second.events.find((e) => e.type === 'duplicate-client')).to.deep.equal({ type: 'duplicate-client', clientId: 'same' });
    // Up to just before the bound: waiting, holding nothing, failing nothing.
    await group.scheduler.advanceTo(startedAt + START_TIMEOUT_MS - FAST.shardCheckFrequencyMs - 1);
    expect(second.errors).to.deep.equal([]);
    const tookMs = await group.scheduler.until(() => second.errors.length > 0, 'the second process to fail', 10 * FAST.shardCheckFrequencyMs, 10);
    const failedAfterMs = group.scheduler.now() - startedAt;
    expect(failedAfterMs, `failed ${tookMs} ms after the last check point`).to.be.within(START_TIMEOUT_MS, START_TIMEOUT_MS + 2 * FAST.shardCheckFrequencyMs);
    const [error] = second.errors;
    expect(error).to.be.instanceOf(ConfigError);
    expect((error as ConfigError).option).to.equal('clientId');
    expect((error as ConfigError).message).to.match(/another live process/);
    expect(second.events.filter((e) => e.type === 'lease-acquired'), 'the second process captured nothing').to.deep.equal([]);
    expect(first.events.filter((e) => e.type === 'lease-lost'), 'the first process lost nothing').to.deep.equal([]);
    expect(group.counts().get('same')).to.equal(2);
    await first.kinsumer.stop();
  });

  it('a restart that overlaps the old process\'s graceful stop waits for it, then takes the shards, with no ConfigError', async () => {
    const group = new MemoryGroup(2);
    const old = group.join('same');
    await group.scheduler.until(() => group.counts().get('same') === 2, 'the old process holds both shards', 20_000);
    const fresh = group.join('same', { extra: { startTimeoutMs: START_TIMEOUT_MS }, keepFailure: true });
    // The new process is up for a few checks before the old one is told to stop.
    await group.scheduler.advanceBy(3 * FAST.shardCheckFrequencyMs);
    let stoppedAt: number | undefined;
    void old.kinsumer.stop().then(() => { stoppedAt = group.scheduler.now(); });
    await group.scheduler.until(() => fresh.events.filter((e) => e.type === 'lease-acquired').length === 2, 'the new process to hold both shards', 10 * FAST.leaseTtlMs);
    const firstCaptureAt = group.scheduler.now();
    expect(stoppedAt, 'the old process had finished its stop').to.not.equal(undefined);
    expect(stoppedAt).to.be.at.most(firstCaptureAt);
    expect(old.events.filter((e) => e.type === 'lease-lost'), 'nothing was taken from the old process').to.deep.equal([]);
    await group.scheduler.advanceBy(2 * START_TIMEOUT_MS);
    expect(fresh.errors).to.deep.equal([]);
    expect(group.counts().get('same')).to.equal(2);
    await fresh.kinsumer.stop();
  });
});
