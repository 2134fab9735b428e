// `kinsumer drain --client <id>`: an operator asks a member to drain by marking its clients row
// (`DrainRequested`); the member sees it in the answer to its next heartbeat (at most a renewal
// interval later), hands its leases over and takes none, until the mark is removed (`--undo`). The
// group epoch is bumped so the other members check soon and see the member draining.
import { type Observable, catchError, concatMap, defer, map, of } from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { CLIENT_ATTRIBUTES, type ClientRow, decodeClientRow } from './client-row.js';
import type { Dynamo } from './dynamo.js';
import { DynamoMetadataStore } from './metadata-store.js';
import { tableError } from './table-error.js';
import { UpdateExpression } from './update-expression.js';

const A = CLIENT_ATTRIBUTES;

/**
 * Sets (or, with `undo`, removes) `DrainRequested` on member `clientId`'s row, then bumps the
 * group epoch. Emits the row as written, or `undefined` when the group has no such member.
 */
export function requestDrain(
  dynamo: Dynamo, tables: { readonly clients: string; readonly metadata: string }, clientId: string, undo: boolean, nowMs: number,
): Observable<ClientRow | undefined> {
  const update = new UpdateExpression();
  if (undo) update.remove(A.drainRequested);
  else update.set(A.drainRequested, { BOOL: true });
  update.condition(`attribute_exists(${update.name(A.id)})`);
  const mark$ = defer(() => dynamo.updateItem(update.input(tables.clients, { [A.id]: { S: clientId } }))).pipe(
    map((item) => (item === undefined ? undefined : decodeClientRow(item))),
    catchError((error: unknown) => (classifyAwsError(error) === 'conditional' ? of(undefined) : tableError(tables.clients, error))),
  );
  const metadata = new DynamoMetadataStore({ dynamo, table: tables.metadata, clientId: 'kinsumer-cli', clientName: 'kinsumer-cli', leaseTtlMs: 1, now: () => nowMs });
  return mark$.pipe(concatMap((row) => (row === undefined ? of(undefined) : metadata.bumpGroupEpoch().pipe(map(() => row)))));
}
