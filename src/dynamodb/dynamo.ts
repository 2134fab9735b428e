// The only module that imports the DynamoDB client at run time: every DynamoDB call of the
// library goes through here, so the rest is plain logic over these cold Observables. Calls go on
// kinsumer's own keep-alive connections when the client's handler is a stock one (connections/).
import {
  BatchGetItemCommand, CreateTableCommand, DeleteItemCommand, DeleteTableCommand, DescribeTableCommand, GetItemCommand,
  PutItemCommand, ScanCommand, TransactWriteItemsCommand, UpdateItemCommand,
  type AttributeValue, type BatchGetItemCommandInput, type BatchGetItemCommandOutput, type CreateTableCommandInput, type DeleteItemCommandInput,
  type DescribeTableCommandOutput, type DynamoDBClient, type GetItemCommandInput, type GetItemCommandOutput, type PutItemCommandInput,
  type ScanCommandInput, type ScanCommandOutput, type TableDescription, type TransactWriteItemsCommandInput, type UpdateItemCommandInput,
  type UpdateItemCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { type Observable, expand, EMPTY, map, reduce } from 'rxjs';
import { leanOrSdk } from '../connections/lean-call.js';
import { type CommandWithStack, ServiceConnections, lastHop } from '../connections/service-connections.js';
import { explainErrors } from '../errors/endpoint-error.js';
import { type RequestBound, request } from '../ports/request-timeout.js';
import { dateOf, readServerDate } from '../ports/server-date.js';
import { decodeJsonAnswer, jsonBody } from './json-answer.js';

/**
 * Carries an error past the SDK's retry middleware as a client error (no name, status or cause it
 * retries on): the strategy neither retries it nor charges its quota. Unwrapped right after.
 */
class NotRetriedBySdk extends Error {
  constructor(readonly original: unknown) {
    super('not retried by the SDK');
    this.name = 'KinsumerNotRetriedBySdk';
  }
}

/** A middleware inside the retry middleware (just outside the deserializer) that wraps every failure in {@link NotRetriedBySdk}. */
function notRetriedBySdk(next: (args: unknown) => Promise<unknown>): (args: unknown) => Promise<unknown> {
  return async (args) => {
    try {
      return await next(args);
    } catch (error) {
      throw new NotRetriedBySdk(error);
    }
  };
}

/** A command of the SDK's, as far as kinsumer adds middleware to its own stack. */
type SdkCommand = CommandWithStack & Parameters<typeof readServerDate>[0];

/** A DynamoDB item as the SDK spells it. */
export type Item = Record<string, AttributeValue>;

/**
 * Thin, typed access to the DynamoDB operations kinsumer uses. With a `bound`, a call unanswered
 * within `bound.timeoutMs` is aborted and errors with `RequestTimeoutError` (a transient fault).
 */
export class Dynamo {
  private readonly connections: ServiceConnections;

  /** @param connections - Where the calls go. Default: decided from the client's handler. */
  constructor(private readonly client: DynamoDBClient, private readonly bound?: RequestBound, connections?: ServiceConnections) {
    this.connections = connections ?? new ServiceConnections('dynamodb', client);
  }

  getItem(input: GetItemCommandInput): Observable<Item | undefined> {
    return this.call('GetItem', (signal) => this.sendLean<GetItemCommandOutput>('GetItem', input, signal, () => new GetItemCommand(input))).pipe(map(({ out }) => out.Item));
  }

  /** GetItem, and the server's clock when it answered (its `Date` header, whole seconds; `undefined` without one). */
  getItemDated(input: GetItemCommandInput): Observable<{ readonly item: Item | undefined; readonly serverDate: Date | undefined }> {
    return this.call('GetItem', (signal) => this.sendLean<GetItemCommandOutput>('GetItem', input, signal, () => new GetItemCommand(input)))
      .pipe(map(({ out, serverDate }) => ({ item: out.Item, serverDate })));
  }

  /**
   * GetItem for a poll: one attempt, never retried by the SDK. The SDK's retry strategy keeps one
   * retry quota per client, shared by every call of the application's DynamoDBClient; a poll that
   * the table throttles (a provisioned table's capacity used up) must not spend it, or the lease
   * writes that meet a throttle next get no retry. The poll's own pace retries it.
   */
  pollItem(input: GetItemCommandInput): Observable<Item | undefined> {
    return this.call('GetItem', async (signal) => {
      const command = () => {
        const get = new GetItemCommand(input);
        type Middleware = Parameters<typeof get.middlewareStack.addRelativeTo>[0];
        get.middlewareStack.addRelativeTo(notRetriedBySdk as unknown as Middleware, {
          relation: 'before', toMiddleware: 'deserializerMiddleware', name: 'kinsumerNotRetriedBySdk',
        });
        return get;
      };
      try {
        return (await this.sendLean<GetItemCommandOutput>('GetItem', input, signal, command)).out.Item;
      } catch (error) {
        throw error instanceof NotRetriedBySdk ? error.original : error;
      }
    });
  }

  /** One BatchGetItem call (at most 100 keys); the caller retries what comes back in `UnprocessedKeys`. */
  batchGetItem(input: BatchGetItemCommandInput): Observable<Pick<BatchGetItemCommandOutput, 'Responses' | 'UnprocessedKeys'>> {
    return this.call('BatchGetItem', (signal) => this.sendLean<BatchGetItemCommandOutput>('BatchGetItem', input, signal, () => new BatchGetItemCommand(input)))
      .pipe(map(({ out }) => ({ Responses: out.Responses, UnprocessedKeys: out.UnprocessedKeys })));
  }

  putItem(input: PutItemCommandInput): Observable<void> {
    return this.call('PutItem', async (signal) => { await this.sendLean('PutItem', input, signal, () => new PutItemCommand(input)); });
  }

  /** Returns the item's attributes after the update (`ReturnValues: ALL_NEW`). */
  updateItem(input: UpdateItemCommandInput): Observable<Item | undefined> {
    return this.update(input).pipe(map(({ out }) => out.Attributes));
  }

  /** UpdateItem (ALL_NEW), and the server's clock when it answered (see {@link getItemDated}). */
  updateItemDated(input: UpdateItemCommandInput): Observable<{ readonly item: Item | undefined; readonly serverDate: Date | undefined }> {
    return this.update(input).pipe(map(({ out, serverDate }) => ({ item: out.Attributes, serverDate })));
  }

  private update(input: UpdateItemCommandInput) {
    const allNew: UpdateItemCommandInput = { ReturnValues: 'ALL_NEW', ...input };
    return this.call('UpdateItem', (signal) => this.sendLean<UpdateItemCommandOutput>('UpdateItem', allNew, signal, () => new UpdateItemCommand(allNew)));
  }

  /** One TransactWriteItems; `input` is sent as is on every subscription (keep its ClientRequestToken for re-sends). */
  transactWriteItems(input: TransactWriteItemsCommandInput): Observable<void> {
    return this.call('TransactWriteItems', async (signal) => { await this.send(new TransactWriteItemsCommand(input), signal); });
  }

  deleteItem(input: DeleteItemCommandInput): Observable<void> {
    return this.call('DeleteItem', async (signal) => { await this.sendLean('DeleteItem', input, signal, () => new DeleteItemCommand(input)); });
  }

  /** Every item of the scan, all pages. */
  scanAll(input: ScanCommandInput): Observable<Item[]> {
    const page = (start: Item | undefined) => this.call('Scan', async (signal) => {
      const pageInput = start === undefined ? input : { ...input, ExclusiveStartKey: start };
      return (await this.sendLean<ScanCommandOutput>('Scan', pageInput, signal, () => new ScanCommand(pageInput))).out;
    });
    return page(undefined).pipe(
      expand((out) => (out.LastEvaluatedKey === undefined ? EMPTY : page(out.LastEvaluatedKey))),
      reduce((items: Item[], out) => items.concat(out.Items ?? []), []),
    );
  }

  describeTable(tableName: string): Observable<TableDescription | undefined> {
    return this.call('DescribeTable', (signal) => this.send<DescribeTableCommandOutput>(new DescribeTableCommand({ TableName: tableName }), signal))
      .pipe(map((out) => out.Table));
  }

  createTable(input: CreateTableCommandInput): Observable<void> {
    return this.call('CreateTable', async (signal) => { await this.send(new CreateTableCommand(input), signal); });
  }

  deleteTable(tableName: string): Observable<void> {
    return this.call('DeleteTable', async (signal) => { await this.send(new DeleteTableCommand({ TableName: tableName }), signal); });
  }

  /**
   * One call of `operation` with `input`: the lean way once the client's first call of it taught
   * kinsumer its request (connections/lean-call.ts), else `command()` through the SDK, which is also
   * given what the lean call did not take (an error, an unexpected answer) as its first attempt.
   * With the server's clock when it answered.
   */
  private async sendLean<T>(operation: string, input: object, signal: AbortSignal, command: () => SdkCommand): Promise<{ readonly out: T; readonly serverDate: Date | undefined }> {
    const lean = await this.connections.lean(operation);
    return leanOrSdk(lean, () => jsonBody(input), signal, (answer) => {
      const out = decodeJsonAnswer(answer);
      return out === undefined ? undefined : { out: out as T, serverDate: dateOf(answer.headers) };
    }, async (hop) => {
      const sdkCommand = command();
      const answeredAt = readServerDate(sdkCommand);
      lastHop(sdkCommand, { ...hop, own: await this.connections.own(), signal });
      const out = await this.client.send(sdkCommand as Parameters<DynamoDBClient['send']>[0], { abortSignal: signal }) as T;
      return { out, serverDate: answeredAt() };
    });
  }

  /** Sends `command` through the client, on kinsumer's connections where the plan says so. */
  private async send<T = unknown>(command: CommandWithStack, signal: AbortSignal): Promise<T> {
    lastHop(command, { own: await this.connections.own(), signal });
    return this.client.send(command as Parameters<DynamoDBClient['send']>[0], { abortSignal: signal }) as Promise<T>;
  }

  /** One request; an error that is about the endpoint (unreachable, not DynamoDB) says so. */
  private call<T>(operation: string, send: (signal: AbortSignal) => Promise<T>): Observable<T> {
    const bound = this.bound === undefined ? undefined : { ...this.bound, operation: `DynamoDB ${operation}` };
    return request(send, bound).pipe(explainErrors('DynamoDB', this.client, operation));
  }
}
