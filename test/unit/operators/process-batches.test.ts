import { expect } from 'chai';
import { Subject, firstValueFrom, map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ConfigError, KinsumerError } from '../../../src/errors/kinsumer-errors.js';
import { processBatches } from '../../../src/operators/process-batches.js';
import type { FailedRecord, ProcessedBatch } from '../../../src/operators/process-types.js';
import type { KinsumerRecord } from '../../../src/types.js';
import { type TestRecord, testRecord, testRecords } from '../../support/test-records.js';

const testScheduler = () => new TestScheduler((actual, expected) => { expect(actual).to.deep.equal(expected); });
const top = () => 0.999999;
const names = (records: readonly KinsumerRecord[]) => records.map((r) => (r as TestRecord).name).join(',');
const batchSummary = (b: ProcessedBatch) => `${b.shardId}[${b.records.map((p) => `${(p.record as TestRecord).name}:${p.outcome}:${p.attempts}`).join(' ')}]`;

describe('processBatches', () => {
  it('cuts a shard\'s batch at maxSize or after maxWaitMs, one batch at a time per shard, never mixing shards', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const calls: string[] = [];
      const { a, b, c } = testRecords(['a', 'b', 'c'], { shardId: 's0' });
      const x = testRecord('x', { shardId: 's1' });
      const out = cold('(abc)x', { a, b, c, x }).pipe(processBatches((records) => {
        calls.push(`${names(records)}@${ts.now()}`);
        return cold(records[0]?.shardId === 's0' ? '--|' : '---|');
      }, { maxSize: 2, maxWaitMs: 10, scheduler: ts }), map(batchSummary));
      // [a,b] is full at 0; c waits from 0 to 10; x (arrived at 5) waits to 15.
      expectObservable(out).toBe('--A 9ms C 5ms X', { A: 's0[a:processed:1 b:processed:1]', C: 's0[c:processed:1]', X: 's1[x:processed:1]' });
      ts.flush();
      expect(calls).to.deep.equal(['a,b@0', 'c@10', 'x@15']);
    });
  });

  it('a 0 ms window (the default) takes what arrived in one synchronous burst (a GetRecords page) as one batch', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const { a, b, c } = testRecords(['a', 'b', 'c']);
      const out = cold('(abc)', { a, b, c }).pipe(processBatches(() => cold('-|'), { scheduler: ts }), map(batchSummary));
      expectObservable(out).toBe('-A', { A: 's0[a:processed:1 b:processed:1 c:processed:1]' });
    });
  });

  it('when the source completes, what waits for its window is cut at once; completes after the last batch', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const { a, b, c } = testRecords(['a', 'b', 'c']);
      const out = cold('(abc|)', { a, b, c }).pipe(processBatches(() => cold('--|'), { maxSize: 2, maxWaitMs: 1000, scheduler: ts }), map(batchSummary));
      expectObservable(out).toBe('--A-(C|)', { A: 's0[a:processed:1 b:processed:1]', C: 's0[c:processed:1]' });
    });
  });

  it('the next batch of a shard waits until the current one is settled, retries included (sequence order)', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const calls: string[] = [];
      const { a, b } = testRecords(['a', 'b']);
      const out = cold('(ab)', { a, b }).pipe(processBatches((records, ctx) => {
        calls.push(`${names(records)}#${ctx.attempt}@${ts.now()}`);
        return ctx.attempt === 1 && records[0] === a ? cold('#') : cold('|');
      }, { maxSize: 1, retry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 1000 }, random: top, scheduler: ts }), map(batchSummary));
      expectObservable(out).toBe('100ms (AB)', { A: 's0[a:processed:2]', B: 's0[b:processed:1]' });
      ts.flush();
      expect(calls).to.deep.equal(['a#1@0', 'a#2@100', 'b#1@100']);
    });
  });

  it('retries only the records reported failed, in order; acks the rest at once; the failed ones go to onFailure after the last attempt', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const calls: string[] = [];
      const failures: FailedRecord[] = [];
      const { a, b, c, d } = testRecords(['a', 'b', 'c', 'd'], { clock: () => ts.now() });
      const out = cold('(abcd)', { a, b, c, d }).pipe(processBatches((records) => {
        calls.push(`${names(records)}@${ts.now()}`);
        return cold('-(r|)', { r: { failed: records.filter((r) => r === b || r === d) } });
      }, {
        maxSize: 4, retry: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 1000 }, random: top, scheduler: ts,
        onFailure: (failure) => { failures.push(failure); return cold('-|'); },
      }), map(batchSummary));
      // attempt 1 at 0-1 (a, c acked at 1); attempt 2 [b,d] at 101-102; onFailure b 102-103, d 103-104.
      expectObservable(out).toBe('104ms A', { A: 's0[a:processed:1 b:failed:2 c:processed:1 d:failed:2]' });
      ts.flush();
      expect(calls).to.deep.equal(['a,b,c,d@0', 'b,d@101']);
      expect([a, b, c, d].map((r) => r.acks)).to.deep.equal([[1], [103], [1], [104]]);
      expect(failures.map((f) => [(f.record as TestRecord).name, f.attempts, f.error instanceof KinsumerError])).to.deep.equal([['b', 2, true], ['d', 2, true]]);
    });
  });

  it('a handler that throws fails the whole batch, retried whole', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const calls: string[] = [];
      const { a, b } = testRecords(['a', 'b']);
      const out = cold('(ab)', { a, b }).pipe(processBatches((records, ctx) => {
        calls.push(`${names(records)}#${ctx.attempt}`);
        return ctx.attempt === 1 ? cold('#') : cold('|');
      }, { maxSize: 2, retry: { maxAttempts: 2, initialDelayMs: 50, maxDelayMs: 50 }, random: top, scheduler: ts }), map(batchSummary));
      expectObservable(out).toBe('50ms A', { A: 's0[a:processed:2 b:processed:2]' });
      ts.flush();
      expect(calls).to.deep.equal(['a,b#1', 'a,b#2']);
    });
  });

  it('a batch failed with an error that says retriable: false is not retried: its records go to onFailure after one call', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const calls: string[] = [];
      const { a, b } = testRecords(['a', 'b']);
      const out = cold('(ab)', { a, b }).pipe(processBatches((records, ctx) => {
        calls.push(`${names(records)}#${ctx.attempt}`);
        return cold('#', undefined, new KinsumerError('schema mismatch', { retriable: false }));
      }, { maxSize: 2, random: top, scheduler: ts, onFailure: () => undefined }), map(batchSummary));
      expectObservable(out).toBe('A', { A: 's0[a:failed:1 b:failed:1]' });
      ts.flush();
      expect(calls).to.deep.equal(['a,b#1']);
    });
  });

  it('retryIf(error, record) is asked per record: those it refuses go to onFailure, the others are retried as a smaller batch', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const calls: string[] = [];
      const { a, b, c } = testRecords(['a', 'b', 'c']);
      const out = cold('(abc)', { a, b, c }).pipe(processBatches((records, ctx) => {
        calls.push(`${names(records)}#${ctx.attempt}`);
        return ctx.attempt === 1 ? cold('#', undefined, new Error('timeout')) : cold('|');
      }, {
        maxSize: 3, retry: { maxAttempts: 2, initialDelayMs: 50, maxDelayMs: 50 }, random: top, scheduler: ts,
        retryIf: (_error, record) => record !== b,
        onFailure: () => undefined,
      }), map(batchSummary));
      expectObservable(out).toBe('50ms A', { A: 's0[a:processed:2 b:failed:1 c:processed:2]' });
      ts.flush();
      expect(calls).to.deep.equal(['a,b,c#1', 'a,c#2']);
    });
  });

  it('records reported failed by the handler are retried (the report is no reason to give up)', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const calls: string[] = [];
      const { a } = testRecords(['a']);
      const out = cold('a', { a }).pipe(processBatches((records, ctx) => {
        calls.push(`${names(records)}#${ctx.attempt}`);
        return ctx.attempt === 1 ? { failed: records } : undefined;
      }, { retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 10 }, random: top, scheduler: ts }), map(batchSummary));
      expectObservable(out).toBe('10ms A', { A: 's0[a:processed:2]' });
      ts.flush();
      expect(calls).to.deep.equal(['a#1', 'a#2']);
    });
  });

  it('without onFailure, a record failing every attempt errors the output; the records that succeeded were acked, it was not', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const { a, b } = testRecords(['a', 'b']);
      const out = cold('(ab)', { a, b }).pipe(processBatches(() => cold('(r|)', { r: { failed: [b] } }), { maxSize: 2, retry: { maxAttempts: 1 }, scheduler: ts }));
      expectObservable(out).toBe('#', undefined, new KinsumerError('reported failed by the batch handler (attempt 1)', { retriable: true }));
      ts.flush();
      expect([a.acks.length, b.acks.length]).to.deep.equal([1, 0]);
    });
  });

  it('a failed record that is not in the batch is an error (nothing can be retried for it)', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const { a, stranger } = testRecords(['a', 'stranger']);
      const out = cold('a', { a }).pipe(processBatches(() => ({ failed: [stranger] }) as never, { scheduler: ts }));
      expectObservable(out).toBe('#', undefined, new KinsumerError(`the batch handler reported record ${stranger.sequenceNumber} failed, which is not in its batch of shard s0`));
    });
  });

  it('after lease loss: the running batch is neither acked nor emitted, no later batch of that lease is called; other shards go on', () => {
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const lease = new AbortController();
      const calls: string[] = [];
      const { a, b } = testRecords(['a', 'b'], { lease: lease.signal });
      const x = testRecord('x', { shardId: 's1' });
      ts.schedule(() => lease.abort(), 3);
      const out = cold('(abx|)', { a, b, x }).pipe(processBatches((records) => {
        calls.push(`${names(records)}@${ts.now()}`);
        return cold('-----|');
      }, { maxSize: 1, scheduler: ts }), map(batchSummary));
      expectObservable(out).toBe('5ms (X|)', { X: 's1[x:processed:1]' });
      ts.flush();
      expect(calls).to.deep.equal(['a@0', 'x@0']);
      expect([a.acks.length, b.acks.length]).to.deep.equal([0, 0]);
    });
  });

  it('options: bad ones throw ConfigError naming them', () => {
    const handler = () => undefined;
    const bad: [string, () => unknown][] = [
      ['maxSize', () => processBatches(handler, { maxSize: 0 })],
      ['maxWaitMs', () => processBatches(handler, { maxWaitMs: -5 })],
      ['ordering', () => processBatches(handler, { ordering: 'shard' } as never)],
      ['retry.maxAttempts', () => processBatches(handler, { retry: { maxAttempts: -1 } })],
      ['maxRecordAgeMs', () => processBatches(handler, { maxRecordAgeMs: 10 })],
    ];
    for (const [option, build] of bad) expect(build, option).to.throw(ConfigError).with.property('option', option);
    expect(() => processBatches(handler, { maxSize: 500, maxWaitMs: 1000, retry: { maxAttempts: 2 }, onFailure: handler })).to.not.throw();
  });

  it('R10: with no scheduler, a window is timed on the monotonic clock: the wall clock stepping back a minute holds no batch (real time, 20 ms window)', async () => {
    const realDateNow = Date.now;
    let stepMs = 0;
    Date.now = () => realDateNow() + stepMs;
    let deadline: NodeJS.Timeout | undefined;
    try {
      const source = new Subject<KinsumerRecord>();
      const batch = firstValueFrom(source.pipe(processBatches(() => undefined, { maxWaitMs: 20 }), map(batchSummary)));
      source.next(testRecord('a'));
      stepMs = -60_000;
      // A deadline, not a wait: the batch is due 20 ms after the record; a window timed on the wall clock would hold it a minute.
      const late = new Promise<string>((resolve) => { deadline = setTimeout(() => resolve('held past 5 s'), 5000); });
      expect(await Promise.race([batch, late])).to.equal('s0[a:processed:1]');
    } finally {
      Date.now = realDateNow;
      clearTimeout(deadline);
    }
  });
});
