// The checkpoint of one leased shard, as pure state: no I/O, no RxJS, no clock. The checkpointer
// feeds it acks and asks it what to write; tests drive it directly.
import type { AckedRange, CheckpointWrite, StoredCheckpoint } from '../ports/lease-store.js';
import { type Position } from '../ports/position.js';
import { Ack, ackRuns, isAcked, plainPosition } from './ack-runs.js';
import { ACKED_RANGES_HARD_MAX_BYTES, ACKED_RANGES_MAX_BYTES, capAckedRanges, encodeAckedRanges } from './acked-ranges.js';
import { advances } from './checkpoint-advance.js';
import { InheritedRanges } from './inherited-ranges.js';
import { WHOLE, checkedSequenceKey, compareKeyed, comparePositions, describePosition, sequenceKey } from './sequence-number.js';

/**
 * A record registered with {@link CheckpointState.track}: a ticket, the record's place in the
 * shard's tracking order. The record keeps it, so its ack costs O(1) and makes nothing.
 */
export type TrackedRecord = number;

/** What a commit (or release) should write, snapshotted from the state before the write starts. */
export interface CommitDecision {
  readonly write: CheckpointWrite;
  /** Something new to write (the position or ranges changed, or `Finished` is due) that fits: else `write` is the last one written. */
  readonly changed: boolean;
  /** The state's version at the snapshot; {@link CheckpointState.committed} compares it. */
  readonly version: number;
  /**
   * With held records included (see {@link CheckpointState.decide}): the write covers every one of
   * them — each is under the watermark it writes, or the ranges that must be kept still fit in
   * `ACKED_RANGES_MAX_BYTES`. When not, the records must wait for the watermark.
   */
  readonly covers?: boolean;
}

// A sequence number is checked in full when its prefix (all but these last digits) differs from
// the last one checked; the next records of a shard usually share it (see CheckpointState#follows).
const BLOCK_DIGITS = 16;
const NINES = '9'.repeat(BLOCK_DIGITS);

/**
 * A shard's checkpoint: the contiguous-ack watermark, the records acked beyond it, `dirty` and the
 * Go kinsumer's Finished rule.
 *
 * Records are tracked in emission (sequence) order and acked in any order; the position only
 * advances to the highest record whose predecessors are all acked, so a gap holds it back.
 * The position never moves backwards through acks. What is acked beyond it is written too, as
 * ranges (§7.3); ranges a previous owner wrote are inherited: their records are {@link skip}ped.
 */
export class CheckpointState {
  // The checkpoint to store while no record was acked under this lease (as captured, or the kept start).
  #initial: StoredCheckpoint | undefined;
  // The watermark: the last record acked together with every record before it (undefined: none yet),
  // and its sequence number as canonical digits and sub-sequence number, for comparisons.
  #watermark: Position | undefined;
  #sequence: string | undefined;
  #sub = WHOLE;
  // The watermark as a StoredCheckpoint, made when asked (once per write, not once per ack).
  #stored: StoredCheckpoint | undefined;
  #version = 0;
  #committedVersion = 0;
  // The version a write must reach for the start given to the constructor to be stored (0: none to store).
  #startVersion = 0;
  // Tracked records beyond the watermark, oldest first, and how each is acked; entries before
  // #head are released. The ticket of #queue[i] is #offset + i.
  #queue: (Position | undefined)[] = [];
  #acked: Ack[] = [];
  #head = 0;
  #offset = 0;
  #unacked = 0;
  // The last record tracked (or skipped): its position, canonical sequence number and sub-sequence number.
  #last: Position | undefined;
  #lastSequence = '';
  #lastSub = WHOLE;
  // The highest sequence number sharing the last fully checked one's prefix (see #follows).
  #ceiling = '';
  #finished = false;
  #final: Position | undefined;
  #finishedWritten = false;
  // Ranges a previous owner acked that this owner has not passed yet.
  #inherited: InheritedRanges;
  // What the row holds: the last write that succeeded, or the row as captured.
  #written: CheckpointWrite;

  /**
   * @param initial the checkpoint stored at capture.
   * @param options.start where reading really starts, when the stored checkpoint does not say it
   * (a `LATEST` or timestamp start, see `startToKeep`): it replaces an `initial` that is not a
   * position and is dirty, so the first write stores it and a hand-off before the first ack keeps it.
   * @param options.finished the row is `Finished` already: it is never written again.
   * @param options.acked the ranges stored with `initial` (acked by a previous owner): their records
   * are skipped, and written again until the watermark passes them.
   * @throws RangeError when `initial` is a position that is not a sequence number.
   */
  constructor(initial: StoredCheckpoint | undefined, options: {
    readonly start?: StoredCheckpoint | undefined; readonly finished?: boolean; readonly acked?: readonly AckedRange[] | undefined;
  } = {}) {
    const { start, finished = false, acked = [] } = options;
    this.#finishedWritten = finished;
    this.#written = acked.length === 0 ? { checkpoint: initial, finished } : { checkpoint: initial, finished, acked };
    this.#initial = initial;
    if (initial?.type === 'position') {
      this.#sequence = checkedSequenceKey(initial.position);
      this.#sub = initial.position.subSequenceNumber ?? WHOLE;
    } else if (start !== undefined && (start.type === 'position' || advances(initial, start))) {
      this.#initial = start;
      this.#version = 1;
      this.#startVersion = 1;
    }
    const position = this.#initial?.type === 'position' ? this.#initial.position : undefined;
    this.#inherited = new InheritedRanges(acked, position === undefined || this.#sequence === undefined ? undefined : { position, sequence: this.#sequence, sub: this.#sub });
  }

  /** The checkpoint to store: the watermark, or the initial checkpoint until something was acked. */
  get position(): StoredCheckpoint | undefined {
    if (this.#watermark === undefined) return this.#initial;
    this.#stored ??= { type: 'position', position: plainPosition(this.#watermark) };
    return this.#stored;
  }

  /** The position moved since the last successful write. */
  get dirty(): boolean {
    return this.#version !== this.#committedVersion;
  }

  /** The start given to the constructor is stored (a write of it succeeded), or there was none to store. */
  get startStored(): boolean {
    return this.#committedVersion >= this.#startVersion;
  }

  /** {@link finish} was called: the shard is closed. */
  get finished(): boolean {
    return this.#finished;
  }

  /** `Finished` is stored: the row was `Finished` at capture, or a commit or release with `finished: true` succeeded. */
  get finishedWritten(): boolean {
    return this.#finishedWritten;
  }

  /**
   * The Go rule allows writing `Finished`: the shard is closed, every tracked record is acked,
   * and the position is the final record (or nothing was read since the capture).
   */
  get finishable(): boolean {
    return this.#finishableAt(this.#head, this.position);
  }

  /** Tracked records not yet acked. */
  get inFlight(): number {
    return this.#unacked;
  }

  /** Tracked records beyond the watermark (not yet acked, or acked behind a gap). */
  get pending(): number {
    return this.#queue.length - this.#head;
  }

  /** The oldest record beyond the watermark (always unacked: it is what holds the watermark back); `undefined` when none. */
  get oldest(): Position | undefined {
    const oldest = this.#queue[this.#head];
    return oldest === undefined ? undefined : plainPosition(oldest);
  }

  /**
   * The first record about to be delivered since the capture narrows a start kept as a timestamp:
   * to its arrival time (the stream's own clock), with a floor just below it (records before it
   * arrived before the group's start: a LATEST iterator did not return them). The narrowed start
   * must be stored before the record is emitted ({@link startStored} is `false` until then), so a
   * next owner never begins before what this one delivered. Returns `true` when it changed the start.
   */
  narrowStart(first: Position, arrivedAt: Date): boolean {
    if (this.#last !== undefined || this.#watermark !== undefined || this.#initial?.type !== 'AT_TIMESTAMP') return false;
    const after = { sequenceNumber: (BigInt(first.sequenceNumber) - 1n).toString() };
    const current = this.#initial;
    if (current.timestamp.getTime() === arrivedAt.getTime() && current.after?.sequenceNumber === after.sequenceNumber) return false;
    this.#initial = { type: 'AT_TIMESTAMP', timestamp: arrivedAt, after };
    this.#version += 1;
    this.#startVersion = this.#version;
    return true;
  }

  /**
   * Before any record: a start kept as a timestamp earlier than `streamTime` (the stream's clock
   * at the lease's first LATEST iterator) moves up to it, keeping its floor. Records before it are
   * not the group's: the LATEST iterator did not return them. Like {@link narrowStart}, it must be
   * stored before a record is emitted. Returns `true` when it changed the start.
   */
  raiseStart(streamTime: Date): boolean {
    if (this.#last !== undefined || this.#watermark !== undefined || this.#initial?.type !== 'AT_TIMESTAMP') return false;
    if (this.#initial.timestamp.getTime() >= streamTime.getTime()) return false;
    this.#initial = { ...this.#initial, timestamp: streamTime };
    this.#version += 1;
    this.#startVersion = this.#version;
    return true;
  }

  /**
   * Registers a record about to be emitted and returns its ticket (for {@link ack}). Positions
   * must strictly increase, and start after the current position: a record at or before the
   * checkpoint was consumed already. The state keeps `position` (a delivered record may be it)
   * until the watermark passes it.
   *
   * The first record of a timestamp start (a `LATEST` start kept as a timestamp) narrows that start
   * to its arrival time on the stream's own clock (`arrivedAt`, else the position's
   * `approximateArrivalTimestamp`, read then only): nothing after the start came before it, so the
   * start no longer depends on the client's clock.
   * @throws RangeError on a malformed or out-of-order position, or after {@link finish}.
   */
  track(position: Position & { readonly approximateArrivalTimestamp?: Date }, arrivedAt?: Date): TrackedRecord {
    if (this.#finished) throw new RangeError('cannot track a record after finish()');
    const sub = position.subSequenceNumber ?? WHOLE;
    if (sub !== WHOLE && !(Number.isSafeInteger(sub) && sub >= 0)) throw new RangeError(`not a sub-sequence number: ${sub}`);
    const raw = position.sequenceNumber;
    let sequence: string;
    if (this.#follows(raw)) {
      // Checked by #follows: digits, in the block of the last record, and after it.
      sequence = raw;
    } else if (this.#last !== undefined && raw === this.#last.sequenceNumber) {
      // The next sub-record of the same aggregate: only the sub-sequence number has to grow.
      sequence = this.#lastSequence;
      this.#checkOrder(position, sequence, sub);
    } else {
      const key = sequenceKey(raw);
      if (key === undefined) throw new RangeError(`not a sequence number: ${String(raw)}`);
      this.#checkOrder(position, key, sub);
      sequence = key;
      this.#enterBlock(key);
    }
    if (this.#last === undefined && this.#watermark === undefined && this.#initial?.type === 'AT_TIMESTAMP') {
      const arrival = arrivedAt ?? position.approximateArrivalTimestamp;
      if (arrival !== undefined && this.#initial.timestamp.getTime() !== arrival.getTime()) {
        this.#initial = { ...this.#initial, timestamp: arrival };
        this.#version += 1;
      }
    }
    // A record inside an inherited range that is tracked rather than skipped: the rest of that range is dropped.
    if (this.#inherited.ahead) this.#inherited.pass(sequence, sub, true);
    const ticket = this.#offset + this.#queue.length;
    this.#queue.push(position);
    this.#acked.push(Ack.None);
    this.#unacked += 1;
    this.#last = position;
    this.#lastSequence = sequence;
    this.#lastSub = sub;
    return ticket;
  }

  /**
   * When an inherited range holds `position` (a previous owner acked it), registers the record as
   * tracked and acked — in order, like {@link track}, so the watermark passes it when it gets
   * there — and returns `true`: it is not emitted. Otherwise registers nothing and returns `false`.
   * @throws RangeError as {@link track} does.
   */
  skip(position: Position): boolean {
    if (!this.#inherited.ahead) return false;
    if (this.#finished) throw new RangeError('cannot track a record after finish()');
    const sequence = checkedSequenceKey(position);
    const sub = position.subSequenceNumber ?? WHOLE;
    this.#checkOrder(position, sequence, sub);
    if (!this.#inherited.pass(sequence, sub, false)) return false;
    this.#enterBlock(sequence);
    this.#queue.push(position);
    // Kept: the previous owner may have committed writes with it (§8.1), so its range is never dropped.
    this.#acked.push(Ack.Kept);
    this.#last = position;
    this.#lastSequence = sequence;
    this.#lastSub = sub;
    if (this.#queue.length - 1 === this.#head) this.#advance();
    return true;
  }

  /**
   * Acks a tracked record by its ticket; idempotent. Returns `true` when this call changed
   * something (the first ack of that record), whether or not the watermark moved.
   */
  ack(record: TrackedRecord): boolean {
    const index = record - this.#offset;
    // Only a ticket of a record still tracked and unacked finds None: one below #head was
    // released (acked), one this state did not hand out finds nothing, a held one waits for its writes.
    if (this.#acked[index] !== Ack.None) return false;
    this.#acked[index] = Ack.Plain;
    this.#unacked -= 1;
    if (index === this.#head) this.#advance();
    // Acked behind a gap: the watermark stays, but the ranges to write changed.
    else this.#version += 1;
    return true;
  }

  /** The shard is closed; `last` is its last record read since the capture (`undefined`: none). */
  finish(last: Position | undefined): void {
    this.#finished = true;
    this.#final = last === undefined ? undefined : plainPosition(last);
  }

  /**
   * The write to make now (held back while ranges to keep outgrow the hard cap). Snapshot it before
   * the write starts. With `including` (held records): a transaction's write, counted as {@link commitHeld} will.
   */
  decide(including?: readonly TrackedRecord[]): CommitDecision {
    let head = this.#head;
    let position = this.position;
    let extra: Set<number> | undefined;
    if (including !== undefined && including.length > 0) {
      extra = new Set(including.map((ticket) => ticket - this.#offset));
      while (head < this.#queue.length && (isAcked(this.#acked[head]) || extra.has(head))) head += 1;
      if (head > this.#head) position = { type: 'position', position: plainPosition(this.#queue[head - 1] as Position) };
    }
    const finished = this.#finishableAt(head, position) && !this.#finishedWritten;
    const runs = this.#runs(head, extra);
    const acked = capAckedRanges(position, runs.ranges, undefined, runs.kept);
    const write: CheckpointWrite = acked.length === 0 ? { checkpoint: position, finished } : { checkpoint: position, finished, acked };
    // Only ranges that must be kept go beyond the cap: made within it, plain acks may grow them
    // (a kept `1.z` becomes `1.z-0.10`) past the hard cap, which no store cuts.
    const bytes = runs.kept.includes(true) ? (encodeAckedRanges(position, acked, Number.POSITIVE_INFINITY)?.text.length ?? 0) : 0;
    const fits = bytes <= ACKED_RANGES_HARD_MAX_BYTES;
    if (extra === undefined) {
      // Held back until the watermark shrinks them: the last write holds every range to keep.
      if (!fits) return { write: this.#written, changed: false, version: this.#committedVersion };
      return { write, changed: this.dirty || finished, version: this.#version };
    }
    // A held record beyond the watermark needs its range: kept ones fit in the cap when they are made.
    const covers = fits && (![...extra].some((index) => index >= head) || bytes <= ACKED_RANGES_MAX_BYTES);
    return { write, changed: true, version: this.#version, covers };
  }

  /**
   * Every record known to be acked beyond the watermark, as ranges in order (uncapped): runs of
   * acked tracked records, each ended by an unacked one, and the inherited ranges not yet reached.
   * A run that ends with a skipped record goes on to the end of the inherited range holding it.
   */
  ackedRanges(): AckedRange[] {
    return this.#runs(this.#head, undefined).ranges;
  }

  /**
   * Holds an unacked record whose writes wait for their transaction: a gap in every checkpoint until
   * {@link commitHeld} (no write covers writes not applied with it). `false` if acked, held or untracked.
   */
  hold(record: TrackedRecord): boolean {
    const index = record - this.#offset;
    if (this.#acked[index] !== Ack.None) return false;
    this.#acked[index] = Ack.Held;
    return true;
  }

  /** A held record's writes failed: it is unacked again (an ack may come again). */
  unhold(record: TrackedRecord): void {
    if (this.#acked[record - this.#offset] === Ack.Held) this.#acked[record - this.#offset] = Ack.None;
  }

  /** The transaction of `decision` ({@link decide} with held `records`) succeeded: they are acked and kept. */
  commitHeld(decision: CommitDecision, records: readonly TrackedRecord[]): void {
    const unchanged = decision.version === this.#version;
    let moved = false;
    for (const record of records) {
      const index = record - this.#offset;
      if (this.#acked[index] !== Ack.Held) continue;
      this.#acked[index] = Ack.Kept;
      this.#unacked -= 1;
      moved ||= index === this.#head;
    }
    if (moved) this.#advance();
    else this.#version += 1;
    // Clean only when the watermark stands where the write left it: records skipped (or tracked)
    // after the decision that the watermark passes now are not in the row's checkpoint.
    const asWritten = unchanged && !advances(decision.write.checkpoint, this.position);
    this.committed(asWritten ? { ...decision, version: this.#version } : decision);
  }

  /** The ranges beyond entry `head`, `extra` entries counted as kept acks. */
  #runs(head: number, extra: ReadonlySet<number> | undefined) {
    const last = this.#last === undefined ? undefined : { sequence: this.#lastSequence, sub: this.#lastSub, position: this.#last };
    return ackRuns({ queue: this.#queue, acked: this.#acked, head, including: extra, inherited: this.#inherited.remaining(), last });
  }

  /** The Go rule of {@link finishable}, for a watermark at entry `head` and checkpoint `position`. */
  #finishableAt(head: number, position: StoredCheckpoint | undefined): boolean {
    if (!this.#finished || this.#queue.length - head > 0) return false;
    if (this.#final === undefined) return true;
    return position?.type === 'position' && comparePositions(position.position, this.#final) === 0;
  }

  /** A write of `decision` succeeded: clears `dirty` only if the position did not move since the snapshot. */
  committed(decision: CommitDecision): void {
    this.#written = decision.write;
    if (decision.version > this.#committedVersion) this.#committedVersion = decision.version;
    if (decision.write.finished) this.#finishedWritten = true;
  }

  #advance(): void {
    const queue = this.#queue;
    const acked = this.#acked;
    let head = this.#head;
    while (head < queue.length && isAcked(acked[head])) head += 1;
    if (head === this.#head) return;
    const last = queue[head - 1] as Position;
    // Release memory as the watermark moves, a thousand entries at a time (emptying the arrays on
    // every drain would free and regrow their storage for each record of a consumer acking at once).
    if (head >= 1024 && head === queue.length) {
      this.#offset += queue.length;
      queue.length = 0;
      acked.length = 0;
      this.#head = 0;
    } else if (head >= 1024 && head * 2 >= queue.length) {
      this.#offset += head;
      this.#queue = queue.slice(head);
      this.#acked = acked.slice(head);
      this.#head = 0;
    } else {
      for (let i = this.#head; i < head; i += 1) queue[i] = undefined;
      this.#head = head;
    }
    // Records are tracked after the position and released in order: the last one released is
    // beyond the watermark (its key is not needed again: order is checked against the last tracked).
    this.#watermark = last;
    this.#stored = undefined;
    this.#version += 1;
  }

  /**
   * `raw` is a sequence number after the last one tracked and in its block: canonical digits of
   * the same length, between it and the block's ceiling (so it shares the block's prefix, checked
   * when the block was entered), its last {@link BLOCK_DIGITS} digits checked here. The usual
   * next record of a shard, checked without a look at its first forty digits.
   */
  #follows(raw: unknown): raw is string {
    if (typeof raw !== 'string' || this.#last === undefined) return false;
    const last = this.#lastSequence;
    const { length } = raw;
    if (length !== last.length || !(raw > last) || !(raw <= this.#ceiling)) return false;
    for (let i = length - BLOCK_DIGITS; i < length; i += 1) {
      const code = raw.charCodeAt(i);
      if (code < 48 || code > 57) return false;
    }
    return true;
  }

  /** A sequence number checked in full: the block its successors are checked against. */
  #enterBlock(sequence: string): void {
    this.#ceiling = sequence.length > BLOCK_DIGITS ? sequence.slice(0, sequence.length - BLOCK_DIGITS) + NINES : '';
  }

  #checkOrder(position: Position, sequence: string, sub: number): void {
    const tracked = this.#last !== undefined;
    const beforeSequence = tracked ? this.#lastSequence : this.#sequence;
    if (beforeSequence === undefined) return;
    if (compareKeyed(sequence, sub, beforeSequence, tracked ? this.#lastSub : this.#sub) <= 0) {
      throw new RangeError(`record ${describePosition(position)} is not after ${tracked ? 'the previous record' : 'the checkpoint'}`);
    }
  }
}
