// The waits of the first hour say what they wait for (issue 26 item 1, newcomer trial 3 §3): a
// client that starts behind the leases of a process that ended without stop(), or behind its own
// clientId's row, says which shards, why and how long at most — and gets them within that bound;
// a stop says what its drain waits for, and says so again when it gives up; a start that keeps
// failing warns after its first failures, long before startTimeoutMs. Virtual time, in-memory stores.
import { expect } from 'chai';
import { throwError } from 'rxjs';
import type { KinsumerEvent } from '../../../src/types.js';
import { drainBoundMs } from '../../../src/lease/lease-session.js';
import { awsError } from '../../../src/testing/memory-stream.js';
import { FAST, type Member, MemoryGroup } from '../../support/memory-group.js';
import { type LogLine as Line, capturingLogger } from '../../support/log-lines.js';
import { override } from '../../support/port-wrappers.js';

type Timed = { readonly atMs: number; readonly event: KinsumerEvent };
type Waiting = Extract<KinsumerEvent, { type: 'waiting' }>;

/** Every event of `member` from now on, with the virtual time it came at. */
function timedEvents(group: MemoryGroup, member: Member): Timed[] {
  const seen: Timed[] = [];
  member.kinsumer.events$.subscribe((event) => seen.push({ atMs: group.scheduler.now(), event }));
  return seen;
}

function waits(seen: readonly Timed[]): { atMs: number; event: Waiting }[] {
  return seen.flatMap((t) => (t.event.type === 'waiting' ? [{ atMs: t.atMs, event: t.event }] : []));
}

function acquiredAt(seen: readonly Timed[], shardId: string): number | undefined {
  return seen.find((t) => t.event.type === 'lease-acquired' && t.event.shardId === shardId)?.atMs;
}

const DRAIN_BOUND_MS = drainBoundMs(FAST);

describe('waits that say what they wait for (virtual time)', function () {
  this.timeout(30_000);

  it('a client started behind the leases of a process that ended without stop() says which shards, who holds them and how long at most, and gets each within that bound', async () => {
    const group = new MemoryGroup(2);
    const old = group.join('old');
    await group.scheduler.until(() => group.counts().get('old') === 2, 'the old process holds both shards', 20_000);
    await group.scheduler.advanceBy(FAST.shardCheckFrequencyMs); // it ran a while: its clients row lists its shards
    old.pause(); // Ctrl-C: no stop(), no release; its rows stay as they were
    const lines: Line[] = [];
    const startedAtMs = group.scheduler.now();
    const fresh = group.join('fresh', { extra: { logger: capturingLogger(lines) } });
    const seen = timedEvents(group, fresh);
    await group.scheduler.until(() => group.counts().get('fresh') === 2, 'the new process holds both shards', 30_000, 10);

    const said = waits(seen);
    expect(said.length).to.be.at.least(1);
    const [first] = said;
    expect(first?.event).to.include({ reason: 'leases-held', held: 0 });
    expect(first?.event.holders).to.deep.equal(['old']);
    // Said at once (its first capture poll), not after the wait.
    expect((first?.atMs ?? Infinity) - startedAtMs).to.be.at.most(2 * FAST.throttleDelayMs);
    expect(first?.event.boundMs).to.be.within(FAST.leaseTtlMs - FAST.throttleDelayMs, FAST.leaseTtlMs);
    // The bound holds: every shard waited for is taken once its lease expired, at the next capture poll.
    for (const { atMs, event } of said) {
      for (const shardId of event.shardIds) {
        expect((acquiredAt(seen, shardId) ?? Infinity) - atMs, `${shardId} within the bound`).to.be.at.most(event.boundMs + 1.25 * FAST.throttleDelayMs);
      }
    }
    // While it reads nothing, the logger gets a warning (the default logger prints warnings).
    const warned = lines.filter((l) => l.level === 'warn' && /waiting/.test(l.msg ?? ''));
    expect(warned).to.have.length.at.least(1);
    expect(warned[0]?.msg).to.contain('shardId-').and.contain('old').and.contain('stop()');
    old.resume();
    await group.stopAll();
  });

  it('a restart with the same clientId (no stop()) waits for nothing: it takes its place and holds its shards within a capture poll, saying no wait', async () => {
    const timings = { shardCheckFrequencyMs: 1500, leaseTtlMs: 3200, leaderActionFrequencyMs: 1500 };
    const group = new MemoryGroup(2, timings);
    // Woken up at the end, the old process finds its place taken (ClientReplacedError): kept, not rethrown.
    const old = group.join('dev-1', { keepFailure: true });
    await group.scheduler.until(() => group.counts().get('dev-1') === 2, 'the old process holds both shards', 20_000);
    await group.scheduler.advanceBy(timings.shardCheckFrequencyMs);
    old.pause();
    const startedAtMs = group.scheduler.now();
    const lines: Line[] = [];
    const restarted = group.join('dev-1', { extra: { logger: capturingLogger(lines) } });
    const seen = timedEvents(group, restarted);
    await group.scheduler.until(() => ['shardId-000000000000', 'shardId-000000000001'].every((id) => acquiredAt(seen, id) !== undefined), 'both shards captured', 30_000, 10);
    for (const shardId of ['shardId-000000000000', 'shardId-000000000001']) {
      expect((acquiredAt(seen, shardId) ?? Infinity) - startedAtMs, `${shardId} at once`).to.be.at.most(FAST.throttleDelayMs);
    }
    expect(waits(seen)).to.deep.equal([]);
    expect(seen.some((t) => t.event.type === 'duplicate-client')).to.equal(false);
    expect(lines.filter((l) => l.level === 'warn')).to.deep.equal([]);
    old.resume();
    await group.stopAll();
    expect(old.failure).to.have.property('name', 'ClientReplacedError');
  });

  it('a stop with unacked records says what its drain waits for, then that it gave up and that the next owner gets them again', async () => {
    const group = new MemoryGroup(1);
    group.stream.putRecords(Array.from({ length: 5 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    const lines: Line[] = [];
    const member = group.join('a', { ack: (record) => new TextDecoder().decode(record.data) === 'r0', extra: { logger: capturingLogger(lines) } });
    await group.scheduler.until(() => member.received.length === 5, 'every record', 10_000);
    const seen = timedEvents(group, member);
    const stopAtMs = group.scheduler.now();
    let stopped = false;
    void member.kinsumer.stop().then(() => { stopped = true; });
    await group.scheduler.until(() => stopped, 'stop()', 10_000, 10);

    const types = seen.map((t) => t.event.type);
    expect(types.slice(0, 1)).to.deep.equal(['draining']);
    expect(seen[0]?.event).to.deep.equal({ type: 'draining', shardIds: ['shardId-000000000000'], unacked: { 'shardId-000000000000': 4 }, boundMs: DRAIN_BOUND_MS });
    const gaveUp = seen.find((t) => t.event.type === 'drain-gave-up');
    expect(gaveUp?.event).to.deep.equal({ type: 'drain-gave-up', shardId: 'shardId-000000000000', unacked: 4, waitedMs: DRAIN_BOUND_MS });
    expect(gaveUp?.atMs).to.equal(stopAtMs + DRAIN_BOUND_MS);
    expect(types.indexOf('drain-gave-up')).to.be.below(types.indexOf('lease-released'));
    // At warn (what the default logger prints): soon that it still waits, and when it gave up.
    const warned = lines.filter((l) => l.level === 'warn');
    expect(warned.map((l) => l.msg), JSON.stringify(warned)).to.have.length(2);
    expect(warned[0]?.msg).to.equal(`kinsumer: stop() still waits for 4 unacked records, up to ${DRAIN_BOUND_MS - FAST.commitFrequencyMs} ms more; `
      + 'then it releases without them and the next owner gets them again');
    expect(warned[1]?.msg).to.contain('gave up waiting for 4 unacked records').and.contain('next owner');
  });

  it('a stop whose records are all acked during the drain neither gives up nor warns', async () => {
    const group = new MemoryGroup(1);
    group.stream.putRecords(Array.from({ length: 3 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    const lines: Line[] = [];
    const member = group.join('a', { ack: () => false, extra: { logger: capturingLogger(lines) } });
    await group.scheduler.until(() => member.received.length === 3, 'every record', 10_000);
    const seen = timedEvents(group, member);
    let stopped = false;
    void member.kinsumer.stop().then(() => { stopped = true; });
    await group.scheduler.advanceBy(100);
    for (const record of member.received) record.ack();
    await group.scheduler.until(() => stopped, 'stop()', 10_000, 10);
    expect(seen.map((t) => t.event.type)).to.include('draining').and.not.include('drain-gave-up');
    expect(lines.filter((l) => l.level === 'warn')).to.deep.equal([]);
  });

  it('a start that keeps failing warns once after its first three failures (start-failing), long before startTimeoutMs', async () => {
    const group = new MemoryGroup(1, { startTimeoutMs: 60_000 });
    const failure = awsError('InternalServerError');
    const lines: Line[] = [];
    const member = group.join('a', {
      keepFailure: true,
      extra: { logger: capturingLogger(lines) },
      wrap: (ports) => ({ ...ports, membership: override(ports.membership, { heartbeat: () => throwError(() => failure) }) }),
    });
    const seen = timedEvents(group, member);
    const startedAtMs = group.scheduler.now();
    await group.scheduler.until(() => seen.some((t) => t.event.type === 'start-failing'), 'start-failing', 20_000);
    const failing = seen.filter((t) => t.event.type === 'start-failing');
    expect(failing).to.have.length(1);
    expect(failing[0]?.event).to.deep.include({ attempts: 3, error: failure });
    const atMs = failing[0]?.atMs ?? Infinity;
    expect(atMs - startedAtMs).to.be.at.most(3 * FAST.shardCheckFrequencyMs);
    expect((failing[0]?.event as Extract<KinsumerEvent, { type: 'start-failing' }>).giveUpInMs).to.equal(60_000 - (atMs - startedAtMs));
    // Exactly three failures before it.
    expect(seen.filter((t) => t.event.type === 'retrying' && t.atMs <= atMs)).to.have.length(3);
    await group.scheduler.advanceBy(10 * FAST.shardCheckFrequencyMs);
    expect(seen.filter((t) => t.event.type === 'start-failing')).to.have.length(1);
    expect(lines.filter((l) => l.level === 'warn' && /cannot start/.test(l.msg ?? ''))).to.have.length(1);
    await member.kinsumer.stop();
  });
});
