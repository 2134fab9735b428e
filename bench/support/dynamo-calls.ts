// Counts DynamoDB calls two ways: SDK middleware on a client of this process (every call the
// client makes, by command, table and key), and an HTTP proxy in front of the local DynamoDB
// server (every call of every process that goes through it, by operation and table).
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** One counted call. */
export interface DynamoCall {
  /** `GetItem`, `PutItem`, `UpdateItem`, `Scan`, ... */
  readonly command: string;
  readonly table: string;
  /** The item's hash key value where the call names one item (`Shard`, `ID` or `Key`). */
  readonly key?: string;
  /** Items asked for, where the call names several (`BatchGetItem`). */
  readonly items?: number;
  /** A strongly consistent read. */
  readonly consistent?: boolean;
  /** Actions of a `TransactWriteItems`. */
  readonly actions?: number;
  readonly atMs: number;
}

/** Calls recorded so far; `since` leaves out the warm-up. */
export class CallLog {
  readonly calls: DynamoCall[] = [];

  add(call: DynamoCall): void {
    this.calls.push(call);
  }

  since(atMs: number): DynamoCall[] {
    return this.calls.filter((call) => call.atMs >= atMs);
  }

  /** The calls made in [fromMs, toMs] (`Date.now()` times, so another process's times compare). */
  between(fromMs: number, toMs: number): DynamoCall[] {
    return this.calls.filter((call) => call.atMs >= fromMs && call.atMs <= toMs);
  }
}

/** DynamoDB on-demand, us-east-1 (perf-4): dollars per million write and read request units. */
export const DOLLARS_PER_MILLION = { write: 0.625, read: 0.125 } as const;
export const MINUTES_PER_MONTH = (365.25 / 12) * 24 * 60;

/** What `calls`, made over `minutes`, cost a month on demand (their capacity units, {@link capacityUnits}). */
export function dollarsPerMonth(calls: readonly DynamoCall[], minutes: number): number {
  let read = 0;
  let write = 0;
  for (const units of calls.map(capacityUnits)) {
    read += units.read;
    write += units.write;
  }
  return ((write * DOLLARS_PER_MILLION.write + read * DOLLARS_PER_MILLION.read) / 1e6) * (MINUTES_PER_MONTH / minutes);
}

/**
 * On-demand capacity units a call uses, kinsumer's items being under 1 KB: a write 1, a strongly
 * consistent read 1 and an eventually consistent one half (per item read), a transaction 2 per action.
 */
export function capacityUnits(call: DynamoCall): { readonly read: number; readonly write: number } {
  const read = call.consistent === true ? 1 : 0.5;
  switch (call.command) {
    case 'GetItem': case 'Scan': case 'Query': return { read, write: 0 };
    case 'BatchGetItem': return { read: read * (call.items ?? 1), write: 0 };
    case 'PutItem': case 'UpdateItem': case 'DeleteItem': return { read: 0, write: 1 };
    case 'TransactWriteItems': return { read: 0, write: 2 * (call.actions ?? 1) };
    default: return { read: 0, write: 0 };
  }
}

/** Counts of `calls` grouped by `keyOf`, keys sorted. */
export function countBy(calls: readonly DynamoCall[], keyOf: (call: DynamoCall) => string): Record<string, number> {
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(keyOf(call), (counts.get(keyOf(call)) ?? 0) + 1);
  return Object.fromEntries([...counts].sort(([a], [b]) => a.localeCompare(b)));
}

interface KeyedInput {
  readonly TableName?: string;
  readonly Key?: Record<string, { S?: string }>;
  readonly Item?: Record<string, { S?: string }>;
  readonly RequestItems?: Record<string, { readonly Keys?: readonly unknown[]; readonly ConsistentRead?: boolean }>;
  readonly ConsistentRead?: boolean;
  readonly TransactItems?: readonly unknown[];
}

function hashKeyOf(input: KeyedInput): string | undefined {
  const attributes = input.Key ?? input.Item;
  if (attributes === undefined) return undefined;
  for (const name of ['Shard', 'ID', 'Key']) {
    const value = attributes[name]?.S;
    if (value !== undefined) return value;
  }
  return undefined;
}

function describe(command: string, input: KeyedInput, atMs: number): DynamoCall {
  // BatchGetItem names its tables in RequestItems, not TableName.
  const table = input.TableName ?? Object.keys(input.RequestItems ?? {}).join('+');
  const key = hashKeyOf(input);
  const items = input.RequestItems === undefined ? undefined : Object.values(input.RequestItems).reduce((n, request) => n + (request.Keys?.length ?? 0), 0);
  const consistent = input.ConsistentRead === true || Object.values(input.RequestItems ?? {}).some((request) => request.ConsistentRead === true);
  const actions = input.TransactItems?.length;
  return {
    command, table, ...(key === undefined ? {} : { key }), ...(items === undefined ? {} : { items }), ...(consistent ? { consistent } : {}),
    ...(actions === undefined ? {} : { actions }), atMs,
  };
}

/**
 * Adds middleware to `client` that records every call it sends (retries of one call count once).
 * kinsumer sends every call of a client with middleware of the application's through the SDK (the
 * middleware sees each): the counts are right, the CPU is not the lean path's (use a counting proxy then).
 */
export function countCalls(client: DynamoDBClient, log: CallLog): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      log.add(describe(String(context.commandName ?? 'unknown').replace(/Command$/, ''), args.input as KeyedInput, Date.now()));
      return next(args);
    },
    { step: 'initialize', name: 'kinsumerBenchCallCounter' },
  );
}

/** An HTTP proxy in front of a local DynamoDB server that records each request it forwards. */
export interface CountingProxy {
  readonly endpoint: string;
  readonly log: CallLog;
  stop(): Promise<void>;
}

/** Starts a counting proxy on 127.0.0.1 in front of `target` (`http://host:port`). */
export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const log = new CallLog();
  const upstream = new URL(target);
  const server: Server = createServer((incoming: IncomingMessage, outgoing: ServerResponse) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      const operation = String(incoming.headers['x-amz-target'] ?? '').split('.').pop() ?? 'unknown';
      let input: KeyedInput = {};
      try {
        input = JSON.parse(body.toString('utf8')) as KeyedInput;
      } catch {
        // Not JSON: counted without a table.
      }
      log.add(describe(operation, input, Date.now()));
      const forward = request({
        host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers,
      }, (response) => {
        outgoing.writeHead(response.statusCode ?? 500, response.headers);
        response.pipe(outgoing);
      });
      forward.on('error', () => { outgoing.destroy(); });
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    log,
    stop: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
