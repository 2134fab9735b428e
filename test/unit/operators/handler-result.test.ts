import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { from, of } from 'rxjs';
import { HandlerResultError, type BatchHandler, type FailedRecord, type ProcessedBatch, type ProcessedRecord, type RecordHandler, processBatches, processRecords } from '../../../src/index.js';
import { type TestRecord, testRecords } from '../../support/test-records.js';

// What a handler may return is typed (tsc, test/static.test.ts: a `@ts-expect-error` line without
// an error fails the build) and checked at run time for JavaScript callers and for what no type
// catches (an unknown key beside `writes` in an async handler's inferred result).
const put: TransactWriteItem = { Put: { TableName: 'totals', Item: { account: { S: 'a' } } } };

// @ts-expect-error `write` is not a key of RecordResult (a typo of `writes`)
export const typo: RecordHandler = () => ({ write: [put] });
// @ts-expect-error the same typo from an async handler
export const asyncTypo: RecordHandler = () => Promise.resolve({ write: [put] });
// @ts-expect-error a value that is neither nothing nor a RecordResult
export const number: RecordHandler = () => 42;
// @ts-expect-error an Observable of something else
export const observable: RecordHandler = () => of('done');
export const nothing: RecordHandler = async () => { await Promise.resolve(); };
export const writes: RecordHandler = () => ({ writes: [put] });
// @ts-expect-error `fail` is not a key of BatchResult
export const batchTypo: BatchHandler = (records) => ({ fail: [...records] });

/** Runs `handler` on records a and b (synchronous handlers settle synchronously); what settled and what failed. */
function runRecords(handler: unknown, withOnFailure = true) {
  const { a, b } = testRecords(['a', 'b']);
  const settled: ProcessedRecord[] = [];
  const failures: FailedRecord[] = [];
  let error: unknown;
  from([a, b]).pipe(processRecords(handler as RecordHandler, {
    ...(withOnFailure ? { onFailure: (failure: FailedRecord) => { failures.push(failure); } } : {}),
    random: () => 0,
  })).subscribe({ next: (p) => settled.push(p), error: (e: unknown) => { error = e; } });
  return { a, b, settled, failures, error };
}

const outcomes = (settled: readonly ProcessedRecord[]) => settled.map((p) => `${(p.record as TestRecord).name}:${p.outcome}:${p.attempts}`);

describe('handler results: what a handler returns is its result, or the record fails (HandlerResultError)', () => {
  const cases: ReadonlyArray<[string, unknown, string | undefined, RegExp]> = [
    ['{ write: [...] } (a typo of writes)', { write: [put] }, 'write', /returned an object with the key 'write' \(did you mean writes\?\), not one of \{ writes \}: nothing of it was applied/],
    ['{ writes, extra } (an unknown key beside writes)', { writes: [put], extra: 1 }, 'extra', /the key 'extra',/],
    ['{ writes: "x" } (writes not an array)', { writes: 'x' }, 'writes', /writes that is not an array \(a string\)/],
    ['{ writes: [42] } (a write that is not an object)', { writes: [42] }, 'writes', /writes\[0\] that is not an object \(a number\)/],
    ['42 (not an object)', 42, undefined, /a number, not nothing or \{ writes \}/],
    ['null', null, undefined, /null, not nothing or \{ writes \}/],
  ];
  for (const [what, result, key, message] of cases) {
    it(`processRecords: ${what} goes to onFailure after one attempt, nothing written, the record acked plainly`, () => {
      const { a, b, settled, failures } = runRecords((record: TestRecord) => (record.name === 'a' ? result : undefined));
      expect(outcomes(settled)).to.deep.equal(['a:failed:1', 'b:processed:1']);
      expect(failures).to.have.length(1);
      const error = failures[0]?.error;
      expect(error).to.be.instanceOf(HandlerResultError);
      expect(error).to.include({ operator: 'processRecords', key, retriable: false });
      expect((error as Error).message).to.match(message);
      expect(a.ackOptions, 'a: one plain ack, no writes').to.deep.equal([undefined]);
      expect(b.ackOptions).to.deep.equal([undefined]);
    });
  }

  it('processRecords without onFailure: the output errors with the HandlerResultError, the record not acked', () => {
    const { a, error } = runRecords(() => ({ write: [put] }), false);
    expect(error).to.be.instanceOf(HandlerResultError).and.to.include({ key: 'write' });
    expect(a.acks).to.deep.equal([]);
  });

  it('processRecords: nothing, {}, { writes: [] } and { writes } are results (the last acked with its writes)', () => {
    const results: unknown[] = [undefined, {}, { writes: [] }, { writes: [put] }];
    for (const result of results) {
      const { a, settled, failures } = runRecords(() => result);
      expect(failures, JSON.stringify(result)).to.deep.equal([]);
      expect(outcomes(settled)).to.deep.equal(['a:processed:1', 'b:processed:1']);
      expect(a.ackOptions).to.deep.equal([result !== undefined && 'writes' in (result as object) && (result as { writes: unknown[] }).writes.length > 0 ? { writes: [put] } : undefined]);
    }
  });

  const batchCases: ReadonlyArray<[string, (records: readonly TestRecord[]) => unknown, string | undefined, RegExp]> = [
    ['{ fail: [...] } (a typo of failed)', (records) => ({ fail: [...records] }), 'fail', /the key 'fail', not one of \{ failed, writes \}/],
    ['{ failed: a record } (failed not an array)', (records) => ({ failed: records[0] }), 'failed', /failed that is not an array \(an object\)/],
    ['{ writes: {} } (writes not an array)', () => ({ writes: {} }), 'writes', /writes that is not an array \(an object\)/],
    ["'done' (not an object)", () => 'done', undefined, /a string, not nothing or \{ failed, writes \}/],
  ];
  for (const [what, handler, key, message] of batchCases) {
    it(`processBatches: ${what} sends the batch's records to onFailure after one call, nothing written`, () => {
      const { a, b } = testRecords(['a', 'b']);
      const batches: ProcessedBatch[] = [];
      const failures: FailedRecord[] = [];
      from([a, b]).pipe(processBatches((records) => handler(records as TestRecord[]) as void, {
        onFailure: (failure) => { failures.push(failure); }, random: () => 0,
      })).subscribe((batch) => batches.push(batch));
      expect(batches.flatMap((batch) => outcomes(batch.records))).to.deep.equal(['a:failed:1', 'b:failed:1']);
      expect(failures.map((f) => (f.error as HandlerResultError).key)).to.deep.equal([key, key]);
      expect(failures[0]?.error).to.be.instanceOf(HandlerResultError).and.to.include({ operator: 'processBatches', retriable: false });
      expect((failures[0]?.error as Error).message).to.match(message);
      expect([...a.ackOptions, ...b.ackOptions]).to.deep.equal([undefined, undefined]);
    });
  }
});
