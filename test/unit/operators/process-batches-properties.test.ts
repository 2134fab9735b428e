import { expect } from 'chai';
import fc from 'fast-check';
import { VirtualTimeScheduler, defer, ignoreElements, map, merge, mergeMap, of, tap, throwError, timer } from 'rxjs';
import { processBatches } from '../../../src/operators/process-batches.js';
import type { KinsumerRecord } from '../../../src/types.js';
import { type TestRecord, testRecord } from '../../support/test-records.js';

const scenario = fc.record({
  records: fc.array(fc.record({ shard: fc.integer({ min: 0, max: 2 }), at: fc.integer({ min: 0, max: 60 }) }), { maxLength: 40 }),
  maxSize: fc.integer({ min: 1, max: 6 }),
  maxWaitMs: fc.integer({ min: 0, max: 15 }),
  maxAttempts: fc.integer({ min: 1, max: 3 }),
  // Per handler call (in call order, cycled): how long it takes, whether it throws, which records it reports failed.
  calls: fc.array(fc.record({ ms: fc.integer({ min: 0, max: 20 }), throws: fc.boolean(), failMask: fc.nat() }), { minLength: 1, maxLength: 20 }),
  leaseEnds: fc.array(fc.option(fc.integer({ min: 0, max: 150 }), { nil: undefined }), { minLength: 3, maxLength: 3 }),
});

describe('processBatches properties (fast-check, virtual time)', () => {
  it('one shard per batch, one batch at a time per shard, in sequence order; no call after lease loss; each record acked once, or not at all after the loss', () => {
    fc.assert(fc.property(scenario, (s) => {
      const scheduler = new VirtualTimeScheduler();
      // Each shard's first lease may be lost; records arriving later come under a new lease of the shard.
      const lost = s.leaseEnds.map(() => new AbortController());
      const recaptured = s.leaseEnds.map(() => new AbortController());
      s.leaseEnds.forEach((end, shard) => { if (end !== undefined) scheduler.schedule(() => lost[shard]?.abort(), end); });
      const plans = [...s.records].sort((x, y) => x.at - y.at);
      const underLost = (p: { shard: number; at: number }) => p.at < (s.leaseEnds[p.shard] ?? Infinity);
      const records = plans.map((p, i) => testRecord(`r${i}`, {
        shardId: `s${p.shard}`, lease: (underLost(p) ? lost : recaptured)[p.shard]?.signal as AbortSignal, clock: () => scheduler.now(),
      }));
      const order = new Map<KinsumerRecord, number>(records.map((r, i) => [r, i]));
      // When the lease a record came under ended.
      const endOf = (r: KinsumerRecord) => {
        const plan = plans[order.get(r) ?? -1] as { shard: number; at: number };
        return underLost(plan) ? s.leaseEnds[plan.shard] ?? Infinity : Infinity;
      };
      const running = new Set<string>();
      const firstCalled = new Map<string, number>();
      const violations: string[] = [];
      let callIndex = 0;
      let completed = false;
      merge(...records.map((r, i) => timer(plans[i]?.at ?? 0, scheduler).pipe(map(() => r)))).pipe(processBatches((batch, ctx) => defer(() => {
        const shardId = batch[0]?.shardId ?? '?';
        const positions = batch.map((r) => order.get(r) ?? -1);
        if (batch.some((r) => r.shardId !== shardId)) violations.push(`batch mixes shards: ${positions.join(',')}`);
        if (positions.some((p, i) => i > 0 && p < (positions[i - 1] ?? -1))) violations.push(`batch out of order: ${positions.join(',')}`);
        if (running.has(shardId)) violations.push(`two batches of ${shardId} at once`);
        if (batch.some((r) => scheduler.now() >= endOf(r))) violations.push(`${shardId} called at ${scheduler.now()} after the lease of r${positions.join(',r')} ended`);
        if (ctx.attempt === 1) {
          // A new batch starts past every record of the shard called before.
          const first = positions[0] ?? -1;
          if (first <= (firstCalled.get(shardId) ?? -1)) violations.push(`${shardId}: batch from r${first} after r${firstCalled.get(shardId)}`);
          firstCalled.set(shardId, positions.at(-1) ?? -1);
        }
        running.add(shardId);
        const call = s.calls[callIndex++ % s.calls.length] as (typeof s.calls)[number];
        return timer(call.ms, scheduler).pipe(
          mergeMap(() => (call.throws ? throwError(() => new Error('batch failed')) : of({ failed: batch.filter((_r, i) => (call.failMask >> i) & 1) }))),
          // Over before the operator hears of it (finalize would run after it reacted).
          tap({ complete: () => running.delete(shardId), error: () => running.delete(shardId) }),
        );
      }), {
        maxSize: s.maxSize, maxWaitMs: s.maxWaitMs, scheduler, random: () => 0.5,
        retry: { maxAttempts: s.maxAttempts, initialDelayMs: 5, maxDelayMs: 20 },
        onFailure: () => timer(1, scheduler).pipe(ignoreElements()),
      })).subscribe({ error: (e: unknown) => violations.push(`errored: ${String(e)}`), complete: () => { completed = true; } });
      scheduler.flush();
      expect(violations).to.deep.equal([]);
      expect(completed).to.equal(true);
      records.forEach((r: TestRecord, i) => {
        const end = endOf(r);
        expect(r.acks.length, `acks of r${i}`).to.be.at.most(1);
        if (end === Infinity) expect(r.acks.length, `acks of r${i} (lease kept)`).to.equal(1);
        for (const at of r.acks) expect(at, `r${i} acked after its lease ended`).to.be.below(end);
      });
    }), { numRuns: 400 });
  });
});
