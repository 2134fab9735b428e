// The only module that imports the DynamoDB client at run time: every DynamoDB call of the
// library goes through here, so the rest is plain logic over these cold Observables.
import {
  BatchGetItemCommand, CreateTableCommand, DeleteItemCommand, DeleteTableCommand, DescribeTableCommand, GetItemCommand,
  PutItemCommand, ScanCommand, TransactWriteItemsCommand, UpdateItemCommand,
  type AttributeValue, type BatchGetItemCommandInput, type BatchGetItemCommandOutput, type CreateTableCommandInput, type DeleteItemCommandInput, type DynamoDBClient,
  type GetItemCommandInput, type PutItemCommandInput, type ScanCommandInput, type TableDescription, type TransactWriteItemsCommandInput,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { type Observable, expand, EMPTY, map, reduce } from 'rxjs';
import { explainErrors } from '../errors/endpoint-error.js';
import { type RequestBound, request } from '../ports/request-timeout.js';

/** A DynamoDB item as the SDK spells it. */
export type Item = Record<string, AttributeValue>;

/**
 * Thin, typed access to the DynamoDB operations kinsumer uses. With a `bound`, a call unanswered
 * within `bound.timeoutMs` is aborted and errors with `RequestTimeoutError` (a transient fault).
 */
export class Dynamo {
  constructor(private readonly client: DynamoDBClient, private readonly bound?: RequestBound) {}

  getItem(input: GetItemCommandInput): Observable<Item | undefined> {
    return this.call('GetItem', (signal) => this.client.send(new GetItemCommand(input), { abortSignal: signal })).pipe(map((out) => out.Item));
  }

  /** One BatchGetItem call (at most 100 keys); the caller retries what comes back in `UnprocessedKeys`. */
  batchGetItem(input: BatchGetItemCommandInput): Observable<Pick<BatchGetItemCommandOutput, 'Responses' | 'UnprocessedKeys'>> {
    return this.call('BatchGetItem', (signal) => this.client.send(new BatchGetItemCommand(input), { abortSignal: signal }))
      .pipe(map((out) => ({ Responses: out.Responses, UnprocessedKeys: out.UnprocessedKeys })));
  }

  putItem(input: PutItemCommandInput): Observable<void> {
    return this.call('PutItem', async (signal) => { await this.client.send(new PutItemCommand(input), { abortSignal: signal }); });
  }

  /** Returns the item's attributes after the update (`ReturnValues: ALL_NEW`). */
  updateItem(input: UpdateItemCommandInput): Observable<Item | undefined> {
    return this.call('UpdateItem', (signal) => this.client.send(new UpdateItemCommand({ ReturnValues: 'ALL_NEW', ...input }), { abortSignal: signal }))
      .pipe(map((out) => out.Attributes));
  }

  /** One TransactWriteItems; `input` is sent as is on every subscription (keep its ClientRequestToken for re-sends). */
  transactWriteItems(input: TransactWriteItemsCommandInput): Observable<void> {
    return this.call('TransactWriteItems', async (signal) => { await this.client.send(new TransactWriteItemsCommand(input), { abortSignal: signal }); });
  }

  deleteItem(input: DeleteItemCommandInput): Observable<void> {
    return this.call('DeleteItem', async (signal) => { await this.client.send(new DeleteItemCommand(input), { abortSignal: signal }); });
  }

  /** Every item of the scan, all pages. */
  scanAll(input: ScanCommandInput): Observable<Item[]> {
    const page = (start: Item | undefined) => this.call('Scan', (signal) => this.client.send(
      new ScanCommand(start === undefined ? input : { ...input, ExclusiveStartKey: start }), { abortSignal: signal }));
    return page(undefined).pipe(
      expand((out) => (out.LastEvaluatedKey === undefined ? EMPTY : page(out.LastEvaluatedKey))),
      reduce((items: Item[], out) => items.concat(out.Items ?? []), []),
    );
  }

  describeTable(tableName: string): Observable<TableDescription | undefined> {
    return this.call('DescribeTable', (signal) => this.client.send(new DescribeTableCommand({ TableName: tableName }), { abortSignal: signal }))
      .pipe(map((out) => out.Table));
  }

  createTable(input: CreateTableCommandInput): Observable<void> {
    return this.call('CreateTable', async (signal) => { await this.client.send(new CreateTableCommand(input), { abortSignal: signal }); });
  }

  deleteTable(tableName: string): Observable<void> {
    return this.call('DeleteTable', async (signal) => { await this.client.send(new DeleteTableCommand({ TableName: tableName }), { abortSignal: signal }); });
  }

  /** One request; an error that is about the endpoint (unreachable, not DynamoDB) says so. */
  private call<T>(operation: string, send: (signal: AbortSignal) => Promise<T>): Observable<T> {
    const bound = this.bound === undefined ? undefined : { ...this.bound, operation: `DynamoDB ${operation}` };
    return request(send, bound).pipe(explainErrors('DynamoDB', this.client));
  }
}
