// What the runner did, as it happened: the action timeline the checker and the report read.
import type { ChaosActionKind } from './schedule.js';

/** One action as performed (wall-clock ms). */
export interface ActionRecord {
  readonly kind: ChaosActionKind;
  /** When it began: the signal sent, the stop asked for, the reshard called. */
  readonly at: number;
  /** When the runner was done with it (restarted, resumed, stream ACTIVE again). */
  readonly endedAt: number;
  /** The victim (kill, zombie, restart). */
  readonly worker?: string;
  /** kill, zombie, restart: the shards the victim held at `at`; split: the parent; merge: the two parents. */
  readonly shards: readonly string[];
  /** split, merge: the new shards. */
  readonly children?: readonly string[];
  /** zombie: when SIGCONT was sent. */
  readonly resumedAt?: number;
  /** kill, restart: when the old process had exited. */
  readonly exitedAt?: number;
  /** Set when the action could not be done (nothing to merge, no worker running); such an action counts for nothing. */
  readonly skipped?: string;
}

/** A worker event as the runner collected it (the worker's report, with its clock). */
export interface WorkerEventRecord {
  readonly w: string;
  readonly at: number;
  readonly type: string;
  readonly shardId?: string;
  readonly [key: string]: unknown;
}
