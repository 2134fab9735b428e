// The capture rule: when a client may take a shard's lease. Pure, so the DynamoDB store, the
// in-memory store and `reset` judge a row by the same rule (the DynamoDB store then makes the
// write conditional on the row being exactly as judged).
import { nanosFromMillis } from './dynamodb/codec.js';
import type { CheckpointRow } from './ports.js';

/**
 * A lease is available when it has no owner, is `clientId`'s own, or was not renewed for
 * `leaseTtlMs` on the judge's clock (`nowMs`). An owner without any `LastUpdate` never renewed,
 * so it counts as expired (the Go kinsumer would wait forever).
 */
export function leaseAvailable(row: CheckpointRow | undefined, clientId: string, nowMs: number, leaseTtlMs: number): boolean {
  if (row === undefined || row.ownerId === undefined || row.ownerId === clientId) return true;
  return row.lastUpdateNs === undefined || row.lastUpdateNs <= nanosFromMillis(nowMs - leaseTtlMs);
}
