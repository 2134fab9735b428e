import { expect } from 'chai';
import { Observable, EMPTY, NEVER, Subject, defer, finalize } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { oneWriteAtATime } from '../../../src/checkpoint/write-lane.js';

describe('the write lane: one write of a shard at a time (virtual time)', () => {
  it('runs a request at once when free; of the requests that came meanwhile, the latest when the running write ends', () => {
    const scheduler = new TestScheduler((actual, expected) => { expect(actual).to.deep.equal(expected); });
    scheduler.run(({ cold, expectObservable }) => {
      const started: string[] = [];
      // Each write takes 4 ms; the source completes at 11 ms, the lane once the last write is over.
      const write = (request: string): Observable<never> => defer(() => {
        started.push(`${request}@${scheduler.now()}`);
        return fourMs(scheduler);
      });
      expectObservable(oneWriteAtATime(cold<string>('a-bc------d|'), write)).toBe('--------------|');
      scheduler.flush();
      expect(started).to.deep.equal(['a@0', 'c@4', 'd@10']);
    });
  });

  // Found by main's effects test on issue 32's branch: an effects turn whose table keys were known
  // completed as it was started, and woke the lane for the transaction from inside it.
  it('a write that asks for the next one as it completes, synchronously, does not end the next one', () => {
    const requests = new Subject<string>();
    let transactionEnded = false;
    const write = (request: string): Observable<never> => (request === 'keys'
      ? defer(() => {
        requests.next('transaction');
        return EMPTY;
      })
      : NEVER.pipe(finalize(() => { transactionEnded = true; })));
    const subscription = oneWriteAtATime(requests, write).subscribe();
    requests.next('keys');
    expect(transactionEnded, 'the transaction was unsubscribed (aborted) as the keys lookup ended').to.equal(false);
    subscription.unsubscribe();
    expect(transactionEnded, 'ended with the lane').to.equal(true);
  });
});

/** A write that takes 4 ms of virtual time. */
function fourMs(scheduler: TestScheduler): Observable<never> {
  return new Observable<never>((subscriber) => {
    const action = scheduler.schedule(() => subscriber.complete(), 4);
    return () => action.unsubscribe();
  });
}
