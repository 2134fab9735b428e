// The seam between a shard's reader and its checkpointer: what the reader registers, and what it
// waits for before it reads or emits more.
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { Observable } from 'rxjs';
import type { Position } from './position.js';

/** How records' own writes ended (design §8.1). */
export type WritesOutcome =
  /** Applied, in one transaction with the checkpoint that covers the records. */
  | { readonly kind: 'committed' }
  /**
   * Not applied, and never will be: a condition failed (`WriteConditionError`), or DynamoDB refused
   * them (`WriteRejectedError`). The records are unacked again.
   */
  | { readonly kind: 'failed'; readonly error: Error }
  /**
   * The lease ended (lost, given up, failed) before it learned that they committed. Not applied,
   * unless an answer to their transaction was lost and the lease ended before a later transaction
   * settled it: then they may have applied, with the checkpoint covering the records. Either way
   * the stored checkpoint decides: it covers the records exactly when their writes applied, and
   * the lease's next owner delivers them again exactly when they did not.
   */
  | { readonly kind: 'abandoned'; readonly error: Error };

/**
 * What a shard reader needs from the checkpoint side of its lease: it registers every record it
 * emits, pauses while too many are pending, and at the end of the shard waits until `Finished`
 * is written.
 */
export interface ShardTracker {
  /** The lease's fencing token, which every record it delivers carries. Absent: 0. */
  readonly fencingToken?: number;
  /**
   * Registers a record about to be emitted, in emission (sequence) order, and returns its ticket
   * for {@link ShardTracker.ack}. The record may be the emitted object itself: the tracker keeps it
   * until it is acked and passed, and reads its `approximateArrivalTimestamp` (the stream's
   * clock) only where it needs it (the first record of a timestamp start).
   */
  track(record: Position & { readonly approximateArrivalTimestamp?: Date }): number;
  /** Acks the record `track` gave this ticket for. Idempotent; acks may come in any order. */
  ack(ticket: number): void;
  /**
   * Acks records with writes of their own (design §8.1): the writes are committed in one
   * transaction with the checkpoint write that covers the records, and until then no checkpoint
   * counts the records as acked. `settle` hears how it ended; without it (a plain
   * `ack({ writes })`) a failure ends the shard with an `error` event. Nothing happens once the
   * lease ended (the next owner delivers the records again).
   * @throws WritesTooLargeError when the writes exceed one transaction (nothing is acked).
   * @throws KinsumerError when a record was acked already, or the store has no transactions.
   * Absent: the tracker has no transactions.
   */
  ackWithWrites?(tickets: readonly number[], recordIds: readonly string[], writes: readonly TransactWriteItem[], settle?: (outcome: WritesOutcome) => void): void;
  /**
   * When a previous owner acked the record at `position` (the ranges stored with the checkpoint),
   * registers it as acked, in emission order like {@link ShardTracker.track}, and returns `true`:
   * the reader does not emit it. Otherwise registers nothing and returns `false` (track it).
   * Absent: nothing is ever skipped.
   */
  skip?(position: Position): boolean;
  /** Records emitted and not yet acked. */
  inFlight(): number;
  /**
   * Records emitted and not yet under the checkpoint watermark: unacked, or acked behind an unacked
   * one. Readers pause while `maxInFlightRecords` are pending, so one record never acked stops the
   * shard at that bound instead of letting the backlog behind it grow.
   */
  pending(): number;
  /** Emits after every ack that changed something, and after a skipped record moved the watermark. */
  readonly acks$: Observable<void>;
  /**
   * The shard is closed and its last record was `last` (`undefined`: nothing read since capture).
   * Completes once every record is acked and `Finished` is written; errors with `LeaseLostError`.
   */
  finish(last: Position | undefined): Observable<void>;
  /**
   * `false` while the lease may have expired unseen: no write has confirmed it for longer than
   * renewals allow (a process frozen by SIGSTOP or a long pause, woken up after its TTL). Readers
   * emit nothing then, until a write confirms the lease or finds it lost, so a zombie does not
   * hand out a backlog it no longer owns. Also `false` until a kept start (a LATEST or timestamp
   * start) is stored, so no record goes out that a hand-off could skip. Absent: always confirmed.
   */
  leaseConfirmed?(): boolean;
  /** Emits after each write that confirmed the lease (a reader held back by {@link ShardTracker.leaseConfirmed} waits for it). */
  readonly confirmed$?: Observable<void>;
  /**
   * The first record a reader is about to deliver since the capture (called before it is tracked).
   * A start kept as a timestamp (a `LATEST` start) is narrowed to it: nothing before it belongs to
   * the group. The reader emits it only once that is stored ({@link ShardTracker.leaseConfirmed}),
   * so a next owner never starts earlier than what was already delivered.
   */
  narrowStart?(first: Position, arrivedAt: Date): void;
  /**
   * The stream answered the lease's first `LATEST` iterator at `streamTime` on its own clock (see
   * `IssuedIterator.streamTime`): the group's start on the shard. A start kept as an earlier
   * timestamp (the client's clock less a margin, taken at the capture) moves up to it, so a
   * hand-off before the first record does not read from that margin. Stored before any record is
   * emitted ({@link ShardTracker.leaseConfirmed}), as {@link ShardTracker.narrowStart} is.
   */
  streamStart?(streamTime: Date): void;
}
