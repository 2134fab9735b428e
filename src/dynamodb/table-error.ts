import { type Observable, throwError } from 'rxjs';
import { classifyAwsError } from '../aws-errors.js';
import { TableNotFoundError } from '../errors.js';

/** Rethrows `error`, as `TableNotFoundError` naming `table` when DynamoDB says the table is missing. */
export function tableError(table: string, error: unknown): Observable<never> {
  if (classifyAwsError(error) === 'not-found') return throwError(() => new TableNotFoundError(table, { cause: error }));
  return throwError(() => error);
}
