import { expect } from 'chai';
import { firstValueFrom, timer } from 'rxjs';
import { type FailedRecord, type KinsumerRecord, processBatches, processRecords } from '../../../src/index.js';
import { RecordTooOldError } from '../../../src/operators/record-retry.js';
import { MemoryGroup } from '../../support/memory-group.js';
import { skewedScheduler } from '../../support/skewed-scheduler.js';

// R19 (review-4): maxRecordAgeMs is a record's age on the stream's clock — Kinesis's arrival time
// against Kinesis's time, carried with the page (its answer's Date) and moved on by the monotonic
// clock since — never this host's wall clock against Kinesis's (design §7.1: no clock is compared
// across hosts). The stream's clock here is the group's timeline; the member's wall clock (its
// scheduler's `now()`, the operator's too) is off by SKEW_MS.
const MAX_AGE_MS = 300_000;
const text = (record: KinsumerRecord) => new TextDecoder().decode(record.data);

async function run(skewMs: number, arrivedAgoMs: number, operator: 'records' | 'batches') {
  const group = new MemoryGroup(1);
  group.stream.putRecord('k', 'the record');
  await group.scheduler.advanceBy(arrivedAgoMs);
  const handled: string[] = [];
  const failures: FailedRecord[] = [];
  const scheduler = skewedScheduler(group.scheduler, skewMs);
  const options = { maxRecordAgeMs: MAX_AGE_MS, scheduler, onFailure: (failure: FailedRecord) => { failures.push(failure); } };
  const member = group.join('a', {
    skewMs,
    pipeline: operator === 'records'
      ? processRecords((record) => { handled.push(text(record)); }, options)
      : processBatches((records) => { handled.push(...records.map(text)); }, options),
  });
  await group.scheduler.until(() => handled.length + failures.length > 0, 'the record settled', 20_000);
  member.subscription.unsubscribe();
  await group.stop(member);
  return { handled, failures: failures.map((f) => (f.error instanceof RecordTooOldError ? `too old: ${f.error.ageMs} ms` : String(f.error))) };
}

describe('maxRecordAgeMs on the stream\'s clock (R19, virtual time)', function () {
  this.timeout(30_000);

  for (const operator of ['records', 'batches'] as const) {
    const name = operator === 'records' ? 'processRecords' : 'processBatches';

    it(`${name}: a record that arrived 1 s ago is handled on a host whose wall clock runs 10 minutes ahead`, async () => {
      expect(await run(600_000, 1_000, operator)).to.deep.equal({ handled: ['the record'], failures: [] });
    });

    it(`${name}: a record that arrived 6 minutes ago goes to onFailure untried on a host whose wall clock runs 10 minutes behind`, async () => {
      const { handled, failures } = await run(-600_000, 360_000, operator);
      expect(handled).to.deep.equal([]);
      expect(failures).to.have.length(1);
      // Its age on the stream's clock: 6 minutes and the moments it took to be read (the member's first poll).
      expect(Number(/(\d+) ms/.exec(failures[0] ?? '')?.[1])).to.be.within(360_000, 365_000);
    });
  }

  it('processRecords: a record retried past maxRecordAgeMs on the monotonic clock is not tried again, whatever the wall clock does', async () => {
    const group = new MemoryGroup(1);
    group.stream.putRecord('k', 'the record');
    let calls = 0;
    const failures: FailedRecord[] = [];
    // The wall clock steps back an hour after the first call: a wall-clock age would never grow old.
    let stepMs = 0;
    const scheduler = skewedScheduler(group.scheduler, () => stepMs);
    const member = group.join('a', {
      skewMs: () => stepMs,
      pipeline: processRecords(async () => {
        calls += 1;
        stepMs = -3_600_000;
        await firstValueFrom(timer(100_000, group.scheduler));
        throw new Error('downstream down');
      }, { maxRecordAgeMs: MAX_AGE_MS, retry: { maxAttempts: Infinity, initialDelayMs: 1000, maxDelayMs: 1000 }, scheduler, onFailure: (f) => { failures.push(f); } }),
    });
    await group.scheduler.until(() => failures.length > 0, 'the record dead-lettered', 1_000_000, 1000);
    expect(calls).to.equal(3);
    expect(failures[0]?.error).to.be.instanceOf(RecordTooOldError);
    member.subscription.unsubscribe();
    await group.stop(member);
  });
});
