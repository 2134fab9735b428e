import { expect } from 'chai';
import fc from 'fast-check';
import { combinedRate, DYNAMODB_FAULTS, faultRules, KINESIS_FAULTS } from './faults.js';
import { disruptions, failovers, recoveries } from './metrics.js';
import { pickAt, seededRandom } from './random.js';
import { ACTION_KINDS, busyMs, planSchedule, zombieHoldRange, type ScheduleOptions } from './schedule.js';
import type { ActionRecord } from './timeline.js';
import type { AckLine } from '../../examples/demo/ack-log.js';

const TTL = 3000;
const options = (overrides: Partial<ScheduleOptions> = {}): ScheduleOptions => ({
  durationMs: 45_000, workers: 3, seed: 7, leaseTtlMs: TTL, initialShards: 4, minShards: 2, maxShards: 8, ...overrides,
});

describe('chaos schedule (pure, seeded)', () => {
  it('the same seed gives the same schedule; another seed another one', () => {
    expect(planSchedule(options())).to.deep.equal(planSchedule(options()));
    expect(planSchedule(options({ seed: 8 }))).to.not.deep.equal(planSchedule(options()));
  });

  it('a 45 s window with 3 workers does every kind at least once, whatever the seed', () => {
    fc.assert(fc.property(fc.nat(1_000_000), (seed) => {
      const kinds = new Set(planSchedule(options({ seed })).map((a) => a.kind));
      expect([...kinds].sort()).to.deep.equal([...ACTION_KINDS].sort());
    }), { numRuns: 200 });
  });

  it('actions do not overlap, leave room to settle, and the last ends two lease TTLs before the window closes', () => {
    fc.assert(fc.property(fc.nat(1_000_000), fc.integer({ min: 10, max: 900 }), fc.integer({ min: 3, max: 5 }), (seed, seconds, workers) => {
      const durationMs = seconds * 1000;
      const plan = planSchedule(options({ seed, durationMs, workers }));
      plan.forEach((action, i) => {
        const next = plan[i + 1];
        const end = action.atMs + busyMs(action, TTL);
        if (next !== undefined) expect(next.atMs - end).to.be.at.least(0.5 * TTL - 1);
        expect(end).to.be.at.most(durationMs - 2 * TTL);
        expect(action.worker).to.be.within(0, workers - 1);
        expect(action.pick).to.be.within(0, 1);
      });
    }), { numRuns: 200 });
  });

  it('a zombie sleeps beyond the lease TTL (2 to 2.5 TTLs); a reshard holds nothing', () => {
    const plan = planSchedule(options({ durationMs: 600_000 }));
    const [low, high] = zombieHoldRange(TTL);
    for (const action of plan) {
      if (action.kind === 'zombie') expect(action.holdMs).to.be.within(low, high).and.greaterThan(TTL);
      if (action.kind === 'split' || action.kind === 'merge') expect(action.holdMs).to.equal(0);
    }
  });

  it('splits and merges keep the open shard count within bounds', () => {
    fc.assert(fc.property(fc.nat(1_000_000), (seed) => {
      let shards = 4;
      for (const action of planSchedule(options({ seed, durationMs: 600_000 }))) {
        if (action.kind === 'split') shards += 1;
        if (action.kind === 'merge') shards -= 1;
        expect(shards).to.be.within(2, 8);
      }
    }), { numRuns: 50 });
  });

  it('a window too short for anything plans nothing', () => {
    expect(planSchedule(options({ durationMs: 5000 }))).to.deep.equal([]);
  });

  it('pickAt spreads a number in [0, 1) over a list', () => {
    expect(pickAt(['a', 'b', 'c'], 0)).to.equal('a');
    expect(pickAt(['a', 'b', 'c'], 0.5)).to.equal('b');
    expect(pickAt(['a', 'b', 'c'], 0.9999)).to.equal('c');
    expect(pickAt([], 0.5)).to.equal(undefined);
    const random = seededRandom(3);
    expect(Array.from({ length: 3 }, random)).to.deep.equal(Array.from({ length: 3 }, seededRandom(3)));
  });
});

describe('chaos faults', () => {
  it('rules tried in order fault the given share of calls in all, split by the mix', () => {
    for (const mix of [KINESIS_FAULTS, DYNAMODB_FAULTS]) {
      const rules = faultRules(0.05, mix);
      expect(combinedRate(rules)).to.be.closeTo(0.05, 1e-12);
      // The first rule's share of all calls is its share of the faults.
      expect(rules[0]?.rate).to.be.closeTo(0.05 * (mix[0]?.share ?? 0), 1e-12);
      expect(rules.every((r) => r.operation === '*')).to.equal(true);
    }
    expect(combinedRate(faultRules(0, KINESIS_FAULTS))).to.equal(0);
    expect(combinedRate(faultRules(1, KINESIS_FAULTS))).to.be.closeTo(1, 1e-12);
  });
});

describe('chaos metrics', () => {
  const P = 'shardId-000000000000';
  const C = 'shardId-000000000001';
  const line = (w: string, shardId: string, e: number): AckLine => ({ e, i: 0, t: e, w, shardId, seq: '1', key: 'k', data: `${w}${e}` });

  it('time to recover: a kill counts anyone\'s next record; a zombie only another worker\'s; a descendant shard counts for its parent', () => {
    const actions: ActionRecord[] = [
      { kind: 'kill', at: 1000, endedAt: 2000, worker: 'w1', shards: [P] },
      { kind: 'zombie', at: 10_000, endedAt: 16_000, worker: 'w2', shards: [P], resumedAt: 16_000 },
    ];
    const acks = [line('w1', P, 500), line('w1', P, 4000), line('w2', P, 9000), line('w2', C, 16_500), line('w3', C, 13_000)];
    const parents = new Map([[C, [P]]]);
    expect(recoveries(actions, acks, parents)).to.deep.equal([
      { action: 0, kind: 'kill', shardId: P, ms: 3000 },
      { action: 1, kind: 'zombie', shardId: P, ms: 3000 },
    ]);
  });

  it('disruptions are the crashes and zombies done; failovers count captures from another worker', () => {
    const actions: ActionRecord[] = [
      { kind: 'kill', at: 1, endedAt: 2, worker: 'w1', shards: [], exitedAt: 1.5 },
      { kind: 'restart', at: 3, endedAt: 4, worker: 'w2', shards: [] },
      { kind: 'zombie', at: 5, endedAt: 6, worker: 'w3', shards: [], resumedAt: 6 },
      { kind: 'merge', at: 7, endedAt: 8, shards: [], skipped: 'no pair' },
    ];
    expect(disruptions(actions)).to.deep.equal([{ kind: 'crash', worker: 'w1', at: 1, goneAt: 1.5 }, { kind: 'zombie', worker: 'w3', at: 5, resumedAt: 6 }]);
    expect(failovers([
      { type: 'acquired', w: 'w1', shardId: P, at: 1 },
      { type: 'acquired', w: 'w1', shardId: P, at: 2 },
      { type: 'acquired', w: 'w2', shardId: P, at: 3 },
      { type: 'lost', w: 'w1', shardId: P, at: 4 },
    ])).to.deep.equal({ total: 1, leasesLost: 1, captures: 3 });
  });
});
