// kinsumer's own tables as the import and the export use them, through the DynamoDB adapter: the
// checkpoint rows read whole and written one at a time (each write a fence conditioned on the row
// as read, as a reset is), and the clients table read to tell live clients.
import { type Observable, catchError, concat, map } from 'rxjs';
import { CHECKPOINT_ATTRIBUTES, decodeCheckpointRow, readableCounter, setCheckpoint } from '../dynamodb/checkpoint-row.js';
import type { Dynamo, Item } from '../dynamodb/dynamo.js';
import { tableError } from '../dynamodb/table-error.js';
import { revokeLease } from '../dynamodb/revocation.js';
import { UpdateExpression } from '../dynamodb/update-expression.js';
import { CorruptCheckpointError } from '../errors/kinsumer-errors.js';
import type { KinsumerRowRead } from './import-plan.js';
import type { KinsumerTarget } from './kinsumer-side.js';

const A = CHECKPOINT_ATTRIBUTES;

/** A checkpoint row as read: decoded (or why not), and as stored. */
export interface StoredRow extends KinsumerRowRead {
  readonly item: Item;
}

/** Every row of `<app>_checkpoints` by shard id (a strongly consistent scan: the table holds one row per shard). */
export function readCheckpointRows(dynamo: Dynamo, table: string): Observable<Map<string, StoredRow>> {
  return dynamo.scanAll({ TableName: table, ConsistentRead: true }).pipe(
    map((items) => {
      const rows = new Map<string, StoredRow>();
      for (const item of items) {
        const shardId = item[A.shard]?.S;
        if (shardId === undefined) continue;
        try {
          rows.set(shardId, { item, row: decodeCheckpointRow(item, shardId) });
        } catch (error) {
          if (!(error instanceof CorruptCheckpointError)) throw error;
          rows.set(shardId, { item, row: undefined, corrupt: error.message });
        }
      }
      return rows;
    }),
    catchError((error: unknown) => tableError(table, error)),
  );
}

/** One row of `<app>_checkpoints` as stored (strongly consistent), or `undefined`. */
export function readCheckpointItem(dynamo: Dynamo, table: string, shardId: string): Observable<Item | undefined> {
  return dynamo.getItem({ TableName: table, Key: { [A.shard]: { S: shardId } }, ConsistentRead: true }).pipe(catchError((error: unknown) => tableError(table, error)));
}

/** The owner of a row (as stored: a corrupt row's too), or `undefined`. */
export function rowOwner(stored: StoredRow): string | undefined {
  const owner = stored.item[A.ownerId]?.S;
  return owner === undefined || owner === '' ? undefined : owner;
}

/** Each owned row's version for the watch: what every capture, renewal and commit changes. */
export function ownedRowVersions(rows: ReadonlyMap<string, StoredRow>): Map<string, string> {
  const versions = new Map<string, string>();
  for (const [shardId, stored] of rows) {
    const owner = rowOwner(stored);
    if (owner === undefined) continue;
    versions.set(shardId, JSON.stringify([owner, stored.item[A.leaseCounter]?.N, stored.item[A.lastUpdate]?.N]));
  }
  return versions;
}

/**
 * Writes a shard's checkpoint (and `Finished`) as the import decided. Like every reset, it is a
 * fence: the owner goes and the lease counter moves, so no former owner (paused, partitioned, or
 * overridden with `force`) can write over it. Acked ranges belong to the checkpoint they were
 * stored with and go. Conditioned on the row as read (absent, or the same counter, update, owner,
 * checkpoint and `Finished`); a row that changed fails with DynamoDB's conditional error.
 */
export function writeCheckpoint(dynamo: Dynamo, tables: { readonly checkpoints: string; readonly clients: string }, shardId: string, target: KinsumerTarget, asRead: Item | undefined, nowMs: number): Observable<void> {
  const table = tables.checkpoints;
  const update = new UpdateExpression();
  setCheckpoint(update, target.checkpoint);
  if (target.finished) update.setTimestamp(A.finished, nowMs);
  else update.remove(A.finished);
  update.remove(A.ackedRanges);
  update.setTimestamp(A.checkpointUpdate, nowMs);
  update.set(A.leaseCounter, { N: String((asRead === undefined ? 0 : readableCounter(asRead)) + 1) });
  update.remove(A.ownerId);
  update.remove(A.ownerName);
  update.setTimestamp(A.lastUpdate, nowMs);
  if (asRead === undefined) update.condition(`attribute_not_exists(${update.name(A.shard)})`);
  else for (const attribute of [A.leaseCounter, A.lastUpdate, A.ownerId, A.sequenceNumber, A.finished]) update.unchanged(attribute, asRead[attribute]);
  // The owner is told first, through its clients row, as a reset tells it (revocation.ts): a lease
  // that lives by its owner's heartbeats writes nothing of its own that would meet the fence soon.
  return concat(revokeLease(dynamo, tables.clients, asRead), dynamo.updateItem({ ...update.input(table, { [A.shard]: { S: shardId } }), ReturnValues: 'NONE' }).pipe(
    map(() => undefined),
    catchError((error: unknown) => tableError(table, error)),
  ));
}

/** The clients table's rows (`<app>_clients`) by client id, each with its version for the watch. */
export function readClientVersions(dynamo: Dynamo, table: string): Observable<Map<string, string>> {
  return dynamo.scanAll({ TableName: table, ConsistentRead: true }).pipe(
    map((items) => new Map(items
      .filter((item) => item.ID?.S !== undefined)
      .map((item) => [item.ID?.S ?? '', JSON.stringify([item.LastUpdate?.N, item.InstanceID?.S, item.Shards])]))),
    catchError((error: unknown) => tableError(table, error)),
  );
}

