// Several in-memory streams of one account, for groups that read `streams`: streams created,
// deleted and created again under the same name (each time another stream, with its own creation
// time, as on Kinesis), and the StreamPort of a group over them (the same StreamSet the AWS
// adapter uses, on MemoryStreams).
import { type Observable, type SchedulerLike, asyncScheduler, defer, map, of, throwError } from 'rxjs';
import { StreamNotFoundError } from '../errors/kinsumer-errors.js';
import { StreamSet, type StreamSource } from '../kinesis/stream-set.js';
import type { StreamList } from '../options.js';
import { nameOf } from '../ports/stream-key.js';
import type { FanOutPort, IssuedIterator, IteratorStart, RecordsPage, ShardEventPull, ShardInfo, StreamConsumerInfo, StreamPort } from '../ports/stream.js';
import type { KinsumerEvent, Logger } from '../types.js';
import { MemoryStream, type MemoryStreamOptions, awsError } from './memory-stream.js';

/** Options of {@link MemoryStreams}. */
export interface MemoryStreamsOptions {
  /** The account of every stream (in their ARNs and keys). Default `000000000000`. */
  readonly accountId?: string;
  /** The region of their ARNs. Default `us-east-1`. */
  readonly region?: string;
  /** Milliseconds since the epoch: creation times, and each stream's clock. Default `Date.now`. */
  readonly clock?: () => number;
}

/** Options of {@link MemoryStreams.port}: a group's. */
export interface MemoryStreamSetOptions {
  /** The group's `streams`. */
  readonly streams: StreamList;
  /** Default 60000. */
  readonly streamCheckFrequencyMs?: number;
  /** The group's monotonic clock. Default: the streams' clock. */
  readonly elapsedNow?: () => number;
  /** Default: silent. */
  readonly logger?: Logger;
  /** For fan-out's consumer registration. Default `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /** Where fan-out's consumer registration reports its retries. Default: nowhere. */
  readonly emit?: (event: KinsumerEvent) => void;
}

/** One stream under one name: the first, or one created again after a delete. */
interface Incarnation {
  readonly stream: MemoryStream;
  readonly createdAtMs: number;
  /** Tells its iterators from an earlier stream's of the same name. */
  readonly generation: number;
}

const SILENT: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** Streams of one account in memory, by name. */
export class MemoryStreams {
  /** The account of every stream (see {@link MemoryStreamsOptions.accountId}). */
  readonly accountId: string;
  private readonly region: string;
  private readonly clock: () => number;
  private readonly current = new Map<string, Incarnation>();
  private generations = 0;

  constructor(options: MemoryStreamsOptions = {}) {
    this.accountId = options.accountId ?? '000000000000';
    this.region = options.region ?? 'us-east-1';
    this.clock = options.clock ?? Date.now;
  }

  /** Creates a stream (now, on the clock); throws while one of that name exists. */
  create(streamName: string, options: Omit<MemoryStreamOptions, 'streamName' | 'clock'> = {}): MemoryStream {
    if (this.current.has(streamName)) throw awsError('ResourceInUseException', { message: `Stream ${streamName} under account ${this.accountId} already exists` });
    const stream = new MemoryStream({ ...options, streamName, clock: this.clock });
    this.generations += 1;
    this.current.set(streamName, { stream, createdAtMs: this.clock(), generation: this.generations });
    return stream;
  }

  /** Deletes a stream: its calls, and iterators issued by it, answer "not found" from now on. */
  delete(streamName: string): void {
    this.incarnation(streamName).stream.delete();
    this.current.delete(streamName);
  }

  /** The stream of that name now; throws when there is none. */
  get(streamName: string): MemoryStream {
    return this.incarnation(streamName).stream;
  }

  /** Its ARN. */
  arn(streamName: string): string {
    return `arn:aws:kinesis:${this.region}:${this.accountId}:stream/${streamName}`;
  }

  /** When the stream of that name now was created. */
  createdAt(streamName: string): Date {
    return new Date(this.incarnation(streamName).createdAtMs);
  }

  /** A listed name or ARN, as the group's StreamSet reaches it: whatever stream has that name at each call. */
  private source(nameOrArn: string): StreamSource {
    const streamName = nameOf(nameOrArn);
    const port = new ByName(streamName, () => this.incarnation(streamName));
    return {
      port,
      identify: () => defer(() => {
        const found = this.incarnation(streamName);
        return of({ streamArn: this.arn(streamName), createdAt: new Date(found.createdAtMs), status: 'ACTIVE' });
      }),
    };
  }

  /** The StreamPort of a group that reads `options.streams` here (for a `KinsumerBackend`). */
  port(options: MemoryStreamSetOptions): StreamPort {
    return new StreamSet({
      streams: options.streams,
      open: (nameOrArn) => this.source(nameOrArn),
      streamCheckFrequencyMs: options.streamCheckFrequencyMs ?? 60_000,
      elapsedNow: options.elapsedNow ?? this.clock,
      logger: options.logger ?? SILENT,
      scheduler: options.scheduler ?? asyncScheduler,
      emit: options.emit ?? (() => undefined),
    });
  }

  private incarnation(streamName: string): Incarnation {
    const found = this.current.get(streamName);
    if (found === undefined) {
      throw new StreamNotFoundError(streamName, { cause: awsError('ResourceNotFoundException', { message: `Stream ${streamName} under account ${this.accountId} not found.` }) });
    }
    return found;
  }
}

const GENERATION = /^(\d+)\/(.*)$/s;

/** Calls naming a stream by its name, as the Kinesis adapter's do: they reach whichever stream has it now. */
class ByName implements StreamPort {
  readonly fanOut: FanOutPort;

  constructor(readonly streamLabel: string, private readonly now: () => Incarnation) {
    this.fanOut = new ByNameFanOut(() => this.now().stream);
  }

  getShardIterator(shardId: string, start: IteratorStart): Observable<IssuedIterator> {
    return defer(() => {
      const now = this.now();
      return now.stream.getShardIterator(shardId, start).pipe(map((issued) => ({ ...issued, shardIterator: `${now.generation}/${issued.shardIterator}` })));
    });
  }

  getRecords(shardIterator: string, limit: number): Observable<RecordsPage> {
    return defer(() => {
      const now = this.now();
      const [, generation, iterator = ''] = GENERATION.exec(shardIterator) ?? [];
      // An iterator of a deleted stream reads nothing of the stream created again under its name.
      if (Number(generation) !== now.generation) return throwError(() => new StreamNotFoundError(this.streamLabel, { cause: awsError('ResourceNotFoundException', { message: 'the iterator\'s stream was deleted' }) }));
      return now.stream.getRecords(iterator, limit).pipe(map((page) => (page.nextShardIterator === undefined ? page : { ...page, nextShardIterator: `${now.generation}/${page.nextShardIterator}` })));
    });
  }

  listShards(): Observable<ShardInfo[]> {
    return defer(() => this.now().stream.listShards());
  }
}

/** The fan-out of whichever stream has the name now (set a `MemoryFanOut` as that stream's `fanOut`). */
class ByNameFanOut implements FanOutPort {
  constructor(private readonly stream: () => MemoryStream) {}

  describeConsumer(consumerName: string): Observable<StreamConsumerInfo | undefined> {
    return defer(() => this.port().describeConsumer(consumerName));
  }

  registerConsumer(consumerName: string): Observable<StreamConsumerInfo> {
    return defer(() => this.port().registerConsumer(consumerName));
  }

  deregisterConsumer(consumerName: string): Observable<void> {
    return defer(() => this.port().deregisterConsumer(consumerName));
  }

  subscribeToShard(consumerArn: string, shardId: string, start: IteratorStart): Observable<ShardEventPull> {
    return defer(() => this.port().subscribeToShard(consumerArn, shardId, start));
  }

  private port(): FanOutPort {
    const { fanOut, streamLabel } = this.stream();
    if (fanOut === undefined) throw new Error(`MemoryStreams: stream ${streamLabel} has no fanOut (set a MemoryFanOut on it)`);
    return fanOut;
  }
}
