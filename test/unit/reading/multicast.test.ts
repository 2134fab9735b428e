import { expect } from 'chai';
import { Subject, Subscription, share, take } from 'rxjs';
import { Multicast } from '../../../src/reading/multicast.js';

// The subject behind a lease's shared records$: what share() needs of a Subject, without the garbage.
describe('Multicast (share\'s connector for records$)', () => {
  const shared = () => {
    const source = new Subject<number>();
    return { source, out$: source.pipe(share({ connector: () => new Multicast<number>(), resetOnError: false, resetOnComplete: false, resetOnRefCountZero: false })) };
  };

  it('passes each value to every subscriber, in subscription order', () => {
    const { source, out$ } = shared();
    const seen: string[] = [];
    out$.subscribe((v) => seen.push(`a${v}`));
    out$.subscribe((v) => seen.push(`b${v}`));
    source.next(1);
    source.next(2);
    expect(seen).to.deep.equal(['a1', 'b1', 'a2', 'b2']);
  });

  it('a subscriber that leaves while a value is being passed on gets no more; the others still get that value', () => {
    const { source, out$ } = shared();
    const seen: string[] = [];
    const first = out$.pipe(take(1)).subscribe((v) => seen.push(`a${v}`));
    out$.subscribe((v) => seen.push(`b${v}`));
    source.next(1);
    source.next(2);
    expect(first.closed).to.equal(true);
    expect(seen).to.deep.equal(['a1', 'b1', 'b2']);
  });

  it('an error or the end reaches every subscriber, and one that comes later gets it at once', () => {
    const multicast = new Multicast<number>();
    const ends: string[] = [];
    multicast.subscribe({ error: (e) => ends.push(`early ${String(e)}`) });
    multicast.error('boom');
    multicast.next(1);
    multicast.subscribe({ next: () => ends.push('value'), error: (e) => ends.push(`late ${String(e)}`) });
    const done = new Multicast<number>();
    done.complete();
    done.subscribe({ complete: () => ends.push('completed') });
    expect(ends).to.deep.equal(['early boom', 'late boom', 'completed']);
  });

  it('an unsubscribed Subscription observer is removed from the list', () => {
    const multicast = new Multicast<number>();
    const seen: number[] = [];
    const subscription = new Subscription();
    const observer = Object.assign(subscription, { next: (v: number) => seen.push(v), error: () => undefined, complete: () => undefined });
    multicast.subscribe(observer);
    multicast.next(1);
    subscription.unsubscribe();
    multicast.next(2);
    expect(seen).to.deep.equal([1]);
  });
});
