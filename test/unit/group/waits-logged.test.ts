// What the logger says while a client waits for another's leases (issue 34 item 4, newcomer trial
// 4 §2c): a healthy join is routine (info), a wait that outlives one shard check is a warning; the
// holder is named by its clientName with its id shortened; a peer that stops renewing is said to
// be waited for, with when its lease expires. Virtual time, in-memory stores.
import { expect } from 'chai';
import { FAST, MemoryGroup } from '../../support/memory-group.js';
import { type TimedLogLine, timedLogger } from '../../support/log-lines.js';

const ALPHA = '3f1c958e-ed13-4395-8c19-d2464fab9bf5';
const BETA = '91cd230f-5b7e-4a41-9d0c-6c2f0b1e4a77';
const SHARDS = ['shardId-000000000000', 'shardId-000000000001'];

const says = (lines: readonly TimedLogLine[], level: TimedLogLine['level'], pattern: RegExp) => lines.filter((l) => l.level === level && pattern.test(l.msg ?? ''));

describe('waits, as the logger tells them (virtual time)', function () {
  this.timeout(30_000);

  it('a healthy join: the wait for a live holder is info, naming it by clientName and short id; no warning', async () => {
    const group = new MemoryGroup(2);
    group.join(ALPHA, { extra: { clientName: 'w-alpha' } });
    await group.scheduler.until(() => group.counts().get(ALPHA) === 2, 'alpha holds both shards', 20_000);
    await group.scheduler.advanceBy(FAST.shardCheckFrequencyMs);
    const lines: TimedLogLine[] = [];
    group.join(BETA, { extra: { clientName: 'w-beta', logger: timedLogger(lines, () => group.scheduler.now()) } });
    await group.scheduler.until(() => group.counts().get(BETA) === 1, 'beta takes its share', 20_000);
    await group.scheduler.advanceBy(3 * FAST.shardCheckFrequencyMs);

    expect(lines.filter((l) => l.level === 'warn' || l.level === 'error'), JSON.stringify(lines)).to.deep.equal([]);
    const waiting = says(lines, 'info', /waiting for/);
    expect(waiting).to.have.length(1);
    expect(waiting[0]?.msg).to.contain('leased by w-alpha (3f1c958e…)').and.not.contain(ALPHA);
    await Promise.all(group.members.map((m) => group.stop(m)));
  });

  it('behind a holder that ended without stop(): info at once, a warning once the wait outlives one shard check, the holder by name', async () => {
    const group = new MemoryGroup(2);
    const alpha = group.join(ALPHA, { extra: { clientName: 'w-alpha' } });
    await group.scheduler.until(() => group.counts().get(ALPHA) === 2, 'alpha holds both shards', 20_000);
    await group.scheduler.advanceBy(FAST.shardCheckFrequencyMs);
    alpha.pause(); // a crash: no stop(), no release
    const lines: TimedLogLine[] = [];
    group.join(BETA, { extra: { clientName: 'w-beta', logger: timedLogger(lines, () => group.scheduler.now()) } });
    await group.scheduler.until(() => group.counts().get(BETA) === 2, 'beta holds both shards', 30_000);

    // Sticky assignment: first the shard the group gives it while alpha's row is live, then the other.
    const info = says(lines, 'info', /waiting for/);
    const warned = says(lines, 'warn', /waiting/);
    expect(info, JSON.stringify(lines)).to.have.length.at.least(1);
    expect(warned, JSON.stringify(lines)).to.have.length(1);
    const waitedMs = (warned[0]?.atMs ?? 0) - (info[0]?.atMs ?? 0);
    // One shard check (and the capture poll after it) without a hand-over, not sooner, not much later.
    expect(waitedMs).to.be.within(FAST.shardCheckFrequencyMs, FAST.shardCheckFrequencyMs + 2 * FAST.throttleDelayMs);
    expect(warned[0]?.msg).to.match(/^kinsumer: still waiting for shardId-00000000000\d after \d+ ms, leased by w-alpha \(3f1c958e…\), /)
      .and.contain('stop()').and.match(/in \d+ ms \(leaseTtlMs\)$/);
    alpha.resume();
    await Promise.all(group.members.map((m) => group.stop(m)));
  });

  it('a peer that stops renewing while this client reads: a warning that its shards are waited for and when its lease expires, before they are taken', async () => {
    const group = new MemoryGroup(2);
    const alpha = group.join(ALPHA, { extra: { clientName: 'w-alpha' } });
    await group.scheduler.until(() => group.counts().get(ALPHA) === 2, 'alpha holds both shards', 20_000);
    const lines: TimedLogLine[] = [];
    group.join(BETA, { extra: { clientName: 'w-beta', logger: timedLogger(lines, () => group.scheduler.now()) } });
    await group.scheduler.until(() => group.counts().get(BETA) === 1 && group.counts().get(ALPHA) === 1, 'one shard each', 20_000);
    await group.scheduler.advanceBy(2 * FAST.shardCheckFrequencyMs);
    const alphaShard = SHARDS.find((s) => group.owners().get(s) === ALPHA) ?? '';
    const crashedAtMs = group.scheduler.now();
    alpha.pause();
    await group.scheduler.until(() => group.counts().get(BETA) === 2, 'beta takes alpha\'s shard', 30_000);
    const takenAtMs = group.scheduler.now();

    const told = says(lines, 'warn', /has not renewed/);
    expect(told, JSON.stringify(lines)).to.have.length(1);
    const [line] = told;
    expect(line?.msg).to.match(new RegExp(`^kinsumer: w-alpha \\(3f1c958e…\\) has not renewed its clients row for \\d+ ms: if it ended without stop\\(\\), its shard ${alphaShard} is taken over once its lease expires, in about \\d+ ms \\(leaseTtlMs\\)$`));
    expect(line?.atMs).to.be.above(crashedAtMs).and.below(takenAtMs);
    // Said within two shard checks of the last renewal, not at the expiry.
    expect((line?.atMs ?? Infinity) - crashedAtMs).to.be.at.most(3 * FAST.shardCheckFrequencyMs);
    alpha.resume();
    await Promise.all(group.members.map((m) => group.stop(m)));
  });
});
