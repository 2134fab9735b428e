// The order of a shard's tracked records, checked at a cost that does not grow with the sequence
// number's length on the usual path: positions must strictly increase and start after the
// checkpoint. Pure.
import type { Position } from '../ports/position.js';
import { WHOLE, compareKeyed, describePosition, sequenceKey } from './sequence-number.js';

// A sequence number is checked in full when its prefix (all but these last digits) differs from
// the last one checked; the next records of a shard usually share it (see TrackOrder#follows).
const BLOCK_DIGITS = 16;
const NINES = '9'.repeat(BLOCK_DIGITS);

/** A position as canonical digits and a sub-sequence number ({@link WHOLE} for a plain record). */
export interface KeyedPosition {
  readonly sequence: string;
  readonly sub: number;
}

/** The last record tracked (or skipped), and the checkpoint the first one must come after. */
export class TrackOrder {
  /** The last record passed: its position, canonical sequence number and sub-sequence number. */
  last: Position | undefined;
  lastSequence = '';
  lastSub = WHOLE;
  // The highest sequence number sharing the last fully checked one's prefix (see #follows).
  #ceiling = '';

  /** @param after the checkpoint, keyed; `undefined` when it is not a position. */
  constructor(private readonly after: KeyedPosition | undefined) {}

  /**
   * The keyed position of the next record to track, checked to come after the last one.
   * @throws RangeError on a malformed or out-of-order position.
   */
  next(position: Position): KeyedPosition {
    const sub = position.subSequenceNumber ?? WHOLE;
    if (sub !== WHOLE && !(Number.isSafeInteger(sub) && sub >= 0)) throw new RangeError(`not a sub-sequence number: ${sub}`);
    const raw = position.sequenceNumber;
    // Checked by #follows: digits, in the block of the last record, and after it.
    if (this.#follows(raw)) return { sequence: raw, sub };
    if (this.last !== undefined && raw === this.last.sequenceNumber) {
      // The next sub-record of the same aggregate: only the sub-sequence number has to grow.
      this.check(position, this.lastSequence, sub);
      return { sequence: this.lastSequence, sub };
    }
    const key = sequenceKey(raw);
    if (key === undefined) throw new RangeError(`not a sequence number: ${String(raw)}`);
    this.check(position, key, sub);
    this.enterBlock(key);
    return { sequence: key, sub };
  }

  /** The record at `position` was passed (tracked or skipped). */
  passed(position: Position, { sequence, sub }: KeyedPosition): void {
    this.last = position;
    this.lastSequence = sequence;
    this.lastSub = sub;
  }

  /** @throws RangeError when the position is not after the last one passed (or the checkpoint). */
  check(position: Position, sequence: string, sub: number): void {
    const tracked = this.last !== undefined;
    const before = tracked ? { sequence: this.lastSequence, sub: this.lastSub } : this.after;
    if (before === undefined) return;
    if (compareKeyed(sequence, sub, before.sequence, before.sub) <= 0) {
      throw new RangeError(`record ${describePosition(position)} is not after ${tracked ? 'the previous record' : 'the checkpoint'}`);
    }
  }

  /** A sequence number checked in full: the block its successors are checked against. */
  enterBlock(sequence: string): void {
    this.#ceiling = sequence.length > BLOCK_DIGITS ? sequence.slice(0, sequence.length - BLOCK_DIGITS) + NINES : '';
  }

  /**
   * `raw` is a sequence number after the last one tracked and in its block: canonical digits of
   * the same length, between it and the block's ceiling (so it shares the block's prefix, checked
   * when the block was entered), its last {@link BLOCK_DIGITS} digits checked here. The usual
   * next record of a shard, checked without a look at its first forty digits.
   */
  #follows(raw: unknown): raw is string {
    if (typeof raw !== 'string' || this.last === undefined) return false;
    const last = this.lastSequence;
    const { length } = raw;
    if (length !== last.length || !(raw > last) || !(raw <= this.#ceiling)) return false;
    for (let i = length - BLOCK_DIGITS; i < length; i += 1) {
      const code = raw.charCodeAt(i);
      if (code < 48 || code > 57) return false;
    }
    return true;
  }
}
