// The acked ranges a previous owner of the shard stored (§7.3), as the new owner walks past them:
// a record inside one is skipped (acked without being emitted), and a range is written again until
// the watermark passes it. Pure.
import type { AckedRange } from '../ports/lease-store.js';
import type { Position } from '../ports/position.js';
import { WHOLE, compareKeyed, sequenceKey } from './sequence-number.js';

/** A range a previous owner acked, with its ends as canonical digits. */
export interface InheritedRange {
  readonly range: AckedRange;
  readonly fromSequence: string;
  readonly fromSub: number;
  readonly toSequence: string;
  readonly toSub: number;
}

/** The stored checkpoint, keyed: where the inherited ranges are cut. */
export interface KeyedCheckpoint {
  readonly position: Position;
  readonly sequence: string;
  readonly sub: number;
}

/** The inherited ranges ahead of the last record tracked, in order. */
export class InheritedRanges {
  // In order; those before #head lie behind the last tracked record.
  readonly #ranges: InheritedRange[];
  #head = 0;

  /** Keeps the ranges that reach beyond `checkpoint`, in order; drops them all if they are not in order. */
  constructor(acked: readonly AckedRange[], checkpoint: KeyedCheckpoint | undefined) {
    this.#ranges = inherit(acked, checkpoint);
  }

  /** Some range lies ahead. */
  get ahead(): boolean {
    return this.#head < this.#ranges.length;
  }

  /** The ranges not yet passed, in order (a copy). */
  remaining(): InheritedRange[] {
    return this.#ranges.slice(this.#head);
  }

  /**
   * Moves past the ranges that end before a record about to be tracked at (`sequence`, `sub`), and
   * says whether the next one holds it. `drop`: a record tracked as not acked, so a range holding
   * it is dropped too. A range ending at the record is passed once it is reached.
   */
  pass(sequence: string, sub: number, drop: boolean): boolean {
    for (let range = this.#ranges[this.#head]; range !== undefined; range = this.#ranges[this.#head]) {
      const endsBefore = compareKeyed(range.toSequence, range.toSub, sequence, sub) < 0;
      if (!endsBefore && compareKeyed(range.fromSequence, range.fromSub, sequence, sub) > 0) return false;
      if (endsBefore || drop) {
        this.#head += 1;
        if (endsBefore) continue;
        return false;
      }
      // Held by this range; passed when the record is its last.
      if (compareKeyed(range.toSequence, range.toSub, sequence, sub) === 0) this.#head += 1;
      return true;
    }
    return false;
  }
}

function inherit(acked: readonly AckedRange[], checkpoint: KeyedCheckpoint | undefined): InheritedRange[] {
  const inherited: InheritedRange[] = [];
  for (const range of acked) {
    const { from, to } = range;
    const fromSequence = sequenceKey(from.sequenceNumber);
    const toSequence = sequenceKey(to.sequenceNumber);
    if (fromSequence === undefined || toSequence === undefined) return [];
    const item: InheritedRange = { range, fromSequence, fromSub: from.subSequenceNumber ?? WHOLE, toSequence, toSub: to.subSequenceNumber ?? WHOLE };
    const previous = inherited.at(-1);
    if (compareKeyed(item.fromSequence, item.fromSub, item.toSequence, item.toSub) > 0) return [];
    if (previous !== undefined && compareKeyed(item.fromSequence, item.fromSub, previous.toSequence, previous.toSub) <= 0) return [];
    if (checkpoint !== undefined && compareKeyed(item.toSequence, item.toSub, checkpoint.sequence, checkpoint.sub) <= 0) continue;
    // Reaching back under the checkpoint: those records are acked anyway, the range starts at the checkpoint.
    if (checkpoint !== undefined && compareKeyed(item.fromSequence, item.fromSub, checkpoint.sequence, checkpoint.sub) < 0) {
      inherited.push({ ...item, range: { from: checkpoint.position, to }, fromSequence: checkpoint.sequence, fromSub: checkpoint.sub });
      continue;
    }
    inherited.push(item);
  }
  return inherited;
}
