// The fan-out reader's pure decisions: when the next SubscribeToShard may go out, and where it
// starts. No I/O, no RxJS, no clock: times come in.
import { comparePositions } from '../checkpoint/sequence-number.js';
import type { IteratorPlan } from './start-position.js';
import { type Delivered, planResume } from './start-position.js';

/**
 * A subscription is renewed this long after it started, before the service ends it (at 300000
 * ms): a margin for clock drift, and a bound on how long a silently dead connection can hold a shard.
 */
export const DEFAULT_RENEW_AFTER_MS = 290_000;

/** Kinesis allows one SubscribeToShard per second per consumer and shard. */
const MIN_SUBSCRIBE_INTERVAL_MS = 1000;

/** Milliseconds to wait before the next SubscribeToShard: the first goes at once, then one a second. */
export function subscribeDelayMs(nowMs: number, lastSubscribeAtMs: number | undefined): number {
  return lastSubscribeAtMs === undefined ? 0 : Math.max(0, lastSubscribeAtMs + MIN_SUBSCRIBE_INTERVAL_MS - nowMs);
}

/**
 * Where a (new) subscription starts. `continuation` is the ContinuationSequenceNumber of the last
 * event whose records were all delivered: the service's own "continue here", which also moves on
 * when events carry no records (a LATEST start, an idle shard). When the reader has delivered past
 * it (a later event, partly delivered), it resumes right after the last delivered record; before
 * either, where reading started (see `planResume`).
 */
export function planSubscribe(
  origin: IteratorPlan,
  last: Delivered | undefined,
  continuation: string | undefined,
  originStart: Date | undefined,
): IteratorPlan {
  if (continuation !== undefined && (last === undefined || comparePositions({ sequenceNumber: continuation }, last.position) > 0)) {
    return { iteratorStart: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: continuation } };
  }
  return planResume(origin, last, originStart);
}
