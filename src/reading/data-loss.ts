// Data loss, said (design §9.1, docs/data-loss.md). Kinesis positions an iterator from a trimmed
// sequence number at the oldest record it keeps, without an error, and its sequence numbers are not
// dense: a record read after a checkpoint does not say whether records came between. What can be
// told exactly is whether the stream still keeps the checkpoint's own record: a lease starting from
// a stored checkpoint reads AT it (start-position.ts `startAtCheckpoint`), so the first record of
// the first page with records is the checkpoint's, unless it was trimmed. Pure: the delivery asks.
import { comparePositions } from '../checkpoint/sequence-number.js';
import type { Position } from '../ports/position.js';
import type { RawRecord } from '../ports/stream.js';
import type { CheckpointPosition } from '../types.js';
import type { IteratorPlan } from './start-position.js';

/** What a shard does when its checkpoint lies behind the trim horizon (the `onDataLoss` option). */
export type OnDataLoss = 'continue' | 'stop-shard';

/**
 * A shard's checkpoint lies behind the stream's trim horizon: the stream no longer keeps the
 * checkpoint's record, so the records after it that arrived before the horizon expired unread — if
 * there were any (a shard that received nothing for longer than the retention looks the same).
 * Logged as an error. See docs/data-loss.md.
 */
export interface DataLostEvent {
  /** Which event this is. */
  readonly type: 'data-lost';
  /** The shard. */
  readonly shardId: string;
  /** The checkpoint the lease started from, whose record the stream no longer keeps. */
  readonly checkpoint: CheckpointPosition;
  /** The sequence number of the oldest record the stream keeps after it: where reading resumes (`'continue'`), or would have. */
  readonly resumedAt: string;
  /** When that record arrived (the stream's clock). */
  readonly resumedArrivedAt: Date;
  /** What the shard does: reads on from `resumedAt`, or stops (its `records$` errors with `DataLostError`, its lease kept unread). */
  readonly onDataLoss: OnDataLoss;
}

/** The gap {@link DataLossWatch} found: the checkpoint, and the first record the stream returned after it. */
export interface CheckpointGap {
  readonly checkpoint: Position;
  readonly resumedAt: RawRecord;
}

/** The checkpoint a reader's first records must begin with: its start AT a checkpoint's record, passing over it (else none). */
export function checkpointToVerify(origin: IteratorPlan): Position | undefined {
  const { iteratorStart: start, skipThrough } = origin;
  if (start.type !== 'AT_SEQUENCE_NUMBER' || skipThrough === undefined) return undefined;
  return comparePositions({ sequenceNumber: start.sequenceNumber }, { sequenceNumber: skipThrough.sequenceNumber }) === 0 ? skipThrough : undefined;
}

/** One reader's check of its start: the first record it reads is its checkpoint's, or there is a gap. */
export class DataLossWatch {
  #checkpoint: Position | undefined;

  constructor(origin: IteratorPlan) {
    this.#checkpoint = checkpointToVerify(origin);
  }

  /** A page arrived (its raw records, in order): the gap, when its first record is not the checkpoint's. Once. */
  page(records: readonly RawRecord[]): CheckpointGap | undefined {
    const checkpoint = this.#checkpoint;
    const first = records[0];
    if (checkpoint === undefined || first === undefined) return undefined;
    this.#checkpoint = undefined;
    const same = comparePositions({ sequenceNumber: first.sequenceNumber }, { sequenceNumber: checkpoint.sequenceNumber }) === 0;
    return same ? undefined : { checkpoint, resumedAt: first };
  }
}
