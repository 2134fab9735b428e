// kinsumer's side of a plan line: its checkpoint rows as a plan shows them, and whether a new
// checkpoint would move one backwards. Pure.
import { comparePositions, samePosition } from '../checkpoint/sequence-number.js';
import type { CheckpointRow, StoredCheckpoint } from '../ports/lease-store.js';
import type { Position } from '../ports/position.js';
import { startingPositionOf } from '../reading/start-position.js';
import type { KclPlanStart } from './plan.js';

/** A stored checkpoint (and `Finished`) as a plan shows it: where a new owner would start (startingPositionOf). */
export function planStartOf(checkpoint: StoredCheckpoint | undefined, finished: boolean): KclPlanStart {
  if (finished) return { type: 'FINISHED' };
  return checkpoint === undefined ? { type: 'INITIAL_POSITION' } : startingPositionOf(checkpoint);
}

/** A plan start in words: `after <seq>[/<sub>]`, `TRIM_HORIZON`, `AT_TIMESTAMP <iso>`, `FINISHED`, ... */
export function planStartText(start: KclPlanStart | undefined): string {
  if (start === undefined) return '-';
  switch (start.type) {
    case 'AFTER_SEQUENCE_NUMBER':
      return `after ${start.sequenceNumber}${start.subSequenceNumber === undefined ? '' : `/${start.subSequenceNumber}`}`;
    case 'AT_TIMESTAMP':
      return `AT_TIMESTAMP ${start.timestamp.toISOString()}`;
    default:
      return start.type;
  }
}

/** What a row is set to: a checkpoint (`undefined`: the row's own stays) and whether the shard is finished. */
export interface KinsumerTarget {
  readonly checkpoint: StoredCheckpoint | undefined;
  readonly finished: boolean;
}

/** The records a row says were consumed: its checkpoint, or the floor a reset left with a start. */
function progressOf(checkpoint: StoredCheckpoint | undefined): Position | undefined {
  if (checkpoint?.type === 'position') return checkpoint.position;
  if (checkpoint?.type === 'LATEST' || checkpoint?.type === 'AT_TIMESTAMP') return checkpoint.after;
  return undefined;
}

function sameStart(a: StoredCheckpoint | undefined, b: StoredCheckpoint): boolean {
  if (a === undefined || a.type !== b.type) return false;
  if (a.type === 'position' && b.type === 'position') return samePosition(a.position, b.position);
  if (a.type === 'AT_TIMESTAMP' && b.type === 'AT_TIMESTAMP') return a.timestamp.getTime() === b.timestamp.getTime();
  return true;
}

/**
 * How `target` compares with what the row holds: `'same'` (nothing to write), `'forward'`, or the
 * reason it moves kinsumer's checkpoint backwards (records the group checkpointed would be read
 * again, or a finished shard read again). A row with only a start has checkpointed nothing, so any
 * target moves it forward, unless a reset left a floor with that start.
 */
export function compareWithRow(row: CheckpointRow | undefined, target: KinsumerTarget): 'same' | 'forward' | { readonly backwards: string } {
  if (row === undefined) return 'forward';
  if (row.finished) return target.finished ? 'same' : { backwards: 'kinsumer finished this shard; this would read it again' };
  if (target.finished) return 'forward';
  const wanted = target.checkpoint;
  if (wanted === undefined) return 'same';
  const progress = progressOf(row.checkpoint);
  if (sameStart(row.checkpoint, wanted)) return 'same';
  if (progress === undefined) return 'forward';
  const at = `${progress.sequenceNumber}${progress.subSequenceNumber === undefined ? '' : `/${progress.subSequenceNumber}`}`;
  if (wanted.type !== 'position') return { backwards: `kinsumer's checkpoint is ${at}; a start (${wanted.type}) would replace it` };
  return comparePositions(wanted.position, progress) < 0 ? { backwards: `kinsumer's checkpoint ${at} is further` } : 'forward';
}
