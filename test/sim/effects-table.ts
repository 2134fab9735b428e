// The effects table (issue 24, design §8.1): in a run with effects, every record is acked with one
// write of its own — an ADD of 1 to its item in a user table, keyed by `record.id` — committed by
// the library in one TransactWriteItems with the checkpoint that covers it, on the in-memory
// tables that model DynamoDB's transactions. An ADD is never taken back, so the item counts how
// often the record's writes were applied. Once the group has calmed and read everything:
//   - no record's writes were applied more than once (a reset of its shard excepted: an explicit
//     replay, once per reset);
//   - a record whose writes were applied is covered by its shard's checkpoint (watermark, acked
//     ranges or Finished): never applied without the checkpoint moving over it;
//   - a record delivered and covered by the checkpoint had them applied, unless it was acked
//     without writes (an operator's onFailure dead-letters it) or its shard was reset.
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { comparePositions } from '../../src/checkpoint/sequence-number.js';
import type { CheckpointRow } from '../../src/ports/lease-store.js';
import type { Position } from '../../src/ports/position.js';
import type { MemoryCheckpointTable } from '../../src/testing/memory-lease-store.js';
import { MemoryItemTables } from '../../src/testing/memory-items.js';
import type { KinsumerRecord } from '../../src/types.js';

/** The user table records write to. */
export const EFFECTS_TABLE = 'sim_effects';

/** One record's writes: its item's count goes up by one. */
export function effectWrites(record: Pick<KinsumerRecord, 'id'>): TransactWriteItem[] {
  return [{
    Update: {
      TableName: EFFECTS_TABLE, Key: { id: { S: record.id } },
      UpdateExpression: 'ADD applied :one', ExpressionAttributeValues: { ':one': { N: '1' } },
    },
  }];
}

/** What one finding says (the checker reports it as `effects-once`). */
export interface EffectsFinding {
  readonly recordId: string;
  readonly message: string;
}

/** The user table, what was acked with and without writes, and the resets that replay. */
export class EffectsLedger {
  readonly items = new MemoryItemTables();
  readonly #delivered = new Set<string>();
  readonly #withoutWrites = new Set<string>();
  readonly #resets = new Map<string, number>();

  constructor() {
    this.items.createTable(EFFECTS_TABLE, ['id']);
  }

  /** A process was delivered `record`: every ack of it carries its writes, but a dead letter's. */
  delivered(record: Pick<KinsumerRecord, 'id'>): void {
    this.#delivered.add(record.id);
  }

  /** A process acked `record` without writes (an operator's onFailure dead-lettered it). */
  ackedWithoutWrites(record: Pick<KinsumerRecord, 'id'>): void {
    this.#withoutWrites.add(record.id);
  }

  /** An operator reset `shardId`: the records after the checkpoint it sets are delivered, and applied, again. */
  reset(shardId: string): void {
    this.#resets.set(shardId, (this.#resets.get(shardId) ?? 0) + 1);
  }

  /** How often each record's writes were applied, by record id. */
  applied(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const item of this.items.scan(EFFECTS_TABLE)) counts.set(String(item.id?.S), Number(item.applied?.N ?? 0));
    return counts;
  }

  /** The rules of the file comment, against the checkpoint rows as they are now. */
  check(checkpoints: MemoryCheckpointTable): EffectsFinding[] {
    const findings: EffectsFinding[] = [];
    const applied = this.applied();
    for (const [id, count] of applied) {
      const { shardId, position } = parseId(id);
      const replays = this.#resets.get(shardId) ?? 0;
      if (count > 1 + replays) findings.push({ recordId: id, message: `${id}: its writes were applied ${count} times${replays === 0 ? '' : ` (${replays} resets of its shard allow ${1 + replays})`}` });
      if (replays === 0 && !covered(checkpoints.row(shardId), position)) findings.push({ recordId: id, message: `${id}: its writes were applied, but its shard's checkpoint does not cover it` });
    }
    for (const id of this.#delivered) {
      if (this.#withoutWrites.has(id) || (applied.get(id) ?? 0) > 0) continue;
      const { shardId, position } = parseId(id);
      if ((this.#resets.get(shardId) ?? 0) > 0) continue;
      if (covered(checkpoints.row(shardId), position)) findings.push({ recordId: id, message: `${id}: delivered and checkpointed, but its writes were never applied (nor was it acked without them)` });
    }
    return findings;
  }
}

/** `<shardId>/<sequenceNumber>[/<subSequenceNumber>]` back into its parts. */
function parseId(id: string): { shardId: string; position: Position } {
  const [shardId = '', sequenceNumber = '', sub] = id.split('/');
  return { shardId, position: sub === undefined ? { sequenceNumber } : { sequenceNumber, subSequenceNumber: Number(sub) } };
}

/** The row's checkpoint covers the record: Finished, at or past it, or one of its acked ranges holds it. */
function covered(row: CheckpointRow | undefined, position: Position): boolean {
  if (row === undefined) return false;
  if (row.finished) return true;
  const checkpoint = row.checkpoint;
  if (checkpoint?.type === 'position' && comparePositions(position, checkpoint.position) <= 0) return true;
  return (row.acked ?? []).some((range) => comparePositions(range.from, position) <= 0 && comparePositions(position, range.to) <= 0);
}
