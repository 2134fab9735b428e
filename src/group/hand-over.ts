// A draining member (drain(), `kinsumer drain`, or a stop) hands each lease it holds to the member
// the group's assignment gives the shard to without it — once that member is ready to capture it
// (its row lists the shard in `Wants`), so the shard goes unread only from the release to the
// successor's next capture poll. Pure.
import type { LiveClient } from '../ports/coordination.js';

/** What the hand-over of one check knows. */
export interface HandOverInput {
  /** The shards this member holds. */
  readonly held: readonly string[];
  /** Who the assignment without the draining members gives each shard to (absent: nobody can take it). */
  readonly successorOf: (shardId: string) => LiveClient | undefined;
  /** The member is stopping: a shard nobody can take is released all the same. */
  readonly stopping: boolean;
  /** The stop's bound for the hand-over ran out: everything left is released. */
  readonly boundReached: boolean;
}

/**
 * The held shards to give up now: those whose successor wants them; those whose successor is a
 * member that publishes no wants (a Go kinsumer, an older kinsumer-ts: it takes a released shard
 * at its next capture poll, as before); and, when stopping, those nobody can take, or everything
 * once the bound ran out. A drain keeps (and reads) what nobody can take.
 */
export function sharesToHandOver(input: HandOverInput): string[] {
  return input.held.filter((shardId) => {
    if (input.boundReached) return true;
    const successor = input.successorOf(shardId);
    if (successor === undefined) return input.stopping;
    if (successor.incarnation === undefined) return true;
    return successor.wants?.includes(shardId) ?? false;
  });
}
