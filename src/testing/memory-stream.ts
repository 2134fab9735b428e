// A Kinesis stream in memory, behind the same StreamPort as the real adapter: for virtual-time
// tests, for the coordination layer's tests and for the library-overhead benchmark (so every
// operation is a slice or a binary search, never a scan of the shard).
import { createHash } from 'node:crypto';
import { type Observable, type SchedulerLike, defer, mergeMap, of, throwError, timer } from 'rxjs';
import { StreamNotFoundError } from '../errors/kinsumer-errors.js';
import {
  type FanOutPort, type IssuedIterator, type IteratorStart, type RawRecord, type RecordsPage, type ShardInfo, type StreamLimits, type StreamPort,
  DEFAULT_MAX_RECORD_SIZE_KIB,
} from '../ports/stream.js';
import { awsError } from './aws-error.js';
import {
  type MemoryShard, SHARD_SLOTS, firstIndex, pageOf, payloadBytes, sequenceInShard, sequenceNumberOf, trimHorizon,
} from './memory-shard.js';

/** The operations of a {@link MemoryStream}, as fault injection and call counters name them. */
export type StreamOperation = 'getShardIterator' | 'getRecords' | 'listShards' | 'describeSummary';

/** One call, as {@link MemoryStream.onCall} listeners see it (before any injected fault). */
export interface StreamCall {
  /** Which operation was called. */
  readonly operation: StreamOperation;
  /** The stream's clock at the call. */
  readonly atMs: number;
  /** GetShardIterator and GetRecords: the shard concerned. */
  readonly shardId?: string;
  /** GetRecords: the `Limit` asked for. */
  readonly limit?: number;
  /** GetShardIterator: where it starts. */
  readonly start?: IteratorStart;
}

/** Options of {@link MemoryStream}. */
export interface MemoryStreamOptions {
  /** Names the stream in iterators and errors. Default `memory-stream`. */
  readonly streamName?: string;
  /** Open shards at creation, splitting the hash key space evenly. Default 1. */
  readonly shardCount?: number;
  /** Milliseconds since the epoch: arrival timestamps, iterator ages, MillisBehindLatest. Default `Date.now`. */
  readonly clock?: () => number;
  /** An iterator older than this fails with `ExpiredIteratorException`. Default 300000 (Kinesis). */
  readonly iteratorTtlMs?: number;
  /** Name the children at the end of a closed shard (Kinesis and kinesis-local do, kinesalite does not). Default `true`. */
  readonly reportChildShards?: boolean;
  /** Answer every call after this long on `scheduler` instead of synchronously. */
  readonly latencyMs?: number;
  /** The scheduler `latencyMs` runs on (a virtual-time one in tests); required with `latencyMs`. */
  readonly scheduler?: SchedulerLike;
  /**
   * The largest record the stream takes, payload and partition key together, in KiB: 1024 (Kinesis's
   * default) to 10240 (`UpdateMaxRecordSize`). A larger put fails with `InvalidArgumentException`. Default 1024.
   */
  readonly maxRecordSizeKiB?: number;
  /**
   * How long a record is kept: older ones are trimmed, and a start behind the trim horizon answers
   * as Kinesis does (docs/data-loss.md): the iterator is positioned at the oldest record kept, no
   * error. Default 86400000 (24 hours, Kinesis's default retention).
   */
  readonly retentionMs?: number;
  /**
   * Each shard's read budget, in payload bytes per second (Kinesis: 2 MiB/s): a GetRecords sent
   * before the pages already read are paid for fails with `ProvisionedThroughputExceededException`.
   * Default: no limit.
   */
  readonly readBytesPerSecond?: number;
}

/** A record to put. */
export interface MemoryRecordInput {
  /** Decides the shard by its MD5 hash, as in Kinesis, unless `explicitHashKey` is given. */
  readonly partitionKey: string;
  /** The payload; a string is encoded as UTF-8. */
  readonly data: Uint8Array | string;
  /** A decimal hash key that picks the shard directly. */
  readonly explicitHashKey?: string;
}

/** Where a put record landed. */
export interface MemoryPutResult {
  /** The shard the record went to. */
  readonly shardId: string;
  /** The sequence number it was given (decimal, growing across the stream). */
  readonly sequenceNumber: string;
}

interface Fault {
  remaining: number;
  readonly error: unknown;
}

interface DecodedIterator {
  readonly shard: MemoryShard;
  readonly position: number;
  readonly issuedAtMs: number;
}

const MAX_HASH_KEY = 2n ** 128n - 1n;
const encoder = new TextEncoder();

export { awsError };

/** A Kinesis stream in memory: put, split, merge, iterators, GetRecords, faults. */
export class MemoryStream implements StreamPort {
  readonly streamLabel: string;
  /** Calls per operation, faults included. */
  readonly calls: Record<StreamOperation, number> = { getShardIterator: 0, getRecords: 0, listShards: 0, describeSummary: 0 };
  /** Enhanced fan-out: set a `MemoryFanOut` of this stream here to read it with `readMode: 'fan-out'`. */
  fanOut?: FanOutPort;

  private readonly shards: MemoryShard[] = [];
  private readonly clock: () => number;
  private readonly iteratorTtlMs: number;
  private readonly reportChildShards: boolean;
  private readonly latencyMs: number;
  private readonly scheduler: SchedulerLike | undefined;
  private readonly faults: Record<StreamOperation, Fault[]> = { getShardIterator: [], getRecords: [], listShards: [], describeSummary: [] };
  private maxRecordSizeKiB: number;
  private readonly retentionMs: number;
  /** Each shard's read budget (the `readBytesPerSecond` option): `Infinity` unless given. */
  readonly readBytesPerSecond: number;
  private readonly listeners = new Set<(call: StreamCall) => void>();
  private counter = 0;
  private deleted = false;

  constructor(options: MemoryStreamOptions = {}) {
    this.streamLabel = options.streamName ?? 'memory-stream';
    this.clock = options.clock ?? Date.now;
    this.iteratorTtlMs = options.iteratorTtlMs ?? 300_000;
    this.reportChildShards = options.reportChildShards ?? true;
    this.latencyMs = options.latencyMs ?? 0;
    this.scheduler = options.scheduler;
    this.maxRecordSizeKiB = options.maxRecordSizeKiB ?? DEFAULT_MAX_RECORD_SIZE_KIB;
    this.retentionMs = options.retentionMs ?? 86_400_000;
    this.readBytesPerSecond = options.readBytesPerSecond ?? Number.POSITIVE_INFINITY;
    if (this.latencyMs > 0 && this.scheduler === undefined) throw new Error('MemoryStream: latencyMs needs a scheduler');
    const count = options.shardCount ?? 1;
    const width = (MAX_HASH_KEY + 1n) / BigInt(count);
    for (let i = 0; i < count; i += 1) {
      const start = width * BigInt(i);
      this.addShard([], start, i === count - 1 ? MAX_HASH_KEY : start + width - 1n);
    }
  }

  // ------------------------------------------------------------------ writing and resharding

  /** Puts records in order, each to the open shard owning its hash key (or to `shardId`). */
  putRecords(records: readonly MemoryRecordInput[], options: { readonly shardId?: string } = {}): MemoryPutResult[] {
    this.checkExists();
    const open = this.shards.filter((s) => s.open);
    const fixed = options.shardId === undefined ? (open.length === 1 ? open[0] : undefined) : this.openShard(options.shardId);
    const results: MemoryPutResult[] = new Array<MemoryPutResult>(records.length);
    const arrival = this.clock();
    const maxBytes = this.maxRecordSizeKiB * 1024;
    const inputs = records.map((input) => ({ ...input, data: typeof input.data === 'string' ? encoder.encode(input.data) : input.data }));
    for (const { data, partitionKey } of inputs) {
      const size = data.byteLength + encoder.encode(partitionKey).byteLength;
      if (size > maxBytes) throw awsError('InvalidArgumentException', { message: `Record size ${size} exceeds the stream's MaxRecordSizeInKiB of ${this.maxRecordSizeKiB}` });
    }
    for (let i = 0; i < inputs.length; i += 1) {
      const input = inputs[i] as MemoryRecordInput & { readonly data: Uint8Array };
      const shard = fixed ?? this.route(open, input);
      const sequenceNumber = this.nextSequenceNumber(shard);
      shard.records.push({
        sequenceNumber,
        partitionKey: input.partitionKey,
        data: input.data,
        approximateArrivalTimestamp: new Date(arrival),
      });
      results[i] = { shardId: shard.id, sequenceNumber };
    }
    return results;
  }

  /** Puts one record. */
  putRecord(partitionKey: string, data: Uint8Array | string, explicitHashKey?: string): MemoryPutResult {
    const [result] = this.putRecords([explicitHashKey === undefined ? { partitionKey, data } : { partitionKey, data, explicitHashKey }]);
    return result as MemoryPutResult;
  }

  /** Closes an open shard and opens two children splitting its hash key range; returns their ids. */
  split(shardId: string, newStartingHashKey?: bigint): [string, string] {
    const parent = this.openShard(shardId);
    const middle = newStartingHashKey ?? (parent.startingHashKey + parent.endingHashKey) / 2n + 1n;
    if (middle <= parent.startingHashKey || middle > parent.endingHashKey) throw new Error(`hash key ${middle} does not split ${shardId}`);
    this.close(parent);
    const low = this.addShard([parent.id], parent.startingHashKey, middle - 1n);
    const high = this.addShard([parent.id], middle, parent.endingHashKey);
    parent.children = [low.id, high.id];
    return [low.id, high.id];
  }

  /** Closes two open shards with adjacent hash key ranges and opens their child; returns its id. */
  merge(shardId: string, adjacentShardId: string): string {
    const [a, b] = [this.openShard(shardId), this.openShard(adjacentShardId)];
    const [low, high] = a.startingHashKey < b.startingHashKey ? [a, b] : [b, a];
    if (low.endingHashKey + 1n !== high.startingHashKey) throw new Error(`${shardId} and ${adjacentShardId} are not adjacent`);
    this.close(a);
    this.close(b);
    const child = this.addShard([a.id, b.id], low.startingHashKey, high.endingHashKey);
    a.children = [child.id];
    b.children = [child.id];
    return child.id;
  }

  /** UpdateMaxRecordSize: the stream takes records up to `maxRecordSizeKiB` (1024 to 10240) from now on. */
  updateMaxRecordSize(maxRecordSizeKiB: number): void {
    if (!Number.isInteger(maxRecordSizeKiB) || maxRecordSizeKiB < 1024 || maxRecordSizeKiB > 10240) {
      throw awsError('InvalidArgumentException', { message: 'MaxRecordSizeInKiB must be between 1024 and 10240' });
    }
    this.maxRecordSizeKiB = maxRecordSizeKiB;
  }

  /** From now on every call fails with `StreamNotFoundError`, as for a deleted stream. */
  delete(): void {
    this.deleted = true;
  }

  // ------------------------------------------------------------------ inspection and faults

  /** Ids of every shard, open and closed, in creation order. */
  shardIds(): string[] {
    return this.shards.map((s) => s.id);
  }

  /** Ids of the open shards, in creation order. */
  openShardIds(): string[] {
    return this.shards.filter((s) => s.open).map((s) => s.id);
  }

  /** The records put to a shard, oldest first (trimmed ones too). */
  records(shardId: string): readonly RawRecord[] {
    return this.shard(shardId).records;
  }

  /**
   * Where an iterator (or a subscription) from `start` would begin: an index into
   * {@link records}. Throws as GetShardIterator does (unknown shard, bad sequence number, a
   * timestamp in the future).
   */
  positionOf(shardId: string, start: IteratorStart): number {
    this.checkExists();
    return this.startIndex(this.shard(shardId), start);
  }

  /**
   * The sequence number after which the record at `position` comes: the one before it, or for
   * `position` 0 a number below every record of the shard (what a ContinuationSequenceNumber
   * names before the first record).
   */
  sequenceBefore(shardId: string, position: number): string {
    const shard = this.shard(shardId);
    const previous = shard.records[position - 1];
    if (previous !== undefined) return previous.sequenceNumber;
    return sequenceNumberOf(0, shard.index);
  }

  /** `undefined` while the shard is open; once closed, its children. */
  closedWith(shardId: string): readonly string[] | undefined {
    const shard = this.shard(shardId);
    return shard.open ? undefined : shard.children;
  }

  /** The next `count` calls of `operation` fail with `error` (a value, or a function making a fresh one). */
  failNext(operation: StreamOperation, count: number, error: unknown): void {
    this.faults[operation].push({ remaining: count, error });
  }

  /** Calls `listener` on every call; returns a function that stops it. */
  onCall(listener: (call: StreamCall) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // ------------------------------------------------------------------ StreamPort

  /** `streamTime` is the stream's clock when the iterator was positioned (exact: no header to round). */
  getShardIterator(shardId: string, start: IteratorStart): Observable<IssuedIterator> {
    return this.answer({ operation: 'getShardIterator', atMs: this.clock(), shardId, start }, () => {
      const shard = this.shard(shardId);
      return { shardIterator: this.encodeIterator(shard, this.startIndex(shard, start)), streamTime: new Date(this.clock()) };
    });
  }

  getRecords(shardIterator: string, limit: number): Observable<RecordsPage> {
    return this.answer({ operation: 'getRecords', atMs: this.clock(), limit }, () => this.page(shardIterator, limit));
  }

  /** What DescribeStreamSummary says of the stream's retention and largest record. */
  describeSummary(): Observable<StreamLimits> {
    return this.answer({ operation: 'describeSummary', atMs: this.clock() }, () => ({
      retentionPeriodHours: this.retentionMs / 3_600_000,
      maxRecordSizeKiB: this.maxRecordSizeKiB,
    }));
  }

  listShards(): Observable<ShardInfo[]> {
    return this.answer({ operation: 'listShards', atMs: this.clock() }, () => this.shards.map((s) => ({
      shardId: s.id,
      parentShardIds: s.parentShardIds,
      open: s.open,
      startingHashKey: s.startingHashKey.toString(),
      endingHashKey: s.endingHashKey.toString(),
    })));
  }

  // ------------------------------------------------------------------ internals

  private answer<T>(call: StreamCall, compute: () => T): Observable<T> {
    return defer(() => {
      this.calls[call.operation] += 1;
      for (const listener of this.listeners) listener(call);
      let outcome: { ok: true; value: T } | { ok: false; error: unknown };
      try {
        this.injectFault(call.operation);
        this.checkExists();
        outcome = { ok: true, value: compute() };
      } catch (error) {
        outcome = { ok: false, error };
      }
      const reply = outcome.ok ? of(outcome.value) : throwError(() => (outcome as { error: unknown }).error);
      return this.latencyMs > 0 ? timer(this.latencyMs, this.scheduler).pipe(mergeMap(() => reply)) : reply;
    });
  }

  private injectFault(operation: StreamOperation): void {
    const queue = this.faults[operation];
    const fault = queue[0];
    if (fault === undefined) return;
    fault.remaining -= 1;
    if (fault.remaining <= 0) queue.shift();
    throw typeof fault.error === 'function' ? (fault.error as () => unknown)() : fault.error;
  }

  private checkExists(): void {
    if (this.deleted) throw new StreamNotFoundError(this.streamLabel, { cause: awsError('ResourceNotFoundException', { message: `Stream ${this.streamLabel} not found` }) });
  }

  private page(shardIterator: string, limit: number): RecordsPage {
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw awsError('InvalidArgumentException', { message: `Limit ${limit} is not in 1..10000` });
    const { shard, position: issuedAt, issuedAtMs } = this.decodeIterator(shardIterator);
    const now = this.clock();
    if (now - issuedAtMs > this.iteratorTtlMs) throw awsError('ExpiredIteratorException', { message: `Iterator expired: issued at ${issuedAtMs}, now ${now}` });
    if (now < shard.readReadyAtMs) throw awsError('ProvisionedThroughputExceededException', { message: `Rate exceeded for shard ${shard.id}` });
    // What retention trimmed under the iterator is passed over: reading goes on at the oldest record kept.
    const position = Math.max(issuedAt, trimHorizon(shard, now, this.retentionMs));
    const records = pageOf(shard.records, position, limit);
    const bytes = records.reduce((sum, record) => sum + payloadBytes(record), 0);
    shard.readReadyAtMs = Math.max(shard.readReadyAtMs, now) + (bytes * 1000) / this.readBytesPerSecond;
    const next = position + records.length;
    const unread = shard.records[next];
    const millisBehindLatest = unread === undefined ? 0 : Math.max(1, now - unread.approximateArrivalTimestamp.getTime());
    // The stream's clock, as a Date header would tell it (exact here: no header to round).
    const streamTime = new Date(now);
    if (!shard.open && unread === undefined) {
      return { records, nextShardIterator: undefined, millisBehindLatest, childShardIds: this.reportChildShards ? shard.children : undefined, streamTime };
    }
    return { records, nextShardIterator: this.encodeIterator(shard, next), millisBehindLatest, childShardIds: undefined, streamTime };
  }

  // A start behind the trim horizon is positioned at the oldest record kept, without an error (what
  // Kinesis documents for AT_TIMESTAMP, and what its users report for sequence numbers: docs/data-loss.md).
  private startIndex(shard: MemoryShard, start: IteratorStart): number {
    return Math.max(this.startIndexInAll(shard, start), trimHorizon(shard, this.clock(), this.retentionMs));
  }

  private startIndexInAll(shard: MemoryShard, start: IteratorStart): number {
    const { records } = shard;
    switch (start.type) {
      case 'TRIM_HORIZON': return 0;
      case 'LATEST': return records.length;
      case 'AT_TIMESTAMP': {
        const at = start.timestamp.getTime();
        if (at > this.clock()) throw awsError('InvalidArgumentException', { message: 'The timestamp cannot be in the future' });
        return firstIndex(records.length, (i) => (records[i] as RawRecord).approximateArrivalTimestamp.getTime() >= at);
      }
      case 'AT_SEQUENCE_NUMBER':
      case 'AFTER_SEQUENCE_NUMBER': {
        const wanted = this.sequenceOf(shard, start.sequenceNumber);
        const after = start.type === 'AFTER_SEQUENCE_NUMBER';
        return firstIndex(records.length, (i) => {
          const sequence = BigInt((records[i] as RawRecord).sequenceNumber);
          return after ? sequence > wanted : sequence >= wanted;
        });
      }
    }
  }

  private sequenceOf(shard: MemoryShard, sequenceNumber: string): bigint {
    const sequence = sequenceInShard(sequenceNumber, shard.index);
    if (sequence === undefined) {
      throw awsError('InvalidArgumentException', { message: `Invalid StartingSequenceNumber ${sequenceNumber} for ${shard.id}` });
    }
    return sequence;
  }

  private encodeIterator(shard: MemoryShard, position: number): string {
    return Buffer.from(`${this.streamLabel}/${shard.index}/${position}/${this.clock()}`).toString('base64');
  }

  private decodeIterator(shardIterator: string): DecodedIterator {
    const [stream, index, position, issuedAt] = Buffer.from(shardIterator, 'base64').toString('utf8').split('/');
    const shard = this.shards[Number(index)];
    if (stream !== this.streamLabel || shard === undefined || !/^\d+$/.test(position ?? '') || !/^\d+$/.test(issuedAt ?? '')) {
      throw awsError('InvalidArgumentException', { message: 'Invalid ShardIterator.' });
    }
    return { shard, position: Number(position), issuedAtMs: Number(issuedAt) };
  }

  private nextSequenceNumber(shard: MemoryShard): string {
    this.counter += 1;
    return sequenceNumberOf(this.counter, shard.index);
  }

  private route(open: readonly MemoryShard[], input: MemoryRecordInput): MemoryShard {
    const hashKey = input.explicitHashKey === undefined
      ? BigInt(`0x${createHash('md5').update(input.partitionKey).digest('hex')}`)
      : BigInt(input.explicitHashKey);
    const shard = open.find((s) => s.startingHashKey <= hashKey && hashKey <= s.endingHashKey);
    if (shard === undefined) throw awsError('InvalidArgumentException', { message: `no open shard owns hash key ${hashKey}` });
    return shard;
  }

  private addShard(parentShardIds: readonly string[], startingHashKey: bigint, endingHashKey: bigint): MemoryShard {
    const index = this.shards.length;
    if (index >= SHARD_SLOTS) throw new Error(`MemoryStream holds at most ${SHARD_SLOTS} shards`);
    const shard: MemoryShard = {
      id: `shardId-${String(index).padStart(12, '0')}`,
      index, parentShardIds, startingHashKey, endingHashKey, records: [], open: true, children: [], trimmed: 0, readReadyAtMs: 0,
    };
    this.shards.push(shard);
    return shard;
  }

  private close(shard: MemoryShard): void {
    shard.open = false;
  }

  private shard(shardId: string): MemoryShard {
    const shard = this.shards.find((s) => s.id === shardId);
    if (shard === undefined) throw awsError('ResourceNotFoundException', { message: `Shard ${shardId} in stream ${this.streamLabel} does not exist` });
    return shard;
  }

  private openShard(shardId: string): MemoryShard {
    const shard = this.shard(shardId);
    if (!shard.open) throw awsError('ResourceInUseException', { message: `Shard ${shardId} is closed` });
    return shard;
  }
}
