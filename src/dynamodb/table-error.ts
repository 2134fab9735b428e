import { type Observable, throwError } from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { TableNotFoundError } from '../errors/kinsumer-errors.js';

/** Rethrows `error`, as `TableNotFoundError` naming `table` when DynamoDB says the table is missing. */
export function tableError(table: string, error: unknown): Observable<never> {
  if (classifyAwsError(error) === 'not-found') return throwError(() => new TableNotFoundError(table, { cause: error }));
  return throwError(() => error);
}
