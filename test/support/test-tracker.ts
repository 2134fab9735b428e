import { type Observable, Subject, defer, filter, ignoreElements, startWith, take, tap } from 'rxjs';
import type { ShardTracker } from '../../src/ports/shard-tracker.js';
import { comparePositions } from '../../src/checkpoint/sequence-number.js';
import { type Position } from '../../src/ports/position.js';

/**
 * A small, honest ShardTracker for reader tests (the real one is the checkpointer): it counts
 * records in flight and records pending behind the first unacked one, remembers what was tracked and acked, insists on strictly increasing
 * positions, and `finish` completes once everything tracked is acked.
 */
export class TestTracker implements ShardTracker {
  /** What the reader told of the stream's clock at a LATEST start (a test sets it to listen). */
  streamStart?: (streamTime: Date) => void;
  /** Every tracked position, in tracking order. */
  readonly tracked: Position[] = [];
  /** Every acked position, in ack order (each once). */
  readonly acked: Position[] = [];
  /** The arguments of every `finish` call. */
  readonly finishCalls: (Position | undefined)[] = [];
  /** How many times something subscribed to `acks$`: a reader out of room subscribes to wait. */
  ackWaits = 0;
  /** A `finish` completed: everything tracked was acked after the end of the shard. */
  finished = false;

  private readonly acks = new Subject<void>();
  private readonly ackFns: (() => boolean)[] = [];
  private firstUnacked = 0;
  private unacked = 0;

  readonly acks$: Observable<void> = defer(() => {
    this.ackWaits += 1;
    return this.acks.asObservable();
  });

  track(record: Position): number {
    // Kept as plain data: a reader may hand over the emitted record itself.
    const position: Position = record.subSequenceNumber === undefined
      ? { sequenceNumber: record.sequenceNumber }
      : { sequenceNumber: record.sequenceNumber, subSequenceNumber: record.subSequenceNumber };
    const previous = this.tracked[this.tracked.length - 1];
    if (previous !== undefined && comparePositions(position, previous) <= 0) {
      throw new RangeError(`tracked ${describe(position)} after ${describe(previous)}`);
    }
    this.tracked.push(position);
    this.unacked += 1;
    let done = false;
    const ack = (): boolean => {
      if (done) return false;
      done = true;
      this.unacked -= 1;
      this.acked.push(position);
      this.acks.next();
      return true;
    };
    this.ackFns.push(ack);
    return this.ackFns.length - 1;
  }

  ack(ticket: number): void {
    this.ackFns[ticket]?.();
  }

  inFlight(): number {
    return this.unacked;
  }

  /** Tracked records not yet under the watermark: the first unacked one and everything tracked after it. */
  pending(): number {
    const done = new Set(this.acked);
    const gap = this.tracked.findIndex((position) => !done.has(position));
    return gap === -1 ? 0 : this.tracked.length - gap;
  }

  finish(last: Position | undefined): Observable<void> {
    return defer(() => {
      this.finishCalls.push(last);
      return this.acks.pipe(startWith(undefined), filter(() => this.unacked === 0), take(1), ignoreElements());
    }).pipe(tap({ complete: () => { this.finished = true; } }));
  }

  /** Acks the oldest `count` records not acked yet, in order. */
  ackFirst(count: number): void {
    let left = count;
    while (left > 0 && this.firstUnacked < this.ackFns.length) {
      const ack = this.ackFns[this.firstUnacked] as () => boolean;
      this.firstUnacked += 1;
      if (ack()) left -= 1;
    }
  }

  /** Acks everything tracked so far. */
  ackAll(): void {
    this.ackFirst(Number.POSITIVE_INFINITY);
  }
}

function describe(position: Position): string {
  return position.subSequenceNumber === undefined ? position.sequenceNumber : `${position.sequenceNumber}/${position.subSequenceNumber}`;
}
