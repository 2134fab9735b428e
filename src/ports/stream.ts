// The Kinesis stream as the core needs it: shards, iterators, pages of records, and enhanced fan-out
// subscriptions. Every method returns a cold Observable of one request, as the lease store's do.
import type { Observable } from 'rxjs';

/** Where GetShardIterator starts. */
export type IteratorStart =
  /** The oldest record kept. */
  | {
    /** The GetShardIterator `ShardIteratorType`. */
    readonly type: 'TRIM_HORIZON';
  }
  /** Records put after the iterator was issued. */
  | {
    /** The GetShardIterator `ShardIteratorType`. */
    readonly type: 'LATEST';
  }
  /** The first record that arrived at or after `timestamp`. */
  | {
    /** The GetShardIterator `ShardIteratorType`. */
    readonly type: 'AT_TIMESTAMP';
    /** The `Timestamp` parameter. */
    readonly timestamp: Date;
  }
  /** The record with this sequence number (a KPL aggregate resumed in its middle). */
  | {
    /** The GetShardIterator `ShardIteratorType`. */
    readonly type: 'AT_SEQUENCE_NUMBER';
    /** The `StartingSequenceNumber` parameter. */
    readonly sequenceNumber: string;
  }
  /** The record after this sequence number (resuming after a checkpoint). */
  | {
    /** The GetShardIterator `ShardIteratorType`. */
    readonly type: 'AFTER_SEQUENCE_NUMBER';
    /** The `StartingSequenceNumber` parameter. */
    readonly sequenceNumber: string;
  };

/** A GetShardIterator answer. */
export interface IssuedIterator {
  /** The iterator, valid for 5 minutes on Kinesis. */
  readonly shardIterator: string;
  /**
   * A time on the stream's own clock no later than the moment the iterator was positioned, and as
   * close to it as the server lets the adapter know: `AT_TIMESTAMP` of it returns every record a
   * `LATEST` iterator returns, and only records that arrived at most a moment before. The Kinesis
   * adapter takes its answer's `Date` header less 1 s (the header's resolution): at most 2 s early;
   * the in-memory stream its clock. Absent when the server sent no `Date`.
   */
  readonly streamTime?: Date;
}

/** A record as Kinesis returns it (possibly a KPL aggregate). */
export interface RawRecord {
  /** Kinesis sequence number: a decimal string beyond 2^53. */
  readonly sequenceNumber: string;
  /** The producer's partition key (for an aggregate, the KPL's outer key). */
  readonly partitionKey: string;
  /** The payload: a user record, or a KPL aggregate of several. */
  readonly data: Uint8Array;
  /** When Kinesis accepted the record. */
  readonly approximateArrivalTimestamp: Date;
  /** `KMS` when the stream encrypts records at rest; `NONE` or absent otherwise. */
  readonly encryptionType?: string;
  /**
   * The payload as the wire carried it (base64), when the adapter kept it undecoded; given with
   * `arrivalMs`. A reader then decodes it only when the application reads `data`.
   */
  readonly dataBase64?: string;
  /** `approximateArrivalTimestamp` in epoch milliseconds, given with `dataBase64`. */
  readonly arrivalMs?: number;
}

/** One GetRecords answer. */
export interface RecordsPage {
  /** The records, in sequence order; may be empty even when more follow. */
  readonly records: readonly RawRecord[];
  /** `undefined`: the shard is closed and fully read (end of shard). */
  readonly nextShardIterator: string | undefined;
  /** How far the last record is behind the tip of the shard, in milliseconds, as Kinesis reports it. */
  readonly millisBehindLatest: number | undefined;
  /** Children named by the service at the end of a closed shard (not every server reports them). */
  readonly childShardIds: readonly string[] | undefined;
  /**
   * A time on the stream's own clock no later than the answer, as {@link IssuedIterator.streamTime}
   * (the Kinesis adapter: its `Date` header less 1 s; the in-memory stream: its clock): how old a
   * record is, on the clock its arrival time is on. Absent when the server sent no `Date`.
   */
  readonly streamTime?: Date;
}

/** A shard as ListShards describes it. */
export interface ShardInfo {
  /** The shard's id, such as `shardId-000000000003`. */
  readonly shardId: string;
  /** `ParentShardId` and `AdjacentParentShardId`, where present. */
  readonly parentShardIds: readonly string[];
  /** `false` once the shard has an ending sequence number (closed by a split or merge). */
  readonly open: boolean;
  /** Lowest hash key of the shard's range (a decimal string up to 2^128 − 1). */
  readonly startingHashKey: string;
  /** Highest hash key of the shard's range, inclusive. */
  readonly endingHashKey: string;
}

/** A stream's largest record, in KiB, unless `UpdateMaxRecordSize` raised it (1 MiB): Kinesis's default. */
export const DEFAULT_MAX_RECORD_SIZE_KIB = 1024;

/** What DescribeStreamSummary says of the stream that the core reads (`status()`). */
export interface StreamLimits {
  /** How long the stream keeps a record (`RetentionPeriodHours`): older records are trimmed. */
  readonly retentionPeriodHours: number;
  /** The largest record the stream takes (`MaxRecordSizeInKiB`; 1024, Kinesis's default, when the answer has none). */
  readonly maxRecordSizeKiB: number;
}

/**
 * The Kinesis stream. The adapter maps "stream not found" to `StreamNotFoundError` and lets every
 * other AWS error through untouched (classify it with `classifyAwsError`).
 */
export interface StreamPort {
  /** The stream's name or ARN, for messages. */
  readonly streamLabel: string;
  /** An iterator into a shard from `start`, and the stream's clock when it was issued. */
  getShardIterator(shardId: string, start: IteratorStart): Observable<IssuedIterator>;
  /** At most `limit` (1..10000) records. */
  getRecords(shardIterator: string, limit: number): Observable<RecordsPage>;
  /** Every shard, open and closed, following `NextToken` only when the service returned one. */
  listShards(): Observable<ShardInfo[]>;
  /** DescribeStreamSummary, where the adapter offers it. */
  describeSummary?(): Observable<StreamLimits>;
  /**
   * The read rate the server allows each shard's GetRecords, in payload bytes per second: a reader
   * paces itself by it. Absent: Kinesis's, 2 MiB/s (`Infinity`: a server that never throttles).
   */
  readonly readBytesPerSecond?: number;
  /** Enhanced fan-out (`readMode: 'fan-out'`), where the adapter offers it. */
  readonly fanOut?: FanOutPort;
}

// ---------------------------------------------------------------- enhanced fan-out

/** A registered stream consumer, as DescribeStreamConsumer describes it. */
export interface StreamConsumerInfo {
  /** The name it was registered with. */
  readonly consumerName: string;
  /** Its ARN, which subscriptions name. */
  readonly consumerArn: string;
  /** `CREATING`, `ACTIVE` or `DELETING`. */
  readonly status: string;
}

/** One SubscribeToShardEvent. */
export interface ShardEvent {
  /** The records, in sequence order; may be empty. */
  readonly records: readonly RawRecord[];
  /**
   * Where a new subscription continues (AFTER_SEQUENCE_NUMBER) once every record of this event
   * was delivered; `undefined`: the shard is closed and this was its last event (end of shard).
   */
  readonly continuationSequenceNumber: string | undefined;
  /** How far the event is behind the tip of the shard, in milliseconds, as Kinesis reports it. */
  readonly millisBehindLatest: number | undefined;
  /** Children named by the service in the last event of a closed shard. */
  readonly childShardIds: readonly string[] | undefined;
}

/**
 * An open SubscribeToShard. Events are pulled one at a time: while the reader does not pull, the
 * events stay unread and HTTP/2 flow control holds the service back.
 */
export interface ShardEventPull {
  /** The stream's clock when it accepted the subscription, as `IssuedIterator.streamTime` (absent without a `Date` header). */
  readonly streamTime?: Date;
  /**
   * The next event (one request: subscribing pulls it). Emits `undefined` when the service ended
   * the subscription normally (its 5-minute end); errors when the connection failed.
   */
  next(): Observable<ShardEvent | undefined>;
}

/** The stream's enhanced fan-out: its registered consumers and their subscriptions. */
export interface FanOutPort {
  /** `undefined` when no consumer has that name. */
  describeConsumer(consumerName: string): Observable<StreamConsumerInfo | undefined>;
  /** Registers a consumer (status `CREATING`); `ResourceInUseException` when it exists already. */
  registerConsumer(consumerName: string): Observable<StreamConsumerInfo>;
  /** Deregisters a consumer; `ResourceNotFoundException` when there is none. */
  deregisterConsumer(consumerName: string): Observable<void>;
  /**
   * Subscribes the consumer to a shard. Emits one {@link ShardEventPull} once the service accepted,
   * and stays open until unsubscribed: unsubscribing ends the subscription (aborts the request).
   */
  subscribeToShard(consumerArn: string, shardId: string, start: IteratorStart): Observable<ShardEventPull>;
}
