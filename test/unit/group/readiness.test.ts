// Readiness that tells the truth (issue 32 item 6): status() says when the group cannot be reached
// — `unreachable` once no heartbeat has been accepted for two renewal intervals (the member stops
// emitting then too) — with the last error and the last accepted heartbeat, and `running` again
// once the table answers. The outage is injected by a port wrapper (a mock: no local server can be
// told to fail every call for a while).
import { expect } from 'chai';
import { NEVER, defer, throwError } from 'rxjs';
import { awsError } from '../../../src/testing/memory-stream.js';
import { FAST, MemoryGroup } from '../../support/memory-group.js';

describe('status() through a DynamoDB outage (virtual time)', function () {
  this.timeout(60_000);

  it('says unreachable (with lastError and lastHeartbeatAt) while the heartbeat fails for longer than two renewal intervals, running again after', async () => {
    const group = new MemoryGroup(1);
    const outage = { on: false };
    const failing = <T extends object>(port: T): T => new Proxy(port, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const result = (value as (...a: unknown[]) => unknown).apply(target, args);
          if (typeof result !== 'object' || result === null || !('subscribe' in result)) return result;
          return defer(() => (outage.on ? throwError(() => awsError('InternalServerError', { message: 'simulated outage', status: 500 })) : (result as never)));
        };
      },
    });
    const a = group.join('a', { wrap: (ports) => ({ ...ports, store: failing(ports.store), membership: failing(ports.membership), metadata: failing(ports.metadata) }) });
    await group.scheduler.until(() => group.counts().get('a') === 1, 'a holds the shard', 20_000);
    await group.scheduler.advanceBy(FAST.leaseTtlMs);
    const healthy = a.kinsumer.status();
    expect(healthy.state).to.equal('running');
    expect(healthy.lastHeartbeatAt).to.be.instanceOf(Date);
    expect(group.scheduler.now() - (healthy.lastHeartbeatAt?.getTime() ?? 0)).to.be.at.most(FAST.leaseTtlMs / 3 + 50);

    outage.on = true;
    const outageAt = group.scheduler.now();
    await group.scheduler.until(() => a.kinsumer.status().state === 'unreachable', 'unreachable', 4 * FAST.leaseTtlMs, 10);
    const status = a.kinsumer.status();
    expect(group.scheduler.now() - outageAt).to.be.at.most(2 * (FAST.leaseTtlMs / 3) + 50);
    expect(status.lastError?.error.message).to.match(/simulated outage/);
    expect(status.lastHeartbeatAt?.getTime()).to.be.at.most(outageAt);
    // Through a minute of outage it never says running.
    for (let i = 0; i < 60; i += 1) {
      await group.scheduler.advanceBy(1000);
      expect(a.kinsumer.status().state, `${i + 1} s into the outage`).to.equal('unreachable');
    }
    outage.on = false;
    await group.scheduler.until(() => a.kinsumer.status().state === 'running', 'running again', 4 * FAST.leaseTtlMs, 10);
    expect(a.kinsumer.status().lastHeartbeatAt?.getTime()).to.be.above(outageAt + 60_000);
    await group.stopAll();
  });

  it('a heartbeat that never answers is sent again after one renewal interval of the client\'s own clock: another member never takes its leases', async () => {
    const group = new MemoryGroup(2);
    const hang = { next: false };
    const a = group.join('a', {
      wrap: (ports) => ({
        ...ports,
        membership: new Proxy(ports.membership, {
          get: (target, property, receiver): unknown => (property === 'heartbeat'
            ? (...args: Parameters<typeof target.heartbeat>) => {
              if (!hang.next) return target.heartbeat(...args);
              hang.next = false;
              return NEVER;
            }
            : Reflect.get(target, property, receiver)),
        }),
      }),
    });
    await group.scheduler.until(() => group.counts().get('a') === 2, 'a holds both shards', 20_000);
    const b = group.join('b');
    await group.scheduler.until(() => group.counts().get('a') === 1 && group.counts().get('b') === 1, 'one shard each', 20_000);
    hang.next = true;
    const hungAt = group.scheduler.now();
    await group.scheduler.until(() => a.events.some((e) => e.type === 'retrying' && e.operation === 'heartbeat'), 'the hung heartbeat given up', 4 * FAST.leaseTtlMs, 10);
    expect(group.scheduler.now() - hungAt, 'at most the wait for the next heartbeat and one renewal interval').to.be.at.most(2 * (FAST.leaseTtlMs / 3) + 50);
    await group.scheduler.advanceBy(3 * FAST.leaseTtlMs);
    expect(group.counts().get('a'), 'a kept its shard').to.equal(1);
    expect(b.events.filter((e) => e.type === 'lease-acquired')).to.have.length(1);
    await group.stopAll();
  });
});
