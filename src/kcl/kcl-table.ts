// The KCL's lease table through the DynamoDB adapter: read whole (a strongly consistent scan), created
// as the KCL creates it, and written one lease at a time, each write conditioned on the row as read.
import { type Observable, type SchedulerLike, catchError, concatMap, defer, map, of, throwError } from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { KinsumerError } from '../errors/kinsumer-errors.js';
import type { Dynamo, Item } from '../dynamodb/dynamo.js';
import { waitForTable } from '../dynamodb/tables.js';
import { ConditionExpression } from '../dynamodb/update-expression.js';
import { KCL_ATTRIBUTES, type KclItem, decodeKclItem } from './lease-row.js';

const A = KCL_ATTRIBUTES;

/** The KCL table as read: its items decoded, and each item as stored (by leaseKey), for the conditions of writes. */
export interface KclTableRead {
  readonly items: readonly KclItem[];
  readonly raw: ReadonlyMap<string, Item>;
}

/** The KCL application's lease table (named after its `applicationName`). */
export class KclTable {
  constructor(private readonly dynamo: Dynamo, readonly table: string) {}

  /** Every item. A missing table is an error that says which table was looked for. */
  read(): Observable<KclTableRead> {
    return this.dynamo.scanAll({ TableName: this.table, ConsistentRead: true }).pipe(
      map((items) => ({
        items: items.map(decodeKclItem),
        raw: new Map(items.map((item) => [item[A.leaseKey]?.S ?? '', item])),
      })),
      catchError((error: unknown) => throwError(() => (classifyAwsError(error) === 'not-found'
        ? new KinsumerError(`the KCL lease table ${this.table} was not found (the KCL names it after its applicationName)`, { cause: error })
        : error))),
    );
  }

  /** DynamoDB's clock (the `Date` of its answer) at a strongly consistent read of one lease; `undefined` when the answer has none. */
  serverDate(leaseKey: string): Observable<Date | undefined> {
    return this.dynamo.getItemDated({ TableName: this.table, Key: { [A.leaseKey]: { S: leaseKey } }, ConsistentRead: true }).pipe(map(({ serverDate }) => serverDate));
  }

  /** `true` when the table exists (in any state but DELETING). */
  exists(): Observable<boolean> {
    return this.dynamo.describeTable(this.table).pipe(
      map((description) => description !== undefined && description.TableStatus !== 'DELETING'),
      catchError((error: unknown) => (classifyAwsError(error) === 'not-found' ? of(false) : throwError(() => error))),
    );
  }

  /** Creates the table as the KCL does (hash key `leaseKey`, on-demand) and waits until it is ACTIVE. */
  create(scheduler: SchedulerLike, timeoutMs = 300_000): Observable<void> {
    return this.dynamo.createTable({
      TableName: this.table,
      AttributeDefinitions: [{ AttributeName: A.leaseKey, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: A.leaseKey, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }).pipe(
      // Someone else creating it at the same moment: waiting is all that is left to do.
      catchError((error: unknown) => (classifyAwsError(error) === 'in-use' ? of(undefined) : throwError(() => error))),
      concatMap(() => waitForTable(this.dynamo, this.table, 'ACTIVE', timeoutMs, scheduler)),
    );
  }

  /**
   * Writes a whole lease item, on the condition that the row is still as read: absent, or with
   * the same leaseCounter (the KCL's own fence: every renewal, take and checkpoint moves it), the
   * same owner and the same checkpoint. Errors with the DynamoDB error when the row changed.
   */
  put(item: Item, asRead: Item | undefined): Observable<void> {
    return defer(() => {
      const condition = new ConditionExpression();
      if (asRead === undefined) condition.condition(`attribute_not_exists(${condition.name(A.leaseKey)})`);
      else for (const attribute of [A.leaseCounter, A.leaseOwner, A.checkpoint]) condition.unchanged(attribute, asRead[attribute]);
      return this.dynamo.putItem({ TableName: this.table, Item: item, ...condition.conditionInput() });
    });
  }
}

/** Each lease's version for the watch: its leaseCounter (the KCL judges liveness by nothing else). */
export function leaseVersions(read: KclTableRead): Map<string, string> {
  const versions = new Map<string, string>();
  for (const item of read.items) {
    if (item.kind === 'other') continue;
    versions.set(item.leaseKey, read.raw.get(item.leaseKey)?.[A.leaseCounter]?.N ?? '');
  }
  return versions;
}
