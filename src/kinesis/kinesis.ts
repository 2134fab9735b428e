// The only module that imports the Kinesis client at run time: every Kinesis call of the library
// goes through here, as cold Observables of one request (subscribe = send, unsubscribe = abort).
// Calls go on kinsumer's own keep-alive connections when the client's handler is a stock one
// (connections/), GetRecords the lean way once the SDK has sent one (lean-call.ts); SubscribeToShard
// always through the client's handler, which keeps its HTTP/2 session.
import {
  DeregisterStreamConsumerCommand, DescribeStreamConsumerCommand, DescribeStreamSummaryCommand, GetRecordsCommand,
  GetShardIteratorCommand, ListShardsCommand, RegisterStreamConsumerCommand, SubscribeToShardCommand,
  type DescribeStreamConsumerCommandOutput, type DescribeStreamSummaryCommandOutput, type GetRecordsCommandInput,
  type GetRecordsCommandOutput, type GetShardIteratorCommandInput, type GetShardIteratorCommandOutput, type KinesisClient,
  type ListShardsCommandOutput, type RegisterStreamConsumerCommandOutput, type _Record as SdkRecord, type Shard,
} from '@aws-sdk/client-kinesis';
import { type Observable, EMPTY, catchError, expand, map, of, reduce, shareReplay, switchMap, throwError } from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { explainErrors } from '../errors/endpoint-error.js';
import { StreamNotFoundError } from '../errors/kinsumer-errors.js';
import { leanOrSdk } from '../connections/lean-call.js';
import { type CommandWithStack, type Hop, ServiceConnections, lastHop } from '../connections/service-connections.js';
import type { StreamRef } from '../options.js';
import { type RequestBound, request, withinTimeout } from '../ports/request-timeout.js';
import { DATE_HEADER_RESOLUTION_MS, dateOf, readServerDate } from '../ports/server-date.js';
import {
  type FanOutPort, type IssuedIterator, type IteratorStart, type RawRecord, type RecordsPage, type ShardInfo, type StreamConsumerInfo, type StreamPort,
  DEFAULT_MAX_RECORD_SIZE_KIB,
} from '../ports/stream.js';
import { subscription } from './event-stream.js';
import { decodeAnswer, leanGetRecords } from './get-records.js';

/** Options of {@link KinesisStream}. */
export interface KinesisStreamOptions {
  /** `MaxResults` of each ListShards page. Default: the service's (1000). */
  readonly listShardsPageSize?: number;
  /**
   * A call unanswered this long is aborted and errors with `RequestTimeoutError` (a transient
   * fault); a SubscribeToShard until the service accepts it. Default: no bound.
   */
  readonly bound?: RequestBound;
  /** Where the calls go (kinsumer's connections or the client's handler). Default: decided from the client's handler. */
  readonly connections?: ServiceConnections;
}

/** What DescribeStreamSummary says about the stream. */
export interface StreamSummary {
  readonly streamName: string;
  readonly streamArn: string;
  /** `CREATING`, `DELETING`, `ACTIVE` or `UPDATING`. */
  readonly status: string;
  readonly openShardCount: number;
  readonly retentionPeriodHours: number;
  /** `'PROVISIONED'` or `'ON_DEMAND'` where the server says. */
  readonly streamMode: string | undefined;
  readonly encryptionType: string | undefined;
  readonly consumerCount: number | undefined;
  /** When the stream was created (a multi-stream KCL application names its leases after it). */
  readonly creationTimestamp: Date | undefined;
  /** `MaxRecordSizeInKiB` (`UpdateMaxRecordSize`, 1024 to 10240); 1024, Kinesis's default, where the answer has none. */
  readonly maxRecordSizeKiB: number;
}

/** The user's Kinesis stream, by name or ARN, behind the {@link StreamPort} seam. */
export class KinesisStream implements StreamPort {
  readonly streamLabel: string;
  /** The stream's registered consumers and SubscribeToShard. */
  readonly fanOut: FanOutPort;
  /** `{ StreamARN }` or `{ StreamName }`: how every request that names the stream names it. */
  private readonly streamParams: { StreamARN: string } | { StreamName: string };
  private askedArn$: Observable<string> | undefined;
  private readonly connections: ServiceConnections;

  constructor(private readonly client: KinesisClient, stream: StreamRef, private readonly options: KinesisStreamOptions = {}) {
    this.streamParams = stream.streamArn === undefined ? { StreamName: stream.streamName } : { StreamARN: stream.streamArn };
    this.streamLabel = stream.streamArn ?? stream.streamName;
    this.connections = options.connections ?? new ServiceConnections('kinesis', client);
    this.fanOut = new KinesisFanOut(client, this, options.bound);
  }

  /**
   * Sends `command` through the client, on kinsumer's connections where the plan says so (and
   * with `hop`'s learning or first answer). Every call but SubscribeToShard goes this way.
   */
  async sendCommand<T>(command: CommandWithStack, signal: AbortSignal, hop: Omit<Hop, 'own' | 'signal'> = {}): Promise<T> {
    lastHop(command, { ...hop, own: await this.connections.own(), signal });
    return this.client.send(command as Parameters<KinesisClient['send']>[0], { abortSignal: signal }) as Promise<T>;
  }

  getShardIterator(shardId: string, start: IteratorStart): Observable<IssuedIterator> {
    const input: GetShardIteratorCommandInput = { ...this.streamParams, ShardId: shardId, ...iteratorParams(start) };
    return this.send('GetShardIterator', async (signal): Promise<IssuedIterator> => {
      const command = new GetShardIteratorCommand(input);
      // Kinesis's clock, from its answer: where a LATEST iterator was positioned, for the start a lease keeps.
      const answeredAt = readServerDate(command);
      const out = await this.sendCommand<GetShardIteratorCommandOutput>(command, signal);
      if (out.ShardIterator === undefined) throw new Error(`GetShardIterator on ${shardId} returned no iterator`);
      const streamTime = streamTimeOf(answeredAt());
      return streamTime === undefined ? { shardIterator: out.ShardIterator } : { shardIterator: out.ShardIterator, streamTime };
    });
  }

  getRecords(shardIterator: string, limit: number): Observable<RecordsPage> {
    // An ARN also goes on GetRecords: cross-account reading through a resource policy needs it.
    const arn = 'StreamARN' in this.streamParams ? this.streamParams : {};
    const input: GetRecordsCommandInput = { ShardIterator: shardIterator, Limit: limit, ...arn };
    return this.send('GetRecords', async (signal): Promise<RecordsPage> => {
      const lean = await this.connections.lean('GetRecords');
      // The SDK sends the client's first call (the lean call learns from it), and whatever the lean
      // call did not take — an error, an unexpected answer — as its first attempt, not sent again.
      // Either way the page carries Kinesis's clock from its answer's Date header: how old its
      // records are (maxRecordAgeMs), on the clock they arrived by.
      const leanPage = (answer: Parameters<typeof decodeAnswer>[0]): RecordsPage | undefined => {
        const page = decodeAnswer(answer);
        return page === undefined ? undefined : withStreamTime(page, dateOf(answer.headers));
      };
      return leanOrSdk(lean, () => JSON.stringify(input), signal, leanPage, (hop) => this.getRecordsBySdk(input, signal, hop));
    });
  }

  private async getRecordsBySdk(input: GetRecordsCommandInput, signal: AbortSignal, hop: Omit<Hop, 'own' | 'signal'>): Promise<RecordsPage> {
    const command = new GetRecordsCommand(input);
    // The answer is decoded by get-records.ts, not by the SDK, unless it is an error or unexpected.
    const lean = leanGetRecords();
    type Middleware = Parameters<typeof command.middlewareStack.addRelativeTo>[0];
    command.middlewareStack.addRelativeTo(lean.middleware as unknown as Middleware, {
      relation: 'after', toMiddleware: 'deserializerMiddleware', name: 'kinsumerLeanGetRecords',
    });
    const answeredAt = readServerDate(command);
    const out = await this.sendCommand<GetRecordsCommandOutput>(command, signal, hop);
    return withStreamTime(lean.page() ?? {
      records: (out.Records ?? []).map(toRawRecord),
      nextShardIterator: out.NextShardIterator ?? undefined,
      millisBehindLatest: out.MillisBehindLatest,
      childShardIds: out.ChildShards === undefined || out.ChildShards.length === 0 ? undefined : out.ChildShards.map((c) => c.ShardId ?? ''),
    }, answeredAt());
  }

  listShards(): Observable<ShardInfo[]> {
    return this.listShardsPage(undefined).pipe(
      expand((page) => (page.NextToken === undefined ? EMPTY : this.listShardsPage(page.NextToken))),
      reduce((shards: ShardInfo[], page) => shards.concat((page.Shards ?? []).map(toShardInfo)), []),
    );
  }

  /** DescribeStreamSummary (20 TPS per account, unlike DescribeStream's 10). */
  describeSummary(): Observable<StreamSummary> {
    return this.send('DescribeStreamSummary', (signal) => this.sendCommand<DescribeStreamSummaryCommandOutput>(new DescribeStreamSummaryCommand(this.streamParams), signal)).pipe(
      map((out) => {
        const summary = out.StreamDescriptionSummary;
        return {
          streamName: summary?.StreamName ?? '',
          streamArn: summary?.StreamARN ?? '',
          status: summary?.StreamStatus ?? 'UNKNOWN',
          openShardCount: summary?.OpenShardCount ?? 0,
          retentionPeriodHours: summary?.RetentionPeriodHours ?? 0,
          streamMode: summary?.StreamModeDetails?.StreamMode,
          encryptionType: summary?.EncryptionType,
          consumerCount: summary?.ConsumerCount,
          creationTimestamp: summary?.StreamCreationTimestamp,
          maxRecordSizeKiB: summary?.MaxRecordSizeInKiB ?? DEFAULT_MAX_RECORD_SIZE_KIB,
        };
      }),
    );
  }

  /** `true` when the stream exists (in any status); other errors pass through. */
  exists(): Observable<boolean> {
    return this.describeSummary().pipe(
      map(() => true),
      catchError((error: unknown) => (error instanceof StreamNotFoundError ? of(false) : throwError(() => error))),
    );
  }

  /**
   * The stream's ARN (consumer calls name the stream by ARN only): given, or asked once. A failed
   * answer is not remembered (shareReplay resets on error): the next caller asks again.
   */
  streamArn(): Observable<string> {
    if ('StreamARN' in this.streamParams) return of(this.streamParams.StreamARN);
    this.askedArn$ ??= this.describeSummary().pipe(map((summary) => summary.streamArn), shareReplay({ bufferSize: 1, refCount: false }));
    return this.askedArn$;
  }

  // Only the first page names the stream: a request carrying NextToken must not (the service
  // rejects both together, and kinesalite, which never pages, crashes on NextToken).
  private listShardsPage(nextToken: string | undefined): Observable<ListShardsCommandOutput> {
    const size = this.options.listShardsPageSize === undefined ? {} : { MaxResults: this.options.listShardsPageSize };
    const input = nextToken === undefined ? { ...this.streamParams, ...size } : { NextToken: nextToken, ...size };
    return this.send('ListShards', (signal) => this.sendCommand<ListShardsCommandOutput>(new ListShardsCommand(input), signal));
  }

  private send<T>(operation: string, call: (signal: AbortSignal) => Promise<T>): Observable<T> {
    const { bound } = this.options;
    return request(call, bound === undefined ? undefined : { ...bound, operation: `Kinesis ${operation}` }).pipe(explainErrors('Kinesis', this.client), catchError((error: unknown) => throwError(() => this.translate(error))));
  }

  private translate(error: unknown): unknown {
    return classifyAwsError(error) === 'not-found' ? new StreamNotFoundError(this.streamLabel, { cause: error }) : error;
  }
}

/**
 * Enhanced fan-out through the same client. Consumer calls take the stream's ARN; "not found"
 * answers are the consumer's, so they are not turned into `StreamNotFoundError` here.
 */
class KinesisFanOut implements FanOutPort {
  constructor(private readonly client: KinesisClient, private readonly stream: KinesisStream, private readonly bound: RequestBound | undefined) {}

  describeConsumer(consumerName: string): Observable<StreamConsumerInfo | undefined> {
    return this.call('DescribeStreamConsumer', (StreamARN, signal) => this.stream.sendCommand<DescribeStreamConsumerCommandOutput>(new DescribeStreamConsumerCommand({ StreamARN, ConsumerName: consumerName }), signal)).pipe(
      map((out): StreamConsumerInfo | undefined => toConsumerInfo(out.ConsumerDescription)),
      catchError((error: unknown) => (classifyAwsError(error) === 'not-found' ? of(undefined) : throwError(() => error))),
    );
  }

  registerConsumer(consumerName: string): Observable<StreamConsumerInfo> {
    return this.call('RegisterStreamConsumer', (StreamARN, signal) => this.stream.sendCommand<RegisterStreamConsumerCommandOutput>(new RegisterStreamConsumerCommand({ StreamARN, ConsumerName: consumerName }), signal)).pipe(
      map((out) => {
        const info = toConsumerInfo(out.Consumer);
        if (info === undefined) throw new Error(`RegisterStreamConsumer for ${consumerName} returned no consumer`);
        return info;
      }),
    );
  }

  deregisterConsumer(consumerName: string): Observable<void> {
    return this.call('DeregisterStreamConsumer', (StreamARN, signal) => this.stream.sendCommand(new DeregisterStreamConsumerCommand({ StreamARN, ConsumerName: consumerName }), signal))
      .pipe(map(() => undefined));
  }

  subscribeToShard(consumerArn: string, shardId: string, start: IteratorStart) {
    const { ShardIteratorType: Type, StartingSequenceNumber: SequenceNumber, Timestamp } = iteratorParams(start);
    let answeredAt: () => Date | undefined = () => undefined;
    const subscription$ = subscription(
      (signal) => {
        const command = new SubscribeToShardCommand({ ConsumerARN: consumerArn, ShardId: shardId, StartingPosition: { Type, SequenceNumber, Timestamp } });
        answeredAt = readServerDate(command);
        return this.client.send(command, { abortSignal: signal });
      },
      (record) => toRawRecord(record),
      () => streamTimeOf(answeredAt()),
    );
    // Bounded until accepted; the events then come as the shard has them (the reader renews the subscription).
    return this.bound === undefined ? subscription$ : subscription$.pipe(withinTimeout('Kinesis SubscribeToShard', this.bound));
  }

  /** One consumer request, once the stream's ARN is known. */
  private call<T>(operation: string, send: (streamArn: string, signal: AbortSignal) => Promise<T>): Observable<T> {
    const bound = this.bound === undefined ? undefined : { ...this.bound, operation: `Kinesis ${operation}` };
    return this.stream.streamArn().pipe(switchMap((streamArn) => request((signal) => send(streamArn, signal), bound).pipe(explainErrors('Kinesis', this.client, operation))));
  }
}

/** A page with the stream's clock its answer's `Date` header names, when it names one. */
function withStreamTime(page: RecordsPage, answeredAt: Date | undefined): RecordsPage {
  const streamTime = streamTimeOf(answeredAt);
  return streamTime === undefined ? page : { ...page, streamTime };
}

/** The header names the answer's second; what it answers (an iterator positioned, a page read) came before the answer: up to a second before that second. */
function streamTimeOf(date: Date | undefined): Date | undefined {
  return date === undefined ? undefined : new Date(date.getTime() - DATE_HEADER_RESOLUTION_MS);
}

function toConsumerInfo(consumer: { ConsumerName?: string | undefined; ConsumerARN?: string | undefined; ConsumerStatus?: string | undefined } | undefined): StreamConsumerInfo | undefined {
  if (consumer?.ConsumerARN === undefined) return undefined;
  return { consumerName: consumer.ConsumerName ?? '', consumerArn: consumer.ConsumerARN, status: consumer.ConsumerStatus ?? 'UNKNOWN' };
}

function iteratorParams(start: IteratorStart): Pick<GetShardIteratorCommandInput, 'ShardIteratorType' | 'StartingSequenceNumber' | 'Timestamp'> {
  switch (start.type) {
    case 'TRIM_HORIZON':
    case 'LATEST':
      return { ShardIteratorType: start.type };
    case 'AT_TIMESTAMP':
      return { ShardIteratorType: start.type, Timestamp: start.timestamp };
    case 'AT_SEQUENCE_NUMBER':
    case 'AFTER_SEQUENCE_NUMBER':
      return { ShardIteratorType: start.type, StartingSequenceNumber: start.sequenceNumber };
  }
}

function toRawRecord(record: SdkRecord): RawRecord {
  const raw = {
    sequenceNumber: record.SequenceNumber ?? '',
    partitionKey: record.PartitionKey ?? '',
    data: record.Data ?? new Uint8Array(0),
    approximateArrivalTimestamp: record.ApproximateArrivalTimestamp ?? new Date(0),
  };
  return record.EncryptionType === undefined ? raw : { ...raw, encryptionType: record.EncryptionType };
}

function toShardInfo(shard: Shard): ShardInfo {
  const parents = [shard.ParentShardId, shard.AdjacentParentShardId].filter((id): id is string => id !== undefined && id !== '');
  return {
    shardId: shard.ShardId ?? '',
    parentShardIds: parents,
    open: shard.SequenceNumberRange?.EndingSequenceNumber === undefined,
    startingHashKey: shard.HashKeyRange?.StartingHashKey ?? '0',
    endingHashKey: shard.HashKeyRange?.EndingHashKey ?? '0',
  };
}
