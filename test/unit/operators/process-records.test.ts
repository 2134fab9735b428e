import { expect } from 'chai';
import { type Observable, defer, map, range } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ConfigError, KinsumerError } from '../../../src/errors/kinsumer-errors.js';
import { processRecords } from '../../../src/operators/process-records.js';
import type { FailedRecord, ProcessContext, ProcessedRecord } from '../../../src/operators/process-types.js';
import { RecordTooOldError } from '../../../src/operators/record-retry.js';
import { RecordDecodeError } from '../../../src/reading/payload-decoding.js';
import type { KinsumerRecord } from '../../../src/types.js';
import { type TestRecord, testRecord, testRecords } from '../../support/test-records.js';

const testScheduler = () => new TestScheduler((actual, expected) => { expect(actual).to.deep.equal(expected); });
// The top of the jitter range: each delay is its full ceiling (100, 200, 400 ... capped).
const top = () => 0.999999;
const name = (p: ProcessedRecord) => (p.record as TestRecord).name;
const summary = (p: ProcessedRecord) => `${name(p)}:${p.outcome}:${p.attempts}`;

describe('processRecords', () => {
  describe('ordering (marbles)', () => {
    it("'shard' (default): one record at a time per shard in sequence order, shards in parallel", () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const calls: string[] = [];
        const { a, b, c } = testRecords(['a', 'b', 'c'], { shardId: 's0' });
        const { x, y } = testRecords(['x', 'y'], { shardId: 's1' });
        const duration: Record<string, string> = { a: '--|', b: '--|', c: '--|', x: '-|', y: '--|' };
        const source = cold('(abxcy|)', { a, b, x, c, y });
        const out = source.pipe(processRecords((r) => {
          calls.push(`${(r as TestRecord).name}@${ts.now()}`);
          return cold(duration[(r as TestRecord).name] ?? '|');
        }, { scheduler: ts }), map(name));
        expectObservable(out).toBe('-xayb-(c|)');
        ts.flush();
        expect(calls).to.deep.equal(['a@0', 'x@0', 'y@1', 'b@2', 'c@4']);
      });
    });

    it("'partitionKey': one at a time per key in order, other keys in parallel up to concurrency, oldest ready record first", () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const calls: string[] = [];
        const a1 = testRecord('a1', { partitionKey: 'k1' });
        const a2 = testRecord('a2', { partitionKey: 'k1' });
        const b1 = testRecord('b1', { partitionKey: 'k2' });
        const c1 = testRecord('c1', { partitionKey: 'k3' });
        const duration: Record<string, string> = { a1: '---|', a2: '-|', b1: '-|', c1: '-|' };
        const out = cold('(abcd|)', { a: a1, b: a2, c: b1, d: c1 }).pipe(processRecords((r) => {
          calls.push(`${(r as TestRecord).name}@${ts.now()}`);
          return cold(duration[(r as TestRecord).name] ?? '|');
        }, { ordering: 'partitionKey', concurrency: 2, scheduler: ts }), map(name));
        // a2 waits for a1 (same key) although a slot is free at 1: c1 (another key) takes it.
        expectObservable(out).toBe('-xyz(w|)', { x: 'b1', y: 'c1', z: 'a1', w: 'a2' });
        ts.flush();
        expect(calls).to.deep.equal(['a1@0', 'b1@0', 'c1@1', 'a2@3']);
      });
    });

    it("'none': up to concurrency at once, emitted in completion order", () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const { a, b, c } = testRecords(['a', 'b', 'c'], { partitionKey: 'same' });
        const duration: Record<string, string> = { a: '---|', b: '-|', c: '-|' };
        const out = cold('(abc|)', { a, b, c }).pipe(
          processRecords((r) => cold(duration[(r as TestRecord).name] ?? '|'), { ordering: 'none', concurrency: 2, scheduler: ts }),
          map(name),
        );
        expectObservable(out).toBe('-bc(a|)');
      });
    });
  });

  describe('retries and failures (marbles)', () => {
    it('retries after 100, 200, 400 ... capped at maxDelayMs (top of the jitter range), on the scheduler', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const calls: number[] = [];
        const a = testRecord('a');
        const out = cold('a', { a }).pipe(processRecords((_r, ctx) => {
          calls.push(ts.now());
          return ctx.attempt < 5 ? cold('#', undefined, new Error(`attempt ${ctx.attempt}`)) : cold('|');
        }, { retry: { maxAttempts: 5, initialDelayMs: 100, maxDelayMs: 300 }, random: top, scheduler: ts }), map(summary));
        expectObservable(out).toBe('900ms x', { x: 'a:processed:5' });
        ts.flush();
        expect(calls).to.deep.equal([0, 100, 300, 600, 900]);
      });
    });

    it('draws each delay from the jitter source: uniform in [0, ceiling]', () => {
      const ts = testScheduler();
      ts.run(({ cold }) => {
        const calls: number[] = [];
        cold('a', { a: testRecord('a') }).pipe(processRecords((_r, ctx) => {
          calls.push(ts.now());
          return ctx.attempt < 4 ? cold('#') : cold('|');
        }, { retry: { maxAttempts: 4, initialDelayMs: 100, maxDelayMs: 1000 }, random: () => 0.5, scheduler: ts })).subscribe();
        ts.flush();
        // floor(0.5 × 101) = 50, floor(0.5 × 201) = 100, floor(0.5 × 401) = 200
        expect(calls).to.deep.equal([0, 50, 150, 350]);
      });
    });

    it('without onFailure, a record failing every attempt errors the output with the handler error (not acked)', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const a = testRecord('a');
        const boom = new Error('boom');
        const out = cold('a', { a }).pipe(processRecords(() => cold('#', undefined, boom), {
          retry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 1000 }, random: top, scheduler: ts,
        }));
        expectObservable(out).toBe('300ms #', undefined, boom);
        ts.flush();
        expect(a.acks).to.deep.equal([]);
      });
    });

    it('with onFailure, the record goes there after its last attempt and is acked once it resolves; the shard goes on', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const { poison, b } = testRecords(['poison', 'b'], { clock: () => ts.now() });
        const failures: FailedRecord[] = [];
        const boom = new Error('boom');
        const out = cold('(pb|)', { p: poison, b }).pipe(processRecords((r) => ((r as TestRecord).name === 'poison' ? cold('#', undefined, boom) : cold('-|')), {
          retry: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 1000 }, random: top, scheduler: ts,
          onFailure: (failure) => {
            failures.push(failure);
            return cold('--|');
          },
        }), map((p) => `${summary(p)}${p.error === boom ? ':boom' : ''}`));
        // poison: calls at 0 and 100, onFailure 100-102, acked at 102; then b runs 102-103.
        expectObservable(out).toBe('102ms p (b|)', { p: 'poison:failed:2:boom', b: 'b:processed:1' });
        ts.flush();
        expect(failures).to.deep.equal([{ record: poison, error: boom, attempts: 2 }]);
        expect(poison.acks).to.deep.equal([102]);
        expect(b.acks).to.deep.equal([103]);
      });
    });

    it('an onFailure that throws errors the output with its error, the record not acked', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const a = testRecord('a');
        const deadLetterDown = new Error('dead letter queue down');
        const out = cold('a', { a }).pipe(processRecords(() => cold('#'), {
          retry: { maxAttempts: 1 }, scheduler: ts,
          onFailure: () => { throw deadLetterDown; },
        }));
        expectObservable(out).toBe('#', undefined, deadLetterDown);
        ts.flush();
        expect(a.acks).to.deep.equal([]);
      });
    });

    it('a record older than maxRecordAgeMs goes straight to onFailure (no handler call, attempts 0)', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const old = testRecord('old', { arrivedAtMs: -1000, clock: () => ts.now() });
        const failures: FailedRecord[] = [];
        let calls = 0;
        const out = cold('a', { a: old }).pipe(processRecords(() => { calls += 1; }, {
          maxRecordAgeMs: 500, scheduler: ts, onFailure: (f) => { failures.push(f); },
        }), map(summary));
        expectObservable(out).toBe('a', { a: 'old:failed:0' });
        ts.flush();
        expect(calls).to.equal(0);
        expect(failures[0]?.error).to.be.instanceOf(RecordTooOldError);
        expect(old.acks).to.deep.equal([0]);
      });
    });

    it('a record that grows older than maxRecordAgeMs while retried is not tried again (error: RecordTooOldError, cause: last error)', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const a = testRecord('a', { arrivedAtMs: 0 });
        const failures: FailedRecord[] = [];
        const calls: number[] = [];
        const boom = new Error('boom');
        const out = cold('a', { a }).pipe(processRecords(() => {
          calls.push(ts.now());
          return cold('#', undefined, boom);
        }, {
          retry: { maxAttempts: 10, initialDelayMs: 100, maxDelayMs: 1000 }, random: top, maxRecordAgeMs: 250, scheduler: ts,
          onFailure: (f) => { failures.push(f); },
        }), map(summary));
        expectObservable(out).toBe('300ms a', { a: 'a:failed:2' });
        ts.flush();
        expect(calls).to.deep.equal([0, 100]);
        const error = failures[0]?.error as RecordTooOldError;
        expect(error).to.be.instanceOf(RecordTooOldError);
        expect([error.ageMs, error.maxRecordAgeMs, error.cause]).to.deep.equal([300, 250, boom]);
      });
    });
  });

  describe('what cannot succeed is not retried (marbles)', () => {
    it('a RecordDecodeError from record.json() (retriable: false) goes to onFailure after one attempt, no backoff', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const { poison, b } = testRecords(['poison', 'b'], { clock: () => ts.now() });
        const failures: FailedRecord[] = [];
        let calls = 0;
        const out = cold('(pb|)', { p: poison, b }).pipe(processRecords((r) => {
          calls += 1;
          if ((r as TestRecord).name === 'poison') r.json(); // its bytes are not JSON
          return cold('-|');
        }, { random: top, scheduler: ts, onFailure: (f) => { failures.push(f); } }), map(summary));
        // Retried with the default policy it would reach onFailure at 300 ms.
        expectObservable(out).toBe('p(b|)', { p: 'poison:failed:1', b: 'b:processed:1' });
        ts.flush();
        expect(calls).to.equal(2);
        expect(failures.map((f) => [f.attempts, f.error instanceof RecordDecodeError])).to.deep.equal([[1, true]]);
        expect(poison.acks).to.deep.equal([0]);
      });
    });

    it('without onFailure, an error with retriable: false errors the output after one attempt', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const a = testRecord('a');
        const fatal = new KinsumerError('cannot succeed', { retriable: false });
        const out = cold('a', { a }).pipe(processRecords(() => cold('#', undefined, fatal), { random: top, scheduler: ts }));
        expectObservable(out).toBe('#', undefined, fatal);
        ts.flush();
        expect(a.acks).to.deep.equal([]);
      });
    });

    it('retryIf(error, record) decides for the other errors: false sends the record on after that attempt', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const { a, b } = testRecords(['a', 'b'], { clock: () => ts.now() });
        const asked: string[] = [];
        const calls: string[] = [];
        const out = cold('(ab|)', { a, b }).pipe(processRecords((r, ctx) => {
          calls.push(`${(r as TestRecord).name}#${ctx.attempt}@${ts.now()}`);
          return cold('#', undefined, new Error((r as TestRecord).name === 'a' ? 'validation failed' : 'timeout'));
        }, {
          retryIf: (error, record) => {
            asked.push(`${(record as TestRecord).name}:${(error as Error).message}`);
            return (error as Error).message !== 'validation failed';
          },
          retry: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 100 }, random: top, scheduler: ts, onFailure: () => undefined,
        }), map(summary));
        expectObservable(out).toBe('a 99ms (b|)', { a: 'a:failed:1', b: 'b:failed:2' });
        ts.flush();
        expect(calls).to.deep.equal(['a#1@0', 'b#1@0', 'b#2@100']);
        // Asked after each failed attempt that could still be retried; never after the last one.
        expect(asked).to.deep.equal(['a:validation failed', 'b:timeout']);
      });
    });

    it('retryIf is not asked about an error that says retriable: false (never retried), nor can it retry one', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const a = testRecord('a');
        let asked = 0;
        const out = cold('a', { a }).pipe(processRecords(() => cold('#', undefined, Object.assign(new Error('no'), { retriable: false })), {
          retryIf: () => { asked += 1; return true; }, scheduler: ts, onFailure: () => undefined,
        }), map(summary));
        expectObservable(out).toBe('a', { a: 'a:failed:1' });
        ts.flush();
        expect(asked).to.equal(0);
      });
    });

    it('a retryIf that throws errors the output with its error, the record not acked', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const a = testRecord('a');
        const bug = new Error('bug in retryIf');
        const out = cold('a', { a }).pipe(processRecords(() => cold('#'), { retryIf: () => { throw bug; }, scheduler: ts, onFailure: () => undefined }));
        expectObservable(out).toBe('#', undefined, bug);
        ts.flush();
        expect(a.acks).to.deep.equal([]);
      });
    });
  });

  describe('acks, completion, cancellation', () => {
    it('acks each record once, after its handler resolved, and emits it then', async () => {
      const records = ['a', 'b', 'c'].map((n) => testRecord(n));
      const events: string[] = [];
      const out: ProcessedRecord[] = [];
      await new Promise<void>((resolve, reject) => {
        defer(() => records).pipe(processRecords(async (r) => {
          await Promise.resolve();
          events.push(`handled ${(r as TestRecord).name} acks=${(r as TestRecord).acks.length}`);
        })).subscribe({ next: (p) => { events.push(`emitted ${name(p)} acks=${(p.record as TestRecord).acks.length}`); out.push(p); }, error: reject, complete: resolve });
      });
      expect(events).to.deep.equal([
        'handled a acks=0', 'emitted a acks=1', 'handled b acks=0', 'emitted b acks=1', 'handled c acks=0', 'emitted c acks=1',
      ]);
      expect(records.map((r) => r.acks.length)).to.deep.equal([1, 1, 1]);
    });

    it('completes only after the work in flight when the source completes', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const out = cold('(ab|)', { a: testRecord('a', { partitionKey: 'k1' }), b: testRecord('b', { partitionKey: 'k2' }) })
          .pipe(processRecords(() => cold('-----|'), { ordering: 'none', scheduler: ts }), map(name));
        expectObservable(out).toBe('-----(ab|)');
      });
    });

    it('unsubscribing aborts the signals of the handlers in flight', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const contexts: ProcessContext[] = [];
        const out = cold('a', { a: testRecord('a') }).pipe(processRecords((_r, ctx) => {
          contexts.push(ctx);
          return cold('-----|');
        }, { scheduler: ts }));
        expectObservable(out, '^--!').toBe('---');
        ts.flush();
        expect(contexts.map((c) => c.signal.aborted)).to.deep.equal([true]);
      });
    });

    it('an error of the source errors the output at once and aborts the handlers in flight', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const contexts: ProcessContext[] = [];
        const out = cold('a-#', { a: testRecord('a') }).pipe(processRecords((_r, ctx) => {
          contexts.push(ctx);
          return cold('-----|');
        }, { scheduler: ts }));
        expectObservable(out).toBe('--#');
        ts.flush();
        expect(contexts[0]?.signal.aborted).to.equal(true);
      });
    });

    it('synchronous handlers over 50,000 records: no stack growth, all acked', () => {
      const records = Array.from({ length: 50_000 }, (_, i) => testRecord(`r${i}`, { shardId: `s${i % 3}` }));
      let emitted = 0;
      range(0, records.length).pipe(map((i) => records[i] as KinsumerRecord), processRecords(() => undefined)).subscribe(() => { emitted += 1; });
      expect(emitted).to.equal(50_000);
      expect(records.every((r) => r.acks.length === 1)).to.equal(true);
    });
  });

  describe('lease end', () => {
    it('no handler call after the lease is lost: queued records dropped, the running one neither acked nor emitted', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const lease = new AbortController();
        const { a, b, c } = testRecords(['a', 'b', 'c'], { lease: lease.signal, clock: () => ts.now() });
        const other = testRecord('other', { shardId: 's1', clock: () => ts.now() });
        const calls: string[] = [];
        ts.schedule(() => lease.abort(new Error('lease lost')), 5);
        const out = cold('(abco|)', { a, b, c, o: other }).pipe(processRecords((r) => {
          calls.push(`${(r as TestRecord).name}@${ts.now()}`);
          return (r as TestRecord).name === 'other' ? cold('--------|') : cold('----------|');
        }, { scheduler: ts }), map(name));
        // a's call, started before the loss, is left to finish at 10 (it still holds the shard's slot); nothing else of the lease runs.
        expectObservable(out).toBe('8ms o 1ms |', { o: 'other' });
        ts.flush();
        expect(calls).to.deep.equal(['a@0', 'other@0']);
        expect([a, b, c].map((r) => r.acks.length)).to.deep.equal([0, 0, 0]);
        expect(other.acks).to.deep.equal([8]);
      });
    });

    it('a lease lost during a backoff wait ends the wait: no retry, no onFailure, no ack', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const lease = new AbortController();
        const a = testRecord('a', { lease: lease.signal });
        const calls: number[] = [];
        let failures = 0;
        ts.schedule(() => lease.abort(), 150);
        const out = cold('a|', { a }).pipe(processRecords(() => {
          calls.push(ts.now());
          return cold('#');
        }, { retry: { maxAttempts: 5, initialDelayMs: 100, maxDelayMs: 1000 }, random: top, scheduler: ts, onFailure: () => { failures += 1; } }));
        expectObservable(out).toBe('150ms |');
        ts.flush();
        expect(calls).to.deep.equal([0, 100]);
        expect([failures, a.acks.length]).to.deep.equal([0, 0]);
      });
    });

    it('gives the handler a signal aborted by the lease (and only its lease)', () => {
      const lease = new AbortController();
      const seen: AbortSignal[] = [];
      const sub = defer((): Observable<KinsumerRecord> => defer(() => [testRecord('a', { lease: lease.signal }), testRecord('b', { shardId: 's1' })]))
        .pipe(processRecords((_r, ctx) => { seen.push(ctx.signal); return new Promise(() => undefined); }))
        .subscribe();
      expect(seen.map((s) => s.aborted)).to.deep.equal([false, false]);
      lease.abort();
      expect(seen.map((s) => s.aborted)).to.deep.equal([true, false]);
      sub.unsubscribe();
      expect(seen.map((s) => s.aborted)).to.deep.equal([true, true]);
    });
  });

  describe('options', () => {
    const handler = () => undefined;
    const bad: [string, () => unknown][] = [
      ['handler', () => processRecords('nope' as never)],
      ['options', () => processRecords(handler, 5 as never)],
      ['concurrecny', () => processRecords(handler, { concurrecny: 4 } as never)],
      ['ordering', () => processRecords(handler, { ordering: 'key' as never })],
      ['concurrency', () => processRecords(handler, { ordering: 'partitionKey', concurrency: 0 })],
      ['concurrency', () => processRecords(handler, { ordering: 'none', concurrency: 1.5 })],
      ['concurrency', () => processRecords(handler, { concurrency: 4 })],
      ['retry', () => processRecords(handler, { retry: 3 as never })],
      ['retry.maxAttempts', () => processRecords(handler, { retry: { maxAttempts: 0 } })],
      ['retry.initialDelayMs', () => processRecords(handler, { retry: { initialDelayMs: -1 } })],
      ['retry.maxDelayMs', () => processRecords(handler, { retry: { initialDelayMs: 500, maxDelayMs: 100 } })],
      ['retry.maxDelayMs', () => processRecords(handler, { retry: { maxDelayMs: 2 ** 31 } })],
      ['retry.delayMs', () => processRecords(handler, { retry: { delayMs: 1 } as never })],
      ['maxRecordAgeMs', () => processRecords(handler, { maxRecordAgeMs: 1000 })],
      ['maxRecordAgeMs', () => processRecords(handler, { maxRecordAgeMs: 0, onFailure: handler })],
      ['onFailure', () => processRecords(handler, { onFailure: 'dlq' as never })],
      ['scheduler', () => processRecords(handler, { scheduler: {} as never })],
      ['random', () => processRecords(handler, { random: 0.5 as never })],
      ['retryIf', () => processRecords(handler, { retryIf: true as never })],
    ];
    for (const [option, build] of bad) {
      it(`a bad ${option} throws ConfigError naming it, where the operator is built`, () => {
        expect(build).to.throw(ConfigError).with.property('option', option);
      });
    }

    it('an unknown option names the nearest known one', () => {
      expect(() => processRecords(handler, { retrys: 3 } as never)).to.throw(ConfigError, 'invalid option retrys: is not an option of processRecords (did you mean retry?)');
      expect(() => processRecords(handler, { retry: { maxAttempt: 3 } as never })).to.throw(ConfigError, '(did you mean maxAttempts?)');
      expect(() => processRecords(handler, { retryif: () => true } as never)).to.throw(ConfigError, '(did you mean retryIf?)');
    });

    it('accepts the design example, Infinity attempts, and no options at all', () => {
      expect(() => processRecords(handler, {
        ordering: 'partitionKey', concurrency: 64, retry: { maxAttempts: 5, initialDelayMs: 100, maxDelayMs: 30000 },
        maxRecordAgeMs: 3_600_000, onFailure: handler,
      })).to.not.throw();
      expect(() => processRecords(handler, { retry: { maxAttempts: Infinity }, maxRecordAgeMs: 60_000, onFailure: handler })).to.not.throw();
      expect(() => processRecords(handler)).to.not.throw();
    });
  });
});
