// When a checkpoint write moves the checkpoint (not a renewal, not the same position again): the
// rows then record the moment as `CheckpointUpdate`, which `kinsumer status` shows as the shard's
// last progress. `LastUpdate` moves with every renewal too, so it cannot tell progress.
import type { StoredCheckpoint } from '../ports/lease-store.js';

/** A write of `next` (`undefined`: the write leaves the checkpoint as it is) moves it from `stored`. */
export function advances(stored: StoredCheckpoint | undefined, next: StoredCheckpoint | undefined): boolean {
  if (next === undefined) return false;
  if (stored === undefined || stored.type !== next.type) return true;
  switch (next.type) {
    case 'position': {
      const before = stored.type === 'position' ? stored.position : undefined;
      return before?.sequenceNumber !== next.position.sequenceNumber || before.subSequenceNumber !== next.position.subSequenceNumber;
    }
    case 'AT_TIMESTAMP':
      return stored.type !== 'AT_TIMESTAMP' || stored.timestamp.getTime() !== next.timestamp.getTime();
    case 'LATEST':
    case 'TRIM_HORIZON':
      return false;
  }
}
