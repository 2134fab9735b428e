// examples/health-probes.ts: the Kubernetes answers for every state of consumer.status().
import { expect } from 'chai';
import { liveness, readiness } from '../../../examples/health-probes.js';
import type { KinsumerState, KinsumerStatus } from '../../../src/types.js';

const status = (state: KinsumerState, shards = 0, members = 3): KinsumerStatus => ({
  clientId: 'c', clientName: 'n', state, leader: false, members, connections: {},
  shards: Array.from({ length: shards }, (_, i) => ({ shardId: `s${i}`, streamName: 'events', fencingToken: 1, checkpoint: undefined, inFlight: 0, pending: 0, millisBehindLatest: 0 })),
  streams: shards === 0 ? [] : [{ streamName: 'events', shards, pending: 0, inFlight: 0, millisBehindLatest: 0 }],
});

describe('examples/health-probes (pure)', () => {
  it('liveness: 503 only for failed and stopped; starting, running, paused and stopping are alive', () => {
    const states: KinsumerState[] = ['starting', 'running', 'paused', 'stopping', 'stopped', 'failed'];
    expect(states.map((state) => [state, liveness(status(state)).code])).to.deep.equal([
      ['starting', 200], ['running', 200], ['paused', 200], ['stopping', 200], ['stopped', 503], ['failed', 503],
    ]);
    expect(liveness(status('failed')).body).to.deep.equal({ status: 'failed', state: 'failed' });
  });

  it('readiness: 200 only while running and in the assignment (members counted), with or without shards (a member standing by is ready); 503 with the reason otherwise', () => {
    expect(readiness(status('running', 2))).to.deep.equal({ code: 200, body: { ready: true, state: 'running', shards: 2, members: 3 } });
    expect(readiness(status('running', 0)).code).to.equal(200);
    // Registered, but no shard check yet: not in the assignment.
    expect(readiness(status('running', 0, 0))).to.deep.equal({ code: 503, body: { ready: false, reason: 'joining: registered, waiting for its first shard check', state: 'running', shards: 0, members: 0 } });
    for (const state of ['starting', 'paused', 'stopping', 'stopped', 'failed'] as const) {
      const answer = readiness(status(state, 1));
      expect(answer.code, state).to.equal(503);
      expect(answer.body).to.include({ ready: false, state });
      expect(answer.body.reason).to.be.a('string').that.matches(new RegExp(`^${state}`));
    }
  });
});
