// Records' writes committed with their checkpoint (design §8.1): the TransactWriteItems the lease
// store sends — the checkpoint's fenced Update first, the records' writes after it — and what its
// answer means for the write lane. Shared by the DynamoDB store and the in-memory one, so both
// read DynamoDB's answers the same way.
import type { AttributeValue, TransactWriteItem, TransactWriteItemsCommandInput } from '@aws-sdk/client-dynamodb';
import { type Observable, of, throwError } from 'rxjs';
import { LeaseLostError } from '../errors/kinsumer-errors.js';
import { EarlierTransactionAppliedError, TransactionCancelledError, TransactionRejectedError } from '../errors/write-errors.js';
import type { HeldLease, WritesTransaction } from '../ports/lease-store.js';
import { CHECKPOINT_ATTRIBUTES } from './checkpoint-row.js';
import type { UpdateExpression } from './update-expression.js';

const A = CHECKPOINT_ATTRIBUTES;

interface CancellationReason {
  readonly Code?: string;
  readonly Item?: Record<string, AttributeValue>;
}

/**
 * The request: the checkpoint's Update (built by `update`, its condition being the lease and the
 * last transaction's token) as action 0, returning the row as it was when that condition fails,
 * then the records' writes; the transaction's token as ClientRequestToken, so an identical re-send
 * within 10 minutes is applied once.
 */
export function transactionInput(update: UpdateExpression, table: string, shardId: string, transaction: WritesTransaction): TransactWriteItemsCommandInput {
  const checkpoint = update.input(table, { [A.shard]: { S: shardId } });
  const items: TransactWriteItem[] = [
    { Update: { ...checkpoint, UpdateExpression: checkpoint.UpdateExpression ?? '', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } },
    ...transaction.writes,
  ];
  return { TransactItems: items, ClientRequestToken: transaction.token };
}

/**
 * What a failed TransactWriteItems of {@link transactionInput} means: success after all (its
 * checkpoint condition failed because the row holds this transaction's token: an earlier send
 * applied it — whoever holds the lease now, since only this lease ever sent that token),
 * `EarlierTransactionAppliedError` (the row holds one of `transaction.earlier`),
 * `LeaseLostError` (fenced: nothing applied), `TransactionCancelledError` (a write's condition, a
 * conflict, throttling: nothing applied, a reason per write), `TransactionRejectedError` (refused
 * as a whole). Anything else passes as it is (a transient fault leaves it unknown whether it
 * applied: the lane sends it again).
 */
export function transactionOutcome(error: unknown, lease: HeldLease, transaction: Pick<WritesTransaction, 'token' | 'earlier'>): Observable<void> {
  const shape = error as { name?: unknown; CancellationReasons?: readonly CancellationReason[] } | null;
  const name = typeof shape?.name === 'string' ? shape.name : '';
  if (name === 'ValidationException' || name === 'ResourceNotFoundException') return throwError(() => new TransactionRejectedError({ cause: error }));
  if (name !== 'TransactionCanceledException') return throwError(() => error);
  const reasons = shape?.CancellationReasons;
  const checkpoint = reasons?.[0];
  if (reasons === undefined || checkpoint === undefined) return throwError(() => new LeaseLostError(lease.shardId, { cause: error }));
  if (checkpoint.Code === 'ConditionalCheckFailed') {
    const row = checkpoint.Item;
    const held = row?.[A.transactionToken]?.S;
    if (held !== undefined && held === transaction.token) return of(undefined);
    if (held !== undefined && transaction.earlier?.includes(held) === true) return throwError(() => new EarlierTransactionAppliedError(held, { cause: error }));
    return throwError(() => new LeaseLostError(lease.shardId, { cause: error, revoked: ownerless(row) }));
  }
  const codes = reasons.slice(1).map((reason) => reason.Code ?? 'None');
  return throwError(() => new TransactionCancelledError(codes, { cause: error, ...(checkpoint.Code === undefined ? {} : { checkpointReason: checkpoint.Code }) }));
}

/**
 * A row that names no owner: whoever held the lease was fenced by a reset (`kinsumer reset
 * --force` removes the owner and moves the counter), not by a capture. `false` for a row not read.
 */
export function ownerless(row: Readonly<Record<string, { readonly S?: string | undefined }>> | undefined): boolean {
  return row !== undefined && row[A.ownerId]?.S === undefined;
}
