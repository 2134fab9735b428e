// Every call to the stores and the stream is bounded by requestTimeoutMs (design §7.1): a call that
// never answers (a hung socket) is given up after requestTimeoutMs, reported as `retrying` and sent
// again, on every path — commit, renew, release, capture, GetRecords, heartbeat. And no failure of a
// stop is swallowed. Virtual time, the real client over the in-memory backends.
import { expect } from 'chai';
import { throwError } from 'rxjs';
import type { KinsumerPorts } from '../../../src/ports/backend.js';
import type { KinsumerEvent } from '../../../src/types.js';
import { awsError } from '../../../src/testing/memory-stream.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';
import { type HangCounter, hang, override } from '../../support/port-wrappers.js';

const REQUEST_TIMEOUT_MS = 1000;

type Retrying = Extract<KinsumerEvent, { type: 'retrying' }>;
const retryings = (events: readonly KinsumerEvent[], operation: string): Retrying[] =>
  events.filter((e): e is Retrying => e.type === 'retrying' && e.operation === operation);

function putRecords(group: MemoryGroup, count: number): void {
  group.stream.putRecords(Array.from({ length: count }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
}

type Port = 'store' | 'stream' | 'membership';

/** Ports where the first call of `port.method` never answers. */
function hangFirst(port: Port, method: string, counter: HangCounter): (ports: KinsumerPorts) => KinsumerPorts {
  return (ports) => ({ ...ports, [port]: hang(ports[port] as never, method as never, counter) });
}

describe('every call bounded by requestTimeoutMs (virtual time)', function () {
  this.timeout(60_000);

  const cases: { port: Port; method: string; operation: string; idle?: boolean }[] = [
    { port: 'store', method: 'capture', operation: 'capture' },
    { port: 'store', method: 'commit', operation: 'commit' },
    // A lease kept by its client's heartbeat renews its own row only as a keep-alive (every minute).
    { port: 'store', method: 'renew', operation: 'renew', idle: true },
    { port: 'stream', method: 'getRecords', operation: 'GetRecords' },
    { port: 'membership', method: 'heartbeat', operation: 'heartbeat' },
  ];
  for (const { port, method, operation, idle } of cases) {
    it(`a ${method} that never answers is given up after requestTimeoutMs, reported as retrying (${operation}), and sent again`, async () => {
      const group = new MemoryGroup(1, { requestTimeoutMs: REQUEST_TIMEOUT_MS });
      if (idle !== true) putRecords(group, 10);
      const counter: HangCounter = { hung: 0, calls: 0 };
      const member = group.join('a', { wrap: hangFirst(port, method, counter) });
      const timed: { event: KinsumerEvent; atMs: number }[] = [];
      let hungAtMs: number | undefined;
      member.kinsumer.events$.subscribe((event) => timed.push({ event, atMs: group.scheduler.now() }));
      await group.scheduler.until(() => {
        if (counter.hung === 1) hungAtMs ??= group.scheduler.now();
        return counter.calls > counter.hung && retryings(member.events, operation).length > 0;
      }, `the ${method} sent again after the hung one`, idle === true ? 90_000 : 20_000, 10);
      const [retry] = retryings(member.events, operation);
      expect(retry?.error.name).to.equal('RequestTimeoutError');
      const retriedAtMs = timed.find(({ event }) => event === retry)?.atMs ?? Number.NaN;
      expect(retriedAtMs - (hungAtMs ?? Number.NaN)).to.be.within(REQUEST_TIMEOUT_MS - 10, REQUEST_TIMEOUT_MS + 10);
      if (idle === true) {
        // The lease outlives the hung renewal: still held after several TTLs.
        await group.scheduler.advanceBy(3 * FAST.leaseTtlMs);
        expect(member.events.filter((e) => e.type === 'lease-lost')).to.deep.equal([]);
        expect(group.owners().get('shardId-000000000000')).to.equal('a');
      } else {
        await group.scheduler.until(() => member.received.length >= 10, 'every record', 20_000);
      }
      await member.kinsumer.stop();
    });
  }

  it('a release that never answers is sent again after requestTimeoutMs: stop() completes within shutdownTimeoutMs, the acked position written', async () => {
    const group = new MemoryGroup(1, { requestTimeoutMs: REQUEST_TIMEOUT_MS });
    putRecords(group, 10);
    const counter: HangCounter = { hung: 0, calls: 0 };
    const member = group.join('a', { wrap: hangFirst('store', 'release', counter) });
    await group.scheduler.until(() => member.received.length === 10 && group.checkpoints.rows()[0]?.checkpoint !== undefined, 'every record', 20_000);
    let settled: unknown = 'pending';
    void member.kinsumer.stop().then(() => { settled = 'resolved'; }, (error: unknown) => { settled = error; });
    await group.scheduler.until(() => settled !== 'pending', 'stop() to settle', 2 * FAST.shutdownTimeoutMs);
    expect(settled).to.equal('resolved');
    expect(counter).to.deep.equal({ hung: 1, calls: 2 });
    expect(retryings(member.events, 'release').map((e) => e.error.name)).to.deep.equal(['RequestTimeoutError']);
    const row = group.checkpoints.rows()[0];
    expect(row?.ownerId).to.equal(undefined);
    expect(row?.checkpoint).to.deep.equal({ type: 'position', position: { sequenceNumber: member.received[9]?.sequenceNumber } });
  });
});

describe('nothing swallowed on the way out (virtual time)', function () {
  this.timeout(30_000);

  it('the ShutdownTimeoutError of a stop started by the last unsubscribe is an error event', async () => {
    const group = new MemoryGroup(1, { requestTimeoutMs: REQUEST_TIMEOUT_MS });
    putRecords(group, 5);
    const counter: HangCounter = { hung: 0, calls: 0 };
    // Every release hangs: the stop cannot finish within shutdownTimeoutMs.
    const member = group.join('a', { wrap: (ports) => ({ ...ports, store: hang(ports.store, 'release', counter, () => true) }) });
    await group.scheduler.until(() => member.received.length === 5, 'every record', 20_000);
    member.subscription.unsubscribe();
    await group.scheduler.until(() => member.events.some((e) => e.type === 'error'), 'an error event', 3 * FAST.shutdownTimeoutMs);
    const reported = member.events.filter((e) => e.type === 'error').map((e) => (e.type === 'error' ? e.error : undefined));
    expect(reported.map((e) => e?.name)).to.deep.equal(['ShutdownTimeoutError']);
  });

  it('the leader\'s failed step-down when it leaves is an error event', async () => {
    const group = new MemoryGroup(1);
    const failure = awsError('InternalServerError');
    const member = group.join('a', {
      wrap: (ports) => ({ ...ports, metadata: override(ports.metadata, { stepDown: () => throwError(() => failure) }) }),
    });
    await group.scheduler.until(() => member.events.some((e) => e.type === 'leader-acquired'), 'leadership', 10_000);
    let stopped = false;
    void member.kinsumer.stop().then(() => { stopped = true; });
    await group.scheduler.until(() => stopped, 'stop()', 10_000);
    const reported = member.events.filter((e) => e.type === 'error').map((e) => (e.type === 'error' ? e.error : undefined));
    expect(reported).to.have.length(1);
    expect(reported[0] === failure || reported[0]?.cause === failure).to.equal(true);
  });
});
