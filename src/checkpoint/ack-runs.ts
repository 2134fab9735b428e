// What a shard's checkpoint state knows beyond its watermark, as the acked ranges to write (§7.3):
// runs of acked records, each ended by a record not acked, and the ranges a previous owner stored
// that lie ahead. Each range says whether it must be kept whatever the cap (§8.1). Pure.
import type { AckedRange } from '../ports/lease-store.js';
import type { Position } from '../ports/position.js';
import type { InheritedRange } from './inherited-ranges.js';
import { compareKeyed } from './sequence-number.js';

/** A tracked record's state, one small number per record. */
export const Ack = {
  /** Not acked. */
  None: 0,
  /** Acked by this owner, without writes of its own. */
  Plain: 1,
  /**
   * Acked, and its range must never be dropped for the cap: its writes were committed with the
   * checkpoint, or a previous owner acked it (skipped: its writes may have been).
   */
  Kept: 2,
  /** Acked with writes that wait for their transaction: not acked yet as far as any checkpoint goes. */
  Held: 3,
} as const;
/** One of {@link Ack}'s values. */
export type Ack = (typeof Ack)[keyof typeof Ack];

/** `true` for the states a checkpoint counts as acked. */
export function isAcked(state: Ack | undefined): boolean {
  return state === Ack.Plain || state === Ack.Kept;
}

/** The ranges to write, with the ones that must be kept marked. */
export interface AckRuns {
  readonly ranges: AckedRange[];
  readonly kept: boolean[];
}

/** What {@link ackRuns} reads of the state. */
export interface AckRunsView {
  /** Tracked records, oldest first; entries before `head` are under the watermark. */
  readonly queue: readonly (Position | undefined)[];
  readonly acked: readonly Ack[];
  /** The first entry beyond the watermark (the previewed one, see `CheckpointState.decide`). */
  readonly head: number;
  /** Entries counted as kept acks although they are not (yet): the writes of a transaction being built. */
  readonly including: ReadonlySet<number> | undefined;
  /** The inherited ranges not yet passed, in order. */
  readonly inherited: readonly InheritedRange[];
  /** The last record tracked or skipped, keyed; `undefined` when none. */
  readonly last: { readonly sequence: string; readonly sub: number; readonly position: Position } | undefined;
}

/** A position as plain data, whatever object carried it (a delivered record is one). */
export function plainPosition({ sequenceNumber, subSequenceNumber }: Position): Position {
  return subSequenceNumber === undefined ? { sequenceNumber } : { sequenceNumber, subSequenceNumber };
}

/**
 * Every record known to be acked beyond the watermark, as ranges in order (uncapped): runs of
 * acked tracked records, each ended by one not acked, and the inherited ranges not yet reached.
 * A run that ends with a skipped record goes on to the end of the inherited range holding it. A
 * range is kept when it holds a kept record or is inherited.
 */
export function ackRuns(view: AckRunsView): AckRuns {
  const { queue, acked, including } = view;
  const ranges: AckedRange[] = [];
  const kept: boolean[] = [];
  let from: Position | undefined;
  let to: Position | undefined;
  let keep = false;
  for (let i = view.head; i < queue.length; i += 1) {
    const position = queue[i] as Position;
    const state = including?.has(i) === true ? Ack.Kept : acked[i];
    if (isAcked(state)) {
      from ??= position;
      to = position;
      keep ||= state === Ack.Kept;
    } else if (from !== undefined && to !== undefined) {
      ranges.push({ from: plainPosition(from), to: plainPosition(to) });
      kept.push(keep);
      from = undefined;
      keep = false;
    }
  }
  const ahead = [...view.inherited];
  const holding = ahead[0];
  const { last } = view;
  // The last tracked record lies inside an inherited range only when it was skipped (acked).
  if (holding !== undefined && last !== undefined && compareKeyed(holding.fromSequence, holding.fromSub, last.sequence, last.sub) <= 0) {
    // Under the watermark already (nothing pending): the range goes on from that record.
    ranges.push({ from: plainPosition(from ?? last.position), to: holding.range.to });
    kept.push(true);
    from = undefined;
    ahead.shift();
  }
  if (from !== undefined && to !== undefined) {
    ranges.push({ from: plainPosition(from), to: plainPosition(to) });
    kept.push(keep);
  }
  for (const inherited of ahead) {
    ranges.push(inherited.range);
    kept.push(true);
  }
  return { ranges, kept };
}
