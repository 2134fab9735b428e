import type { DynamoDBClient, TableDescription } from '@aws-sdk/client-dynamodb';
import {
  type Observable, type SchedulerLike, asyncScheduler, catchError, defer, first, firstValueFrom, map, of, repeat, tap, throwError, timeout, timer,
} from 'rxjs';
import type { ServiceConnections } from '../connections/service-connections.js';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { ConfigError, KinsumerError, TableNotFoundError } from '../errors/kinsumer-errors.js';
import type { RequestBound } from '../ports/request-timeout.js';
import { Dynamo } from './dynamo.js';
import { checkApplicationName, tableNames } from './table-names.js';

/** Options of {@link createTables} and {@link deleteTables}. */
export interface TablesOptions {
  /** The AWS SDK v3 DynamoDB client to create or delete the tables with. */
  readonly dynamodb: DynamoDBClient;
  /** The application whose tables these are: `<app>_clients`, `<app>_checkpoints`, `<app>_metadata`. */
  readonly applicationName: string;
  /** Default `'PAY_PER_REQUEST'` (on demand): a busy shard writes about one checkpoint per second. */
  readonly billingMode?: 'PAY_PER_REQUEST' | 'PROVISIONED';
  /**
   * Provisioned read capacity of each table (PROVISIONED only). Default 10. The metadata table
   * needs about 2 per client (each polls the group epoch four times a second): see "DynamoDB cost" in
   * docs/operating.md for what each table needs.
   */
  readonly readCapacity?: number;
  /** Provisioned write capacity of each table (PROVISIONED only). Default 10. */
  readonly writeCapacity?: number;
  /** How long to wait for the tables to become ACTIVE (or gone). Default 300000. */
  readonly timeoutMs?: number;
  /** The scheduler the wait polls and times out on (a virtual-time one in tests). Default `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

/** The three tables and their string hash keys, as the Go kinsumer defines them. */
function tableKeys(applicationName: string): ReadonlyArray<{ readonly table: string; readonly key: string }> {
  const names = tableNames(applicationName);
  return [
    { table: names.clients, key: 'ID' },
    { table: names.checkpoints, key: 'Shard' },
    { table: names.metadata, key: 'Key' },
  ];
}

/**
 * Creates the application's three tables where missing and waits until all are ACTIVE.
 * Idempotent: existing tables are left as they are. A DescribeTable failure other than
 * "not found" (access denied, say) is reported, not mistaken for a missing table.
 */
export async function createTables(options: TablesOptions): Promise<void> {
  const { dynamo, timeoutMs, scheduler } = checkTablesOptions(options);
  const billingMode = options.billingMode ?? 'PAY_PER_REQUEST';
  if (billingMode !== 'PAY_PER_REQUEST' && billingMode !== 'PROVISIONED') {
    throw new ConfigError('billingMode', "must be 'PAY_PER_REQUEST' or 'PROVISIONED'");
  }
  const readCapacity = capacity(options.readCapacity, 'readCapacity');
  const writeCapacity = capacity(options.writeCapacity, 'writeCapacity');
  await Promise.all(tableKeys(options.applicationName).map(async ({ table, key }) => {
    const existing = await describe(dynamo, table);
    if (existing === undefined) {
      try {
        await firstValueFrom(dynamo.createTable({
          TableName: table,
          AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }],
          KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
          BillingMode: billingMode,
          ...(billingMode === 'PROVISIONED'
            ? { ProvisionedThroughput: { ReadCapacityUnits: readCapacity, WriteCapacityUnits: writeCapacity } }
            : {}),
        }));
      } catch (error) {
        // Someone else is creating it at the same moment: waiting below is all that is left to do.
        if (classifyAwsError(error) !== 'in-use') throw new KinsumerError(`creating table ${table} failed`, { cause: error });
      }
    }
    await firstValueFrom(waitForTable(dynamo, table, 'ACTIVE', timeoutMs, scheduler));
  }));
}

/** Deletes the application's three tables where present and waits until they are gone. Idempotent. */
export async function deleteTables(options: TablesOptions): Promise<void> {
  const { dynamo, timeoutMs, scheduler } = checkTablesOptions(options);
  await Promise.all(tableKeys(options.applicationName).map(async ({ table }) => {
    for (let attempt = 0; ; attempt += 1) {
      try {
        await firstValueFrom(dynamo.deleteTable(table));
        break;
      } catch (error) {
        const kind = classifyAwsError(error);
        if (kind === 'not-found') return;
        // CREATING or UPDATING tables cannot be deleted yet; DELETING ones are on their way.
        if (kind !== 'in-use' || attempt > 50) throw new KinsumerError(`deleting table ${table} failed`, { cause: error });
        const status = (await describe(dynamo, table))?.TableStatus;
        if (status === undefined || status === 'DELETING') break;
        await firstValueFrom(timer(pollDelay(attempt), scheduler));
      }
    }
    await firstValueFrom(waitForTable(dynamo, table, 'GONE', timeoutMs, scheduler));
  }));
}

/**
 * Checks that the application's tables exist: creates them when `create` is set, throws
 * `TableNotFoundError` naming the first missing one otherwise.
 */
export async function checkTables(options: { dynamodb: DynamoDBClient; applicationName: string; create: boolean; scheduler?: SchedulerLike; bound?: RequestBound; connections?: ServiceConnections }): Promise<void> {
  if (options.create) {
    await createTables({ dynamodb: options.dynamodb, applicationName: options.applicationName, ...(options.scheduler === undefined ? {} : { scheduler: options.scheduler }) });
    return;
  }
  // Each DescribeTable bounded (requestTimeoutMs): a hung one is retried with the start, not waited for.
  const dynamo = new Dynamo(options.dynamodb, options.bound, options.connections);
  for (const { table } of tableKeys(options.applicationName)) {
    const description = await describe(dynamo, table);
    if (description === undefined || description.TableStatus === 'DELETING') throw new TableNotFoundError(table);
  }
}

function checkTablesOptions(options: TablesOptions): { dynamo: Dynamo; timeoutMs: number; scheduler: SchedulerLike } {
  if (options === null || typeof options !== 'object') throw new ConfigError('options', 'must be an object');
  const client: unknown = options.dynamodb;
  if (typeof client !== 'object' || client === null || typeof (client as { send?: unknown }).send !== 'function') {
    throw new ConfigError('dynamodb', 'is required (an AWS SDK v3 DynamoDBClient)');
  }
  checkApplicationName(options.applicationName);
  const timeoutMs = options.timeoutMs ?? 300_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new ConfigError('timeoutMs', 'must be a positive finite number of milliseconds');
  const scheduler = options.scheduler ?? asyncScheduler;
  if (typeof scheduler.now !== 'function' || typeof scheduler.schedule !== 'function') throw new ConfigError('scheduler', 'must be an RxJS SchedulerLike (now() and schedule())');
  return { dynamo: new Dynamo(options.dynamodb), timeoutMs, scheduler };
}

function capacity(value: number | undefined, option: 'readCapacity' | 'writeCapacity'): number {
  if (value === undefined) return 10;
  if (!Number.isSafeInteger(value) || value < 1) throw new ConfigError(option, 'must be a positive integer');
  return value;
}

async function describe(dynamo: Dynamo, table: string): Promise<TableDescription | undefined> {
  return firstValueFrom(describe$(dynamo, table));
}

function describe$(dynamo: Dynamo, table: string): Observable<TableDescription | undefined> {
  return dynamo.describeTable(table).pipe(catchError((error: unknown) => {
    if (classifyAwsError(error) === 'not-found') return of(undefined);
    return throwError(() => new KinsumerError(`describing table ${table} failed`, { cause: error, retriable: classifyAwsError(error) === 'transient' }));
  }));
}

/** Polls the table's status (fast first, backing off) until it is `status`, for at most `timeoutMs` of `scheduler`. */
export function waitForTable(dynamo: Dynamo, table: string, status: 'ACTIVE' | 'GONE', timeoutMs: number, scheduler: SchedulerLike): Observable<void> {
  let current = 'unknown';
  return defer(() => describe$(dynamo, table)).pipe(
    map((description) => description?.TableStatus ?? 'GONE'),
    tap((seen) => { current = seen; }),
    repeat({ delay: (count) => timer(pollDelay(count - 1), scheduler) }),
    first((seen) => seen === status),
    map(() => undefined),
    timeout({
      first: timeoutMs,
      scheduler,
      with: () => throwError(() => new KinsumerError(`table ${table} is ${current}, not ${status}, after ${timeoutMs} ms`, { retriable: true })),
    }),
  );
}

// Local servers switch state in milliseconds, AWS in seconds: start fast, back off to 2 s.
function pollDelay(attempt: number): number {
  return Math.min(2000, 20 * 2 ** attempt);
}
