import { expect } from 'chai';
import fc from 'fast-check';
import { VirtualTimeScheduler, defer, ignoreElements, map, merge, mergeMap, of, tap, throwError, timer } from 'rxjs';
import { processRecords } from '../../../src/operators/process-records.js';
import type { ProcessedRecord, RecordOrdering } from '../../../src/operators/process-types.js';
import { type TestRecord, testRecord } from '../../support/test-records.js';

interface Step {
  readonly ms: number;
  readonly fail: boolean;
}

interface Planned {
  readonly shard: number;
  readonly key: string;
  readonly at: number;
  readonly steps: readonly Step[];
}

const scenario = fc.record({
  ordering: fc.constantFrom<RecordOrdering>('shard', 'partitionKey', 'none'),
  concurrency: fc.integer({ min: 1, max: 6 }),
  records: fc.array(fc.record({
    shard: fc.integer({ min: 0, max: 2 }),
    key: fc.constantFrom('a', 'b', 'c', 'd'),
    at: fc.integer({ min: 0, max: 60 }),
    steps: fc.array(fc.record({ ms: fc.integer({ min: 0, max: 20 }), fail: fc.boolean() }), { minLength: 1, maxLength: 4 }),
  }), { maxLength: 40 }),
  maxAttempts: fc.integer({ min: 1, max: 4 }),
  initialDelayMs: fc.integer({ min: 0, max: 10 }),
  draw: fc.double({ min: 0, max: 0.999999, noNaN: true }),
  onFailureMs: fc.integer({ min: 0, max: 5 }),
  // When each shard's lease is lost (undefined: never); records arriving later come under a new lease of the same shard.
  leaseEnds: fc.array(fc.option(fc.integer({ min: 0, max: 150 }), { nil: undefined }), { minLength: 3, maxLength: 3 }),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer S> ? S : never;

interface Run {
  readonly records: TestRecord[];
  readonly plans: Planned[];
  readonly leaseEndAt: (i: number) => number;
  readonly emitted: ProcessedRecord[];
  readonly violations: string[];
  readonly completed: boolean;
}

/** Runs a scenario on virtual time, checking at every handler call what must hold at that moment. */
function run(s: Scenario): Run {
  const scheduler = new VirtualTimeScheduler();
  const lost = s.leaseEnds.map(() => new AbortController());
  const recaptured = s.leaseEnds.map(() => new AbortController());
  s.leaseEnds.forEach((end, shard) => { if (end !== undefined) scheduler.schedule(() => lost[shard]?.abort(), end); });
  const plans = [...s.records].sort((x, y) => x.at - y.at);
  const underLost = (p: Planned) => p.at < (s.leaseEnds[p.shard] ?? Infinity);
  // When the lease a record came under ended.
  const leaseEndAt = (i: number) => (underLost(plans[i] as Planned) ? s.leaseEnds[(plans[i] as Planned).shard] ?? Infinity : Infinity);
  const records = plans.map((p, i) => testRecord(`r${i}`, {
    shardId: `s${p.shard}`, partitionKey: p.key, lease: (underLost(p) ? lost : recaptured)[p.shard]?.signal as AbortSignal, clock: () => scheduler.now(),
  }));
  const index = new Map(records.map((r, i) => [r, i]));
  const concurrency = s.ordering === 'shard' ? 1 : s.concurrency;
  const laneOf = (i: number) => (s.ordering === 'shard' ? `${plans[i]?.shard}` : s.ordering === 'partitionKey' ? `${plans[i]?.shard}/${plans[i]?.key}` : `${i}`);
  const activePerShard = new Map<number, number>();
  const activePerLane = new Map<string, number>();
  const lastStartedInLane = new Map<string, number>();
  const violations: string[] = [];
  const emitted: ProcessedRecord[] = [];
  let completed = false;

  const source = merge(...records.map((record, i) => timer(plans[i]?.at ?? 0, scheduler).pipe(map(() => record))));
  source.pipe(processRecords((record, ctx) => defer(() => {
    const i = index.get(record as TestRecord) ?? -1;
    const plan = plans[i] as Planned;
    const lane = laneOf(i);
    if (scheduler.now() >= leaseEndAt(i)) violations.push(`r${i} called at ${scheduler.now()}, after its lease ended at ${leaseEndAt(i)}`);
    const shardActive = (activePerShard.get(plan.shard) ?? 0) + 1;
    activePerShard.set(plan.shard, shardActive);
    if (shardActive > concurrency) violations.push(`shard ${plan.shard}: ${shardActive} calls at once, concurrency ${concurrency}`);
    const laneActive = (activePerLane.get(lane) ?? 0) + 1;
    activePerLane.set(lane, laneActive);
    if (s.ordering !== 'none' && laneActive > 1) violations.push(`lane ${lane}: ${laneActive} calls at once`);
    if (s.ordering !== 'none' && i < (lastStartedInLane.get(lane) ?? -1)) violations.push(`lane ${lane}: r${i} called after r${lastStartedInLane.get(lane)}`);
    lastStartedInLane.set(lane, i);
    const ended = () => {
      activePerShard.set(plan.shard, (activePerShard.get(plan.shard) ?? 1) - 1);
      activePerLane.set(lane, (activePerLane.get(lane) ?? 1) - 1);
    };
    const step = plan.steps[Math.min(ctx.attempt, plan.steps.length) - 1] as Step;
    return timer(step.ms, scheduler).pipe(
      mergeMap(() => (step.fail ? throwError(() => new Error(`r${i} attempt ${ctx.attempt}`)) : of(undefined))),
      // Counted as ended before the end reaches the operator (finalize would run after the operator
      // reacted). An unsubscribed call is not counted as ended: like a promise, it may still run.
      tap({ complete: ended, error: ended }),
    );
  }), {
    ordering: s.ordering, ...(s.ordering === 'shard' ? {} : { concurrency }),
    retry: { maxAttempts: s.maxAttempts, initialDelayMs: s.initialDelayMs, maxDelayMs: 30 },
    random: () => s.draw,
    scheduler,
    onFailure: () => timer(s.onFailureMs, scheduler).pipe(ignoreElements()),
  })).subscribe({
    next: (p) => emitted.push(p),
    error: (error: unknown) => violations.push(`errored: ${String(error)}`),
    complete: () => { completed = true; },
  });
  scheduler.flush();
  return { records, plans, leaseEndAt, emitted, violations, completed };
}

describe('processRecords properties (fast-check, virtual time)', () => {
  it('per-key order at any concurrency, concurrency never exceeded per shard, no handler call after lease loss', () => {
    fc.assert(fc.property(scenario, (s) => {
      const { violations } = run(s);
      expect(violations).to.deep.equal([]);
    }), { numRuns: 400 });
  });

  it('no record acked twice or never: each acked once, or — its lease lost first — not at all; nothing acked after the loss', () => {
    fc.assert(fc.property(scenario, (s) => {
      const { records, leaseEndAt, completed } = run(s);
      expect(completed, 'the output completes').to.equal(true);
      records.forEach((record, i) => {
        const end = leaseEndAt(i);
        expect(record.acks.length, `acks of r${i}`).to.be.at.most(1);
        if (end === Infinity) expect(record.acks.length, `acks of r${i} (lease kept)`).to.equal(1);
        for (const at of record.acks) expect(at, `r${i} acked at ${at}, lease ended at ${end}`).to.be.below(end);
      });
    }), { numRuns: 400 });
  });

  it('emits exactly the acked records, once each; per key, in sequence order unless ordering is none', () => {
    fc.assert(fc.property(scenario, (s) => {
      const { records, plans, emitted } = run(s);
      const emittedNames = emitted.map((p) => (p.record as TestRecord).name);
      expect([...emittedNames].sort()).to.deep.equal(records.filter((r) => r.acks.length === 1).map((r) => r.name).sort());
      if (s.ordering === 'none') return;
      const lastPerKey = new Map<string, number>();
      for (const p of emitted) {
        const i = records.indexOf(p.record as TestRecord);
        const plan = plans[i] as Planned;
        const key = s.ordering === 'shard' ? `${plan.shard}` : `${plan.shard}/${plan.key}`;
        expect(i, `r${i} emitted after r${lastPerKey.get(key)} of ${key}`).to.be.above(lastPerKey.get(key) ?? -1);
        lastPerKey.set(key, i);
      }
    }), { numRuns: 400 });
  });
});
