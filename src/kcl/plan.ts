// What importKclCheckpoints() and exportKclCheckpoints() return: the plan, one line per shard, and
// what was done with it. The public face of both operations (design §8.2).
import type { StartingPosition } from '../types.js';

/** A KCL checkpoint as the lease table stores it. */
export interface KclPlanCheckpoint {
  /** The `checkpoint` attribute: a sequence number, or `TRIM_HORIZON`, `LATEST`, `AT_TIMESTAMP`, `SHARD_END`. */
  readonly checkpoint: string;
  /** `checkpointSubSequenceNumber`, given with a sequence number (0 for a record that is not a KPL aggregate). */
  readonly subSequenceNumber?: number;
}

/**
 * The kinsumer side of a plan line: where the group reads the shard from (a public
 * {@link StartingPosition}), `FINISHED` for a shard read to its end (its children come next), or
 * `INITIAL_POSITION` for a shard with no checkpoint (the `initialPosition` option decides).
 */
export type KclPlanStart =
  | StartingPosition
  /** Read to its end: not read again, its children come next (the KCL's `SHARD_END`). */
  | {
    /** Which kind of start. */
    readonly type: 'FINISHED';
  }
  /** No checkpoint: where the group's `initialPosition` option says. */
  | {
    /** Which kind of start. */
    readonly type: 'INITIAL_POSITION';
  };

/** One line of a plan: a shard, its KCL checkpoint, its kinsumer start, and what is done. */
export interface KclPlanLine {
  /** The shard. */
  readonly shardId: string;
  /** The KCL lease's checkpoint (import: as read; export: as written); `undefined` when there is no lease. */
  readonly kcl: KclPlanCheckpoint | undefined;
  /** The kinsumer side (import: as written; export: as read); `undefined` when the line has none. */
  readonly start: KclPlanStart | undefined;
  /**
   * `'write'`: the row is written (in a dry run: would be). `'skip'`: nothing to write, `reason`
   * says why. `'refuse'`: not written, `reason` says why and what to do.
   */
  readonly action: 'write' | 'skip' | 'refuse';
  /** Why the line is skipped, refused or forced, and anything else worth knowing about it. */
  readonly reason?: string;
  /** Written only because `force` was given: `reason` says what was overridden. */
  readonly forced?: boolean;
  /** The KCL lease key of the line (the shard id, or `<account>:<stream>:<epoch>:<shardId>`). */
  readonly leaseKey?: string;
}

/** The result of {@link importKclCheckpoints} and {@link exportKclCheckpoints}. */
export interface KclPlan {
  /** One line per shard of the stream, in the stream's order, then lines for leases of shards it no longer lists. */
  readonly shards: readonly KclPlanLine[];
  /** How many rows were written (0 in a dry run, and when the run refused). */
  readonly written: number;
  /**
   * Why the run wrote nothing (or, for a row that changed between its read and its write, stopped):
   * empty when it went through. The CLI exits 3 when this is not empty.
   */
  readonly refused: readonly string[];
  /** `true` when nothing was to be written (`dryRun`). */
  readonly dryRun: boolean;
  /** How long the run watched the tables for a live fleet (0 when there was nothing to watch). */
  readonly watchedMs: number;
  /**
   * Export only: the time the KCL application must be configured with
   * (`InitialPositionInStream.AT_TIMESTAMP`), when a lease is written as `AT_TIMESTAMP` (the KCL
   * takes the time from its configuration, one for the stream, not from the lease): the earliest
   * of the shards' start times. A shard whose own start is later is read by the KCL from this time
   * (its line says so), unless its start has a floor (the checkpoint a reset to `LATEST` replaced)
   * whose record arrived at or after this time: that lease is written as a sequence checkpoint
   * right after the floor, and its line says what the KCL then delivers.
   */
  readonly kclTimestamp?: Date;
  /** Export only: the KCL table, when the run created it (in a dry run: would create it). */
  readonly createdTables?: readonly string[];
  /** Items of the KCL table the run left alone: leases of other streams, and 3.5's items of other kinds. */
  readonly ignored: {
    /** Leases of other streams (a multi-stream application). */
    readonly otherStreams: number;
    /** Items that are not leases (`entityType` other than `LEASE`: the leader, migration states, worker metrics, streams). */
    readonly otherItems: number;
  };
}
