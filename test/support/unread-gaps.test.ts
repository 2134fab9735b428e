import { expect } from 'chai';
import { unreadGaps, type Delivered, type Sent } from './unread-gaps.js';

const sent = (key: string, atMs: number, shardId = 's1'): Sent => ({ key, shardId, atMs });
const got = (key: string, atMs: number): Delivered => ({ key, atMs });

// The metric the rolling-migration test asserts on: it must see a shard nobody reads, and must not
// count a shard that simply had nothing to read.
describe('unreadGaps (the rolling-migration metric)', () => {
  it('a shard read promptly is unread only for the send-to-delivery time', () => {
    const gaps = unreadGaps([sent('a', 0), sent('b', 100)], [got('a', 20), got('b', 130)], 1000);
    expect(gaps).to.deep.equal([{ shardId: 's1', longestMs: 30, fromMs: 100 }]);
  });

  it('idle time with nothing waiting does not count', () => {
    const gaps = unreadGaps([sent('a', 0), sent('b', 5000)], [got('a', 10), got('b', 5010)], 9000);
    expect(gaps[0]?.longestMs).to.equal(10);
  });

  it('while records wait, the gap runs from the last first-delivery, not from each send', () => {
    // a waits from 0; b and c are sent while a waits; a is delivered at 900, b at 2900, c at 3000.
    const gaps = unreadGaps([sent('a', 0), sent('b', 100), sent('c', 2000)], [got('a', 900), got('b', 2900), got('c', 3000)], 4000);
    expect(gaps[0]).to.deep.equal({ shardId: 's1', longestMs: 2000, fromMs: 900 });
  });

  it('a redelivery is not progress; the first delivery counts', () => {
    const gaps = unreadGaps([sent('a', 0), sent('b', 10)], [got('a', 50), got('a', 400), got('b', 1000)], 2000);
    expect(gaps[0]).to.deep.equal({ shardId: 's1', longestMs: 950, fromMs: 50 });
  });

  it('a record never delivered keeps its shard unread until the end', () => {
    const gaps = unreadGaps([sent('a', 0, 's1'), sent('b', 0, 's2')], [got('a', 5)], 7000);
    expect(gaps).to.deep.equal([{ shardId: 's1', longestMs: 5, fromMs: 0 }, { shardId: 's2', longestMs: 7000, fromMs: 0 }]);
  });
});
