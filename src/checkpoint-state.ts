// The checkpoint of one leased shard, as pure state: no I/O, no RxJS, no clock. The checkpointer
// feeds it acks and asks it what to write; tests drive it directly.
import { capAckedRanges } from './acked-ranges.js';
import type { AckedRange, CheckpointWrite, StoredCheckpoint } from './ports.js';
import { comparePositions, isSequenceNumber, type Position } from './sequence-number.js';

/** A record registered with {@link CheckpointState.track}; the record keeps it so its ack costs O(1). */
export interface TrackedRecord {
  readonly position: Position;
}

/** What a commit (or release) should write, snapshotted from the state before the write starts. */
export interface CommitDecision {
  readonly write: CheckpointWrite;
  /** Something new to write: the position or the acked ranges changed since the last successful write, or `Finished` is due. */
  readonly changed: boolean;
  /** The state's version at the snapshot; {@link CheckpointState.committed} compares it. */
  readonly version: number;
}

// A plain record stands for its whole aggregate, so it sorts after every sub-record (as in comparePositions).
const WHOLE = Number.POSITIVE_INFINITY;

class Entry implements TrackedRecord {
  acked = false;

  constructor(readonly position: Position, readonly sequence: bigint, readonly sub: number) {}
}

function compare(aSequence: bigint, aSub: number, bSequence: bigint, bSub: number): number {
  if (aSequence !== bSequence) return aSequence < bSequence ? -1 : 1;
  return aSub < bSub ? -1 : aSub > bSub ? 1 : 0;
}

/** A range a previous owner acked, with its ends as numbers. */
interface Inherited {
  readonly range: AckedRange;
  readonly fromSequence: bigint;
  readonly fromSub: number;
  readonly toSequence: bigint;
  readonly toSub: number;
}

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
  #position: StoredCheckpoint | undefined;
  // The position as numbers, so comparisons on the hot path parse no strings.
  #sequence: bigint | undefined;
  #sub = WHOLE;
  #version = 0;
  #committedVersion = 0;
  // The version a write must reach for the start given to the constructor to be stored (0: none to store).
  #startVersion = 0;
  // Tracked records beyond the watermark, oldest first; entries before #head are already released.
  #queue: (Entry | undefined)[] = [];
  #head = 0;
  #unacked = 0;
  #lastTracked: Entry | undefined;
  #finished = false;
  #final: Position | undefined;
  #finishedWritten = false;
  // Ranges a previous owner acked, in order; those before #inheritedHead lie behind the last tracked record.
  #inherited: Inherited[] = [];
  #inheritedHead = 0;

  /**
   * @param initial the checkpoint stored at capture.
   * @param options.start where reading really starts, when the stored checkpoint does not say it
   * (a `LATEST` or timestamp start, see `startToKeep`): it replaces an `initial` that is not a
   * position and is dirty, so the first write stores it and a hand-off before the first ack keeps it.
   * @param options.finished the row is `Finished` already: it is never written again.
   * @param options.acked the ranges stored with `initial` (acked by a previous owner): their records
   * are skipped, and written again until the watermark passes them.
   */
  constructor(initial: StoredCheckpoint | undefined, options: {
    readonly start?: StoredCheckpoint | undefined; readonly finished?: boolean; readonly acked?: readonly AckedRange[] | undefined;
  } = {}) {
    const { start, finished = false, acked = [] } = options;
    this.#finishedWritten = finished;
    this.#position = initial;
    if (initial?.type === 'position') this.#cache(initial.position);
    else if (start !== undefined && !sameStart(start, initial)) {
      this.#position = start;
      this.#version = 1;
      this.#startVersion = 1;
    }
    this.#inherit(acked);
  }

  /** The checkpoint to store: the watermark, or the initial checkpoint until something was acked. */
  get position(): StoredCheckpoint | undefined {
    return this.#position;
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
    if (!this.#finished || this.pending > 0) return false;
    if (this.#final === undefined) return true;
    return this.#position?.type === 'position' && comparePositions(this.#position.position, this.#final) === 0;
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
    return this.#queue[this.#head]?.position;
  }

  /**
   * The first record about to be delivered since the capture narrows a start kept as a timestamp:
   * to its arrival time (the stream's own clock), with a floor just below it (records before it
   * arrived before the group's start: a LATEST iterator did not return them). The narrowed start
   * must be stored before the record is emitted ({@link startStored} is `false` until then), so a
   * next owner never begins before what this one delivered. Returns `true` when it changed the start.
   */
  narrowStart(first: Position, arrivedAt: Date): boolean {
    if (this.#lastTracked !== undefined || this.#position?.type !== 'AT_TIMESTAMP') return false;
    const after = { sequenceNumber: (BigInt(first.sequenceNumber) - 1n).toString() };
    const current = this.#position;
    if (current.timestamp.getTime() === arrivedAt.getTime() && current.after?.sequenceNumber === after.sequenceNumber) return false;
    this.#position = { type: 'AT_TIMESTAMP', timestamp: arrivedAt, after };
    this.#version += 1;
    this.#startVersion = this.#version;
    return true;
  }

  /**
   * Registers a record about to be emitted. Positions must strictly increase, and start after the
   * current position: a record at or before the checkpoint was consumed already.
   *
   * The first record of a timestamp start (a `LATEST` start kept as a timestamp) narrows that start
   * to `arrivedAt`, its arrival time on the stream's own clock: nothing after the start came before
   * it, so the start no longer depends on the client's clock.
   * @throws RangeError on a malformed or out-of-order position, or after {@link finish}.
   */
  track(position: Position, arrivedAt?: Date): TrackedRecord {
    if (this.#finished) throw new RangeError('cannot track a record after finish()');
    if (!isSequenceNumber(position.sequenceNumber)) throw new RangeError(`not a sequence number: ${String(position.sequenceNumber)}`);
    const sub = position.subSequenceNumber ?? WHOLE;
    if (sub !== WHOLE && !(Number.isSafeInteger(sub) && sub >= 0)) throw new RangeError(`not a sub-sequence number: ${sub}`);
    const sequence = BigInt(position.sequenceNumber);
    this.#checkOrder(position, sequence, sub);
    if (this.#lastTracked === undefined && arrivedAt !== undefined && this.#position?.type === 'AT_TIMESTAMP'
      && this.#position.timestamp.getTime() !== arrivedAt.getTime()) {
      this.#position = { ...this.#position, timestamp: arrivedAt };
      this.#version += 1;
    }
    const entry = new Entry(position, sequence, sub);
    // A record inside an inherited range that is tracked rather than skipped: the rest of that range is dropped.
    this.#passInherited(sequence, sub, true);
    this.#queue.push(entry);
    this.#unacked += 1;
    this.#lastTracked = entry;
    return entry;
  }

  /**
   * When an inherited range holds `position` (a previous owner acked it), registers the record as
   * tracked and acked — in order, like {@link track}, so the watermark passes it when it gets
   * there — and returns `true`: it is not emitted. Otherwise registers nothing and returns `false`.
   * @throws RangeError as {@link track} does.
   */
  skip(position: Position): boolean {
    if (this.#inheritedHead >= this.#inherited.length) return false;
    if (this.#finished) throw new RangeError('cannot track a record after finish()');
    if (!isSequenceNumber(position.sequenceNumber)) throw new RangeError(`not a sequence number: ${String(position.sequenceNumber)}`);
    const sub = position.subSequenceNumber ?? WHOLE;
    const sequence = BigInt(position.sequenceNumber);
    this.#checkOrder(position, sequence, sub);
    if (!this.#passInherited(sequence, sub, false)) return false;
    const entry = new Entry(position, sequence, sub);
    entry.acked = true;
    this.#queue.push(entry);
    this.#lastTracked = entry;
    if (this.#queue[this.#head] === entry) this.#advance();
    return true;
  }

  /**
   * Acks a tracked record; idempotent. Returns `true` when this call changed something
   * (the first ack of that record), whether or not the watermark moved.
   */
  ack(record: TrackedRecord): boolean {
    if (!(record instanceof Entry) || record.acked) return false;
    record.acked = true;
    this.#unacked -= 1;
    if (this.#queue[this.#head] === record) this.#advance();
    // Acked behind a gap: the watermark stays, but the ranges to write changed.
    else this.#version += 1;
    return true;
  }

  /** The shard is closed; `last` is its last record read since the capture (`undefined`: none). */
  finish(last: Position | undefined): void {
    this.#finished = true;
    this.#final = last;
  }

  /** The write to make now. Snapshot it before the write starts; a later ack must not be swallowed. */
  decide(): CommitDecision {
    const finished = this.finishable && !this.#finishedWritten;
    const acked = capAckedRanges(this.#position, this.ackedRanges());
    const write: CheckpointWrite = acked.length === 0 ? { checkpoint: this.#position, finished } : { checkpoint: this.#position, finished, acked };
    return { write, changed: this.dirty || finished, version: this.#version };
  }

  /**
   * Every record known to be acked beyond the watermark, as ranges in order (uncapped): runs of
   * acked tracked records, each ended by an unacked one, and the inherited ranges not yet reached.
   * A run that ends with a skipped record goes on to the end of the inherited range holding it.
   */
  ackedRanges(): AckedRange[] {
    const ranges: AckedRange[] = [];
    let from: Position | undefined;
    let to: Position | undefined;
    for (let i = this.#head; i < this.#queue.length; i += 1) {
      const entry = this.#queue[i] as Entry;
      if (entry.acked) {
        from ??= entry.position;
        to = entry.position;
      } else if (from !== undefined && to !== undefined) {
        ranges.push({ from, to });
        from = undefined;
      }
    }
    let next = this.#inheritedHead;
    const holding = this.#inherited[next];
    const last = this.#lastTracked;
    // The last tracked record lies inside an inherited range only when it was skipped (acked).
    if (holding !== undefined && last !== undefined && compare(holding.fromSequence, holding.fromSub, last.sequence, last.sub) <= 0) {
      // Under the watermark already (nothing pending): the range goes on from that record.
      ranges.push({ from: from ?? last.position, to: holding.range.to });
      from = undefined;
      next += 1;
    }
    if (from !== undefined && to !== undefined) ranges.push({ from, to });
    for (; next < this.#inherited.length; next += 1) ranges.push((this.#inherited[next] as Inherited).range);
    return ranges;
  }

  /** A write of `decision` succeeded: clears `dirty` only if the position did not move since the snapshot. */
  committed(decision: CommitDecision): void {
    if (decision.version > this.#committedVersion) this.#committedVersion = decision.version;
    if (decision.write.finished) this.#finishedWritten = true;
  }

  #advance(): void {
    let last: Entry | undefined;
    for (let entry = this.#queue[this.#head]; entry?.acked === true; entry = this.#queue[this.#head]) {
      last = entry;
      this.#queue[this.#head] = undefined;
      this.#head += 1;
    }
    // Release memory as the watermark moves: cheap reset when drained, else compact once half is dead.
    if (this.#head === this.#queue.length) {
      this.#queue.length = 0;
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    if (last === undefined) return;
    if (this.#sequence !== undefined && compare(last.sequence, last.sub, this.#sequence, this.#sub) <= 0) return;
    this.#position = { type: 'position', position: last.position };
    this.#sequence = last.sequence;
    this.#sub = last.sub;
    this.#version += 1;
  }

  #cache(position: Position): void {
    this.#sequence = BigInt(position.sequenceNumber);
    this.#sub = position.subSequenceNumber ?? WHOLE;
  }

  #checkOrder(position: Position, sequence: bigint, sub: number): void {
    const before = this.#lastTracked ?? (this.#sequence === undefined ? undefined : { sequence: this.#sequence, sub: this.#sub });
    if (before !== undefined && compare(sequence, sub, before.sequence, before.sub) <= 0) {
      throw new RangeError(`record ${describe(position)} is not after ${this.#lastTracked === undefined ? 'the checkpoint' : 'the previous record'}`);
    }
  }

  /** Keeps the inherited ranges that reach beyond the checkpoint, in order; drops them all if they are not in order. */
  #inherit(acked: readonly AckedRange[]): void {
    const inherited: Inherited[] = [];
    for (const range of acked) {
      const { from, to } = range;
      if (!isSequenceNumber(from.sequenceNumber) || !isSequenceNumber(to.sequenceNumber)) return;
      const item: Inherited = {
        range, fromSequence: BigInt(from.sequenceNumber), fromSub: from.subSequenceNumber ?? WHOLE,
        toSequence: BigInt(to.sequenceNumber), toSub: to.subSequenceNumber ?? WHOLE,
      };
      const previous = inherited.at(-1);
      if (compare(item.fromSequence, item.fromSub, item.toSequence, item.toSub) > 0) return;
      if (previous !== undefined && compare(item.fromSequence, item.fromSub, previous.toSequence, previous.toSub) <= 0) return;
      if (this.#sequence !== undefined && compare(item.toSequence, item.toSub, this.#sequence, this.#sub) <= 0) continue;
      // Reaching back under the checkpoint: those records are acked anyway, the range starts at the checkpoint.
      const position = this.#position?.type === 'position' ? this.#position.position : undefined;
      if (position !== undefined && this.#sequence !== undefined && compare(item.fromSequence, item.fromSub, this.#sequence, this.#sub) < 0) {
        inherited.push({ ...item, range: { from: position, to }, fromSequence: this.#sequence, fromSub: this.#sub });
        continue;
      }
      inherited.push(item);
    }
    this.#inherited = inherited;
  }

  /**
   * Moves past the inherited ranges that end before a record about to be tracked at (`sequence`,
   * `sub`), and says whether the next one holds it. `drop`: a record tracked as not acked, so a
   * range holding it is dropped too. A range ending at the record is passed once it is reached.
   */
  #passInherited(sequence: bigint, sub: number, drop: boolean): boolean {
    for (let range = this.#inherited[this.#inheritedHead]; range !== undefined; range = this.#inherited[this.#inheritedHead]) {
      const endsBefore = compare(range.toSequence, range.toSub, sequence, sub) < 0;
      if (!endsBefore && compare(range.fromSequence, range.fromSub, sequence, sub) > 0) return false;
      if (endsBefore || drop) {
        this.#inheritedHead += 1;
        if (endsBefore) continue;
        return false;
      }
      // Held by this range; passed when the record is its last.
      if (compare(range.toSequence, range.toSub, sequence, sub) === 0) this.#inheritedHead += 1;
      return true;
    }
    return false;
  }
}

function sameStart(a: StoredCheckpoint, b: StoredCheckpoint | undefined): boolean {
  if (a.type === 'AT_TIMESTAMP' && b?.type === 'AT_TIMESTAMP') return a.timestamp.getTime() === b.timestamp.getTime();
  return a.type === b?.type && a.type !== 'position';
}

function describe(position: Position): string {
  return position.subSequenceNumber === undefined ? position.sequenceNumber : `${position.sequenceNumber}/${position.subSequenceNumber}`;
}
