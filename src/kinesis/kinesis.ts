// The only module that imports the Kinesis client at run time: every Kinesis call of the library
// goes through here, as cold Observables of one request (subscribe = send, unsubscribe = abort).
import {
  DescribeStreamSummaryCommand, GetRecordsCommand, GetShardIteratorCommand, ListShardsCommand,
  type GetShardIteratorCommandInput, type KinesisClient, type ListShardsCommandOutput, type _Record as SdkRecord, type Shard,
} from '@aws-sdk/client-kinesis';
import { type Observable, EMPTY, catchError, expand, map, of, reduce, throwError } from 'rxjs';
import { classifyAwsError } from '../aws-errors.js';
import { StreamNotFoundError } from '../errors.js';
import type { StreamRef } from '../options.js';
import type { IteratorStart, RawRecord, RecordsPage, ShardInfo, StreamPort } from '../ports.js';
import { request } from '../request.js';

/** Options of {@link KinesisStream}. */
export interface KinesisStreamOptions {
  /** `MaxResults` of each ListShards page. Default: the service's (1000). */
  readonly listShardsPageSize?: number;
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
}

/** The user's Kinesis stream, by name or ARN, behind the {@link StreamPort} seam. */
export class KinesisStream implements StreamPort {
  readonly streamLabel: string;
  /** `{ StreamARN }` or `{ StreamName }`: how every request that names the stream names it. */
  private readonly streamParams: { StreamARN: string } | { StreamName: string };

  constructor(private readonly client: KinesisClient, stream: StreamRef, private readonly options: KinesisStreamOptions = {}) {
    this.streamParams = stream.streamArn === undefined ? { StreamName: stream.streamName } : { StreamARN: stream.streamArn };
    this.streamLabel = stream.streamArn ?? stream.streamName;
  }

  getShardIterator(shardId: string, start: IteratorStart): Observable<string> {
    const input: GetShardIteratorCommandInput = { ...this.streamParams, ShardId: shardId, ...iteratorParams(start) };
    return this.send((signal) => this.client.send(new GetShardIteratorCommand(input), { abortSignal: signal })).pipe(
      map((out) => {
        if (out.ShardIterator === undefined) throw new Error(`GetShardIterator on ${shardId} returned no iterator`);
        return out.ShardIterator;
      }),
    );
  }

  getRecords(shardIterator: string, limit: number): Observable<RecordsPage> {
    // An ARN also goes on GetRecords: cross-account reading through a resource policy needs it.
    const arn = 'StreamARN' in this.streamParams ? this.streamParams : {};
    return this.send((signal) => this.client.send(new GetRecordsCommand({ ShardIterator: shardIterator, Limit: limit, ...arn }), { abortSignal: signal }))
      .pipe(map((out) => ({
        records: (out.Records ?? []).map(toRawRecord),
        nextShardIterator: out.NextShardIterator ?? undefined,
        millisBehindLatest: out.MillisBehindLatest,
        childShardIds: out.ChildShards === undefined || out.ChildShards.length === 0 ? undefined : out.ChildShards.map((c) => c.ShardId ?? ''),
      })));
  }

  listShards(): Observable<ShardInfo[]> {
    return this.listShardsPage(undefined).pipe(
      expand((page) => (page.NextToken === undefined ? EMPTY : this.listShardsPage(page.NextToken))),
      reduce((shards: ShardInfo[], page) => shards.concat((page.Shards ?? []).map(toShardInfo)), []),
    );
  }

  /** DescribeStreamSummary (20 TPS per account, unlike DescribeStream's 10). */
  describeSummary(): Observable<StreamSummary> {
    return this.send((signal) => this.client.send(new DescribeStreamSummaryCommand(this.streamParams), { abortSignal: signal })).pipe(
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

  // Only the first page names the stream: a request carrying NextToken must not (the service
  // rejects both together, and kinesalite, which never pages, crashes on NextToken).
  private listShardsPage(nextToken: string | undefined): Observable<ListShardsCommandOutput> {
    const size = this.options.listShardsPageSize === undefined ? {} : { MaxResults: this.options.listShardsPageSize };
    const input = nextToken === undefined ? { ...this.streamParams, ...size } : { NextToken: nextToken, ...size };
    return this.send((signal) => this.client.send(new ListShardsCommand(input), { abortSignal: signal }));
  }

  private send<T>(call: (signal: AbortSignal) => Promise<T>): Observable<T> {
    return request(call).pipe(catchError((error: unknown) => throwError(() => this.translate(error))));
  }

  private translate(error: unknown): unknown {
    return classifyAwsError(error) === 'not-found' ? new StreamNotFoundError(this.streamLabel, { cause: error }) : error;
  }
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
