// A reset takes leases from their owners; a lease captured in a member's life renews nothing of its
// own that would tell that member (docs/architecture.md, "Liveness"), so the reset tells the
// member's clients row first: `Revoked` gains the shard, for that life only. The member's next
// heartbeat is refused until it has dropped the lease (and removed the shard from `Revoked`), so
// it stops emitting the shard at the latest then, and never beyond two renewal intervals after its
// last accepted heartbeat.
import { EMPTY, type Observable, catchError, ignoreElements } from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { CHECKPOINT_ATTRIBUTES } from './checkpoint-row.js';
import { CLIENT_ATTRIBUTES } from './client-row.js';
import type { Dynamo, Item } from './dynamo.js';
import { tableError } from './table-error.js';
import { UpdateExpression } from './update-expression.js';

/** Tells the owner of the lease row `item` (when it names a life) that its lease is taken. Emits nothing. */
export function revokeLease(dynamo: Dynamo, clientsTable: string, item: Item | undefined): Observable<never> {
  const owner = item === undefined ? undefined : ownerLife(item);
  const shardId = item?.[CHECKPOINT_ATTRIBUTES.shard]?.S;
  if (owner === undefined || shardId === undefined) return EMPTY;
  const update = new UpdateExpression();
  update.add(CLIENT_ATTRIBUTES.revoked, { SS: [shardId] });
  update.condition(`${update.name(CLIENT_ATTRIBUTES.incarnation)} = ${update.value('life', { N: String(owner.incarnation) })}`);
  return dynamo.updateItem({ ...update.input(clientsTable, { [CLIENT_ATTRIBUTES.id]: { S: owner.id } }), ReturnValues: 'NONE' }).pipe(
    ignoreElements(),
    // Another life holds the row now (or none does): the lease is no longer that life's to drop.
    catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? EMPTY : tableError(clientsTable, error))),
  );
}

/** The owner and life a lease row names, when it names both. */
function ownerLife(item: Item): { readonly id: string; readonly incarnation: number } | undefined {
  const id = item[CHECKPOINT_ATTRIBUTES.ownerId]?.S;
  const incarnation = Number(item[CHECKPOINT_ATTRIBUTES.ownerIncarnation]?.N);
  return id === undefined || !Number.isSafeInteger(incarnation) ? undefined : { id, incarnation };
}
