// Where a shard's reading starts, and where it resumes when an iterator must be rebuilt.
// Pure: the captured checkpoint and the option in, a GetShardIterator request out.
import { comparePositions } from '../checkpoint/sequence-number.js';
import type { CheckpointRow, StoredCheckpoint } from '../ports/lease-store.js';
import { type Position } from '../ports/position.js';
import type { IteratorStart } from '../ports/stream.js';
import type { InitialPosition, StartingPosition } from '../types.js';

/**
 * The client-clock skew a LATEST start is safe against where the stream does not tell its own
 * clock: the start kept at the capture (see {@link startToKeep}) is this much earlier than the
 * client's clock says, until the first iterator's answer names the stream's time (Kinesis's `Date`
 * header, see `IssuedIterator.streamTime`), which replaces it. Kinesis compares an `AT_TIMESTAMP`
 * with its own arrival timestamps, so a client clock up to this far ahead still names a time before
 * the real start, never after it (a record put in between would be skipped). Five minutes is also
 * how far SigV4 lets a request's clock be off. The cost, only without a `Date` header: a shard
 * handed over before it delivered any record is read again from up to five minutes before the
 * group's start.
 */
export const START_SKEW_MARGIN_MS = 300_000;

/** A GetShardIterator request and the sub-records to drop from the first aggregate it returns. */
export interface IteratorPlan {
  readonly iteratorStart: IteratorStart;
  /**
   * Resuming inside a KPL aggregate: the iterator starts AT that aggregate, and every user record
   * at or before this position was consumed already and is skipped.
   */
  readonly skipThrough?: Position;
}

/** How a freshly captured lease starts reading, and how it says so publicly. */
export interface StartPlan extends IteratorPlan {
  readonly startingPosition: StartingPosition;
  /** A LATEST start's time floor (a reset's, see `StoredCheckpoint`): the start kept is never earlier. */
  readonly notBefore?: Date;
}

/**
 * From the checkpoint stored at capture (a stored checkpoint always wins, read through
 * {@link startOf}) or, for a shard never consumed, from the `initialPosition` option.
 */
export function planStart(checkpoint: StoredCheckpoint | undefined, initialPosition: InitialPosition): StartPlan {
  if (checkpoint === undefined) return fromInitialPosition(initialPosition);
  const start = startOf(checkpoint);
  const startingPosition = startingPositionOf(start);
  switch (start.type) {
    case 'LATEST': {
      const plan = withSkip({ iteratorStart: { type: 'LATEST' }, startingPosition }, start.after);
      return start.notBefore === undefined ? plan : { ...plan, notBefore: start.notBefore };
    }
    // Set by an operator's reset: a start, whatever the initialPosition option says.
    case 'TRIM_HORIZON':
      return { iteratorStart: { type: 'TRIM_HORIZON' }, startingPosition };
    case 'AT_TIMESTAMP':
      return withSkip({ iteratorStart: { type: 'AT_TIMESTAMP', timestamp: start.timestamp }, startingPosition }, start.after);
    case 'position':
      return { ...startAtCheckpoint(start.position), startingPosition };
  }
}

/**
 * A lease starting from a stored checkpoint reads AT the checkpoint's own record and passes over it
 * (and over an aggregate's sub-records up to the checkpointed one): the first record the stream
 * returns then says whether it still keeps the checkpoint's record, or trimmed it (retention) and
 * positioned the iterator at the oldest record kept — see data-loss.ts, docs/data-loss.md. Costs
 * one record read again per capture.
 */
export function startAtCheckpoint(position: Position): IteratorPlan {
  const { sequenceNumber, subSequenceNumber } = position;
  const skipThrough = subSequenceNumber === undefined ? { sequenceNumber } : { sequenceNumber, subSequenceNumber };
  return { iteratorStart: { type: 'AT_SEQUENCE_NUMBER', sequenceNumber }, skipThrough };
}

/**
 * Where a stored checkpoint starts, as the public {@link StartingPosition} says it (a lease's
 * `lease-acquired`, a reset's `previous`, the KCL plans' kinsumer side): read through
 * {@link startOf}, without the floors that only the reader uses.
 */
export function startingPositionOf(checkpoint: StoredCheckpoint): StartingPosition {
  const start = startOf(checkpoint);
  switch (start.type) {
    case 'LATEST':
    case 'TRIM_HORIZON':
      return { type: start.type };
    case 'AT_TIMESTAMP':
      return { type: 'AT_TIMESTAMP', timestamp: start.timestamp };
    case 'position': {
      const { sequenceNumber, subSequenceNumber } = start.position;
      return subSequenceNumber === undefined
        ? { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber }
        : { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber, subSequenceNumber };
    }
  }
}

/**
 * The start a stored checkpoint stands for: the one rule every place that decides where a shard
 * starts reads it through (a capture's plan, a child's start inherited from its parents, the
 * export's KCL lease). A `LATEST` a reset wrote stands for a time, not for the tip at whatever
 * moment someone next reads it: `AT_TIMESTAMP` of the reset's moment, or of the later start time it
 * replaced (its `notBefore`), with its floor (`after`), so what was put between the reset and the
 * next capture is read too (design §8.3) — also when that capture is of a child whose finished
 * parent was reset (a finished shard is never captured again). A bare `LATEST` (written without a
 * moment, by an older writer) stays the tip at the capture; every other checkpoint stands for itself.
 */
export function startOf(checkpoint: StoredCheckpoint): StoredCheckpoint {
  if (checkpoint.type !== 'LATEST' || checkpoint.resetAt === undefined) return checkpoint;
  const timestamp = checkpoint.notBefore ?? checkpoint.resetAt;
  return checkpoint.after === undefined ? { type: 'AT_TIMESTAMP', timestamp } : { type: 'AT_TIMESTAMP', timestamp, after: checkpoint.after };
}

// A floor (what a reset to LATEST replaced): records at or before it are skipped, as after a KPL resume.
function withSkip(plan: StartPlan, after: Position | undefined): StartPlan {
  return after === undefined ? plan : { ...plan, skipThrough: after };
}

function fromInitialPosition(initialPosition: InitialPosition): StartPlan {
  if (initialPosition === 'TRIM_HORIZON' || initialPosition === 'LATEST') {
    return { iteratorStart: { type: initialPosition }, startingPosition: { type: initialPosition } };
  }
  const { timestamp } = initialPosition;
  return { iteratorStart: { type: 'AT_TIMESTAMP', timestamp }, startingPosition: { type: 'AT_TIMESTAMP', timestamp } };
}

/**
 * The start a lease keeps until its first ack, so that a hand-off or a crash before that ack does
 * not skip records: a LATEST start becomes `AT_TIMESTAMP` of `nowMs` (the client's clock at the
 * capture, before the first iterator is asked for) less {@link START_SKEW_MARGIN_MS}; a timestamp
 * start is kept as it is. Other starts need nothing: `TRIM_HORIZON` and positions do not move.
 * (Once the first record arrives, the checkpoint narrows this to that record's arrival time, which
 * is the stream's own clock; see `CheckpointState.track`.) A LATEST start is never kept earlier than
 * `notBefore`, the time floor a reset left. Given the store's clock at the capture instead (its
 * `Date`, see `HeldLease.capturedAt`), `marginMs` is `DATE_HEADER_RESOLUTION_MS`: that moment came
 * before the iterator was asked for, so nothing after the real start is skipped, and a hand-off
 * before the iterator's own answer is stored delivers nothing older than about 2 s before it.
 */
export function startToKeep(start: IteratorStart, nowMs: number, after?: Position, notBefore?: Date, marginMs = START_SKEW_MARGIN_MS): StoredCheckpoint | undefined {
  const floor = after === undefined ? {} : { after };
  if (start.type === 'LATEST') {
    const keptMs = Math.max(nowMs - marginMs, notBefore?.getTime() ?? Number.NEGATIVE_INFINITY);
    return { type: 'AT_TIMESTAMP', timestamp: new Date(keptMs), ...floor };
  }
  if (start.type === 'AT_TIMESTAMP') return { type: 'AT_TIMESTAMP', timestamp: start.timestamp, ...floor };
  return undefined;
}

/**
 * The moment of a reset to `LATEST` (its `resetAt`), from the store's answer to a read made just
 * before the write: DynamoDB's `Date` (whole seconds, so no later than the read), or, where the
 * answer has none, the client's clock less {@link START_SKEW_MARGIN_MS} (a client clock up to that
 * far ahead still names a time before the write). A record put after the write is never before it.
 */
export function resetMomentOf(serverDate: Date | undefined, clientNowMs: number): Date {
  return serverDate ?? new Date(clientNowMs - START_SKEW_MARGIN_MS);
}

/**
 * What a reset to `LATEST` stores: `LATEST` with the checkpoint it replaces as a floor (`after`),
 * and a time floor (`notBefore`): the reset's own moment `resetAt` (when its write was accepted, on
 * the store's clock), or a later start time it replaced (a reset to a timestamp, or a start kept
 * as one). The next owner keeps a start no earlier than that (see {@link startToKeep}), so a
 * hand-off before the first new record re-reads neither what the group consumed before the reset
 * nor the backlog the reset skipped. It also stores `resetAt` itself: the next owner reads from that
 * moment, not from the tip at its capture (design §8.3). Other resets are stored as given: a timestamp or
 * `TRIM_HORIZON` means "read again from there".
 */
export function withResetFloor(to: StoredCheckpoint, replaced: StoredCheckpoint | undefined, resetAt?: Date): StoredCheckpoint {
  if (to.type !== 'LATEST' || to.after !== undefined || to.notBefore !== undefined) return to;
  // What the replaced checkpoint stood for (a reset replaced by a reset: its moment).
  const start = replaced === undefined ? undefined : startOf(replaced);
  const after = start?.type === 'position' ? start.position : start?.type === 'LATEST' || start?.type === 'AT_TIMESTAMP' ? start.after : undefined;
  const replacedTime = start?.type === 'AT_TIMESTAMP' ? start.timestamp : start?.type === 'LATEST' ? start.notBefore : undefined;
  const notBefore = replacedTime === undefined || (resetAt !== undefined && resetAt > replacedTime) ? resetAt : replacedTime;
  return {
    type: 'LATEST',
    ...(after === undefined ? {} : { after }),
    ...(notBefore === undefined ? {} : { notBefore }),
    ...(resetAt === undefined ? {} : { resetAt }),
  };
}

/**
 * Where a child shard (of a split or a merge) with no checkpoint of its own starts: where its
 * parents' group started, not where `initialPosition` says. The child exists only since its
 * parents closed, and it is captured only after they were read to their end, so a LATEST start
 * taken at its capture would skip every record put into it in between. Each parent's row is read
 * through {@link startOf}, as its own capture would read it:
 * - A parent read from a record, or from the oldest record kept: the group read the parent while
 *   it was open, so every record of the child is after the group's start → `TRIM_HORIZON`.
 * - Parents that only stand for a start time (a LATEST or timestamp group that read nothing of
 *   them, or a reset to LATEST: its moment): the child starts at that time too (the earliest, for
 *   a merge) — on a stream resharded long before the group began, this keeps the old children's
 *   history unread, as LATEST promises; after a reset, what was put into the child since it is read.
 * - Nothing known (no row, or a bare LATEST): `undefined`, the `initialPosition` option decides.
 */
export function inheritedStart(parents: readonly Pick<CheckpointRow, 'checkpoint'>[]): StoredCheckpoint | undefined {
  let earliest: Date | undefined;
  for (const { checkpoint } of parents) {
    const start = checkpoint === undefined ? undefined : startOf(checkpoint);
    if (start?.type === 'position' || start?.type === 'TRIM_HORIZON') return { type: 'TRIM_HORIZON' };
    if (start?.type === 'AT_TIMESTAMP' && (earliest === undefined || start.timestamp < earliest)) earliest = start.timestamp;
  }
  return earliest === undefined ? undefined : { type: 'AT_TIMESTAMP', timestamp: earliest };
}

/**
 * Reading resumes right after `position`. A plain record, or the last sub-record of its
 * aggregate (`aggregateDone`), resumes AFTER its sequence number; a sub-record inside an
 * aggregate resumes AT the aggregate and skips through the sub-record. (A stored sub-sequence
 * checkpoint does not say whether it was the last one, so it always takes the second way.)
 */
export function startAfter(position: Position, aggregateDone: boolean): IteratorPlan {
  const { sequenceNumber, subSequenceNumber } = position;
  if (subSequenceNumber === undefined || aggregateDone) return { iteratorStart: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber } };
  return { iteratorStart: { type: 'AT_SEQUENCE_NUMBER', sequenceNumber }, skipThrough: { sequenceNumber, subSequenceNumber } };
}

/** The last record a reader delivered, as far as rebuilding its iterator is concerned. */
export interface Delivered {
  readonly position: Position;
  /** `true` for a plain record or the last sub-record of its aggregate. */
  readonly aggregateDone: boolean;
}

/**
 * Where a rebuilt iterator starts (after an expired iterator or a long pause): right after the
 * last delivered record; before any delivery, where reading started. A LATEST start that
 * delivered nothing resumes AT_TIMESTAMP `originStart`: the stream's clock at its first iterator
 * (`IssuedIterator.streamTime`), else its first request less {@link START_SKEW_MARGIN_MS} (the
 * client's clock may be ahead of the stream's), so records that arrived while the iterator was
 * being replaced are not skipped.
 */
export function planResume(origin: IteratorPlan, last: Delivered | undefined, originStart: Date | undefined): IteratorPlan {
  if (last !== undefined) return startAfter(last.position, last.aggregateDone);
  if (origin.iteratorStart.type === 'LATEST' && originStart !== undefined) {
    const iteratorStart: IteratorStart = { type: 'AT_TIMESTAMP', timestamp: originStart };
    return origin.skipThrough === undefined ? { iteratorStart } : { iteratorStart, skipThrough: origin.skipThrough };
  }
  return origin;
}

/** `true` when a record at `position` was consumed already (at or before `skipThrough`). */
export function isSkipped(position: Position, skipThrough: Position | undefined): boolean {
  return skipThrough !== undefined && comparePositions(position, skipThrough) <= 0;
}
