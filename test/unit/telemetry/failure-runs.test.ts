// An outage in the log (issue 34 item 4, newcomer trial 4 §2c: 97 warning lines in 65 s per
// process while DynamoDB was down, forever): one line when a run of failures starts, a summary
// every 30 s (how many, which operations, the last error), one line when the failures stop.
// Milliseconds in log lines are whole numbers. Virtual time, in-memory stores.
import { expect } from 'chai';
import { logEvent } from '../../../src/telemetry/event-log.js';
import { stderrLogger } from '../../../src/telemetry/stderr-logger.js';
import { KinsumerError } from '../../../src/index.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';
import { type TimedLogLine, timedLogger } from '../../support/log-lines.js';
import { outage } from '../../support/port-wrappers.js';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });

describe('failures in the log: a run of them, not a line each (virtual time)', function () {
  this.timeout(60_000);

  it('a minute of DynamoDB refusing connections: one line at the start, a summary every 30 s, one when it recovers', async () => {
    const group = new MemoryGroup(2);
    group.stream.putRecords(Array.from({ length: 20 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    let down = false;
    const lines: TimedLogLine[] = [];
    const member = group.join('a', {
      extra: { logger: timedLogger(lines, () => group.scheduler.now()) },
      wrap: (ports) => ({
        ...ports,
        store: outage(ports.store, () => down, refused),
        membership: outage(ports.membership, () => down, refused),
        metadata: outage(ports.metadata, () => down, refused),
      }),
    });
    await group.scheduler.until(() => member.received.length === 20, 'every record', 20_000);
    await group.scheduler.advanceBy(2 * FAST.shardCheckFrequencyMs);
    const downAtMs = group.scheduler.now();
    down = true;
    await group.scheduler.advanceBy(60_000);
    const upAtMs = group.scheduler.now();
    down = false;
    await group.scheduler.advanceBy(60_000);

    const loud = (from: number, to: number) => lines.filter((l) => (l.level === 'warn' || l.level === 'error') && l.atMs >= from && l.atMs < to);
    const during = loud(downAtMs, upAtMs);
    const retries = lines.filter((l) => l.level === 'debug' && /retrying/.test(l.msg ?? '') && l.atMs < upAtMs);
    // What the minute prints: its first failure, two summaries (at 30 and 60 s), nothing else.
    expect(during.map((l) => l.msg), JSON.stringify(during.slice(0, 4))).to.have.length.at.most(3);
    expect(during[0]?.msg).to.match(/^kinsumer: [a-zA-Z ]+( on shardId-\S+)? failed, retrying in \d+ ms: connect ECONNREFUSED 127\.0\.0\.1:9; further failures are summed up every 30 s until they stop$/);
    expect(during[0]?.atMs).to.be.below(downAtMs + FAST.shardCheckFrequencyMs + 1);
    const summary = during[1];
    expect(summary?.atMs).to.equal((during[0]?.atMs ?? 0) + 30_000);
    expect(summary?.msg).to.match(/^kinsumer: still failing: \d+ failures in the last 30 s \(([a-zA-Z ]+ ×\d+, )*[a-zA-Z ]+ ×\d+( and \d+ more)?\), the last: connect ECONNREFUSED 127\.0\.0\.1:9$/);
    // Every failure is still there for a logger at debug.
    expect(retries.length).to.be.at.least(60);
    const after = loud(upAtMs, Infinity);
    const recovered = after.filter((l) => /^kinsumer: recovered/.test(l.msg ?? ''));
    expect(recovered, JSON.stringify(after.slice(0, 3))).to.have.length(1);
    expect(recovered[0]?.msg).to.match(/^kinsumer: recovered: no failure for \d+ ms, past when the retries were due \(\d+ failures over \d+ ms: .*\)$/);
    expect(recovered[0]?.atMs).to.be.below(upAtMs + 30_000);
    await group.stop(member);
  });

  it('milliseconds are whole numbers in messages and in the JSON of the default logger', () => {
    const written: string[] = [];
    const logger = stderrLogger((line) => written.push(line));
    logEvent(logger, { type: 'start-failing', attempts: 3, error: new KinsumerError('boom'), giveUpInMs: 59509.943359375 });
    logEvent(logger, { type: 'drain-gave-up', shardId: 's0', unacked: 2, waitedMs: 11250.91015625 });
    expect(written.join('')).to.not.match(/\d\.\d/);
    expect(written[0]).to.contain('still trying for 59510 ms').and.contain('"giveUpInMs":59510');
    expect(written[1]).to.contain('after 11251 ms').and.contain('"waitedMs":11251');
  });
});
