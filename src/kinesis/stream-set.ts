// Several streams behind the one StreamPort the core reads (design §9.2): the core sees one stream
// whose shard ids are keys `<account>:<stream>:<creationEpoch>:<shardId>` (ports/stream-key.ts),
// and coordinates them as it coordinates any shard. This adapter lists every stream of the group's
// `streams`, names each stream by its identity (its ARN's account, its name, its creation time),
// keys its shards, and routes every call by key to the stream it names — and to no other: a stream
// deleted and created again under the same name is another identity, whose shards have other keys.
//
// What it costs: ListShards of every stream at each listing (the leader's, every
// leaderActionFrequencyMs), DescribeStreamSummary of every stream every streamCheckFrequencyMs (and
// of a stream at once after it answered "not found", until it is found again).
import {
  type Observable, type SchedulerLike, EMPTY, catchError, concatMap, defer, finalize, from, map, mergeMap, of, shareReplay,
  switchMap, tap, throwError, toArray,
} from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { KinsumerError, StreamGoneError, StreamNotFoundError } from '../errors/kinsumer-errors.js';
import type { StreamList } from '../options.js';
import {
  type StreamIdentity, accountOfArn, checkStreamList, nameOf, names, parseShardKey, parseStreamIdentifier, shardKey, streamIdentity,
} from '../ports/stream-key.js';
import type {
  FanOutPort, IssuedIterator, IteratorStart, RecordsPage, ShardEventPull, ShardInfo, StreamConsumerInfo, StreamPort,
} from '../ports/stream.js';
import { consumerArn } from '../reading/stream-consumer.js';
import type { KinsumerEvent, Logger } from '../types.js';

/** One listed stream as the set reaches it: by the name or ARN it was listed by. */
export interface StreamSource {
  /** Calls naming the stream as listed; "not found" is `StreamNotFoundError`, or an AWS not-found error. */
  readonly port: StreamPort;
  /** What DescribeStreamSummary says of the stream now (`status`: `CREATING`, `ACTIVE`, ...); "not found" as the port's. */
  identify(): Observable<{ readonly streamArn: string; readonly createdAt: Date; readonly status: string }>;
}

/** Options of {@link StreamSet}. */
export interface StreamSetOptions {
  /** The group's `streams` option. */
  readonly streams: StreamList;
  /** Reaches a listed stream (called once per name or ARN). */
  readonly open: (nameOrArn: string) => StreamSource;
  /** See `streamCheckFrequencyMs`. */
  readonly streamCheckFrequencyMs: number;
  /** The monotonic clock. */
  readonly elapsedNow: () => number;
  /** Where changes of the streams read are said (a stream added, dropped, not found, created again). */
  readonly logger: Logger;
  /** For fan-out: each stream's consumer is found or registered at its first subscription. */
  readonly scheduler: SchedulerLike;
  readonly emit: (event: KinsumerEvent) => void;
  /** Streams described or listed at once. Default 8. */
  readonly concurrency?: number;
}

/** A stream of the set under one identity. */
export interface SetMember {
  readonly entry: string;
  readonly source: StreamSource;
  readonly identity: StreamIdentity;
  /**
   * A call answered "not found", or the stream was being created or deleted: its identity is
   * confirmed before it is used again (and its shards listed only once it is neither).
   */
  stale: boolean;
  /** `CREATING` or `DELETING` when last identified: it has no shards to read yet, or any more. */
  changing: boolean;
  /** Not read any more: not found, or superseded by a new stream of its name. */
  gone: boolean;
  /** Its fan-out, as a port of its own: a consumer registration belongs to one stream, not to its name. */
  consumers?: FanOutPort;
}

/** What the set knows of a listed name: its stream, `null` when it was not found. */
type Known = SetMember | null;

/** A stream set's iterator: the identity, then the stream's own iterator (which may hold anything). */
const ITERATOR = /^(\d+:[A-Za-z0-9_.-]{1,128}:\d{1,20}):(.*)$/s;

/** The group's streams as one {@link StreamPort} whose shard ids are keys. */
export class StreamSet implements StreamPort {
  readonly streamLabel: string;
  readonly fanOut?: FanOutPort;
  private readonly sources = new Map<string, StreamSource>();
  private readonly known = new Map<string, Known>();
  private readonly byIdentity = new Map<string, SetMember>();
  private readonly identifying = new Map<string, Observable<Known>>();
  private listed: readonly string[] | undefined;
  private listedAtMs = Number.NEGATIVE_INFINITY;
  private readonly concurrency: number;

  constructor(private readonly options: StreamSetOptions) {
    this.streamLabel = typeof options.streams === 'function' ? 'streams' : `streams ${options.streams.join(', ')}`;
    this.concurrency = options.concurrency ?? 8;
    this.fanOut = new StreamSetFanOut(this, options);
  }

  /**
   * Every shard of every listed stream, keyed. A stream not found has no shards (it is not read;
   * its rows are kept); the list (and which stream each name is) is checked again every
   * `streamCheckFrequencyMs`.
   */
  listShards(): Observable<ShardInfo[]> {
    return defer(() => {
      const startedAtMs = this.options.elapsedNow();
      const check = this.listed === undefined || startedAtMs - this.listedAtMs >= this.options.streamCheckFrequencyMs;
      return (check ? this.askList() : of(this.listed ?? [])).pipe(
        concatMap((entries) => from(entries).pipe(
          mergeMap((entry) => this.shardsOf(entry, check), this.concurrency),
          toArray(),
          map((perStream) => {
            // In list order; a stream listed twice (by name and by ARN) once.
            const byKey = new Map<string, ShardInfo>();
            for (const entry of entries) for (const shard of perStream.find((s) => s.entry === entry)?.shards ?? []) if (!byKey.has(shard.shardId)) byKey.set(shard.shardId, shard);
            return [...byKey.values()];
          }),
        )),
        tap(() => { if (check) this.listedAtMs = startedAtMs; }),
      );
    });
  }

  getShardIterator(shardId: string, start: IteratorStart): Observable<IssuedIterator> {
    const key = parseShardKey(shardId);
    if (key === undefined) return throwError(() => new KinsumerError(`${shardId} is not a shard key of a group that reads streams`));
    return this.route(key.stream.serialized, shardId, (member) => member.source.port.getShardIterator(key.shardId, start).pipe(
      map((issued) => ({ ...issued, shardIterator: `${member.identity.serialized}:${issued.shardIterator}` })),
    ));
  }

  getRecords(shardIterator: string, limit: number): Observable<RecordsPage> {
    const match = ITERATOR.exec(shardIterator);
    if (match === null) return throwError(() => new KinsumerError('not an iterator of a stream set'));
    const [, serialized = '', iterator = ''] = match;
    return this.route(serialized, serialized, (member) => member.source.port.getRecords(iterator, limit).pipe(map((page) => ({
      ...page,
      nextShardIterator: page.nextShardIterator === undefined ? undefined : `${serialized}:${page.nextShardIterator}`,
      childShardIds: page.childShardIds?.map((child) => shardKey(member.identity, child)),
    }))));
  }

  /**
   * Calls `call` on the stream `serialized` names, when it is still the stream a listed name names
   * (looked up, and confirmed first when a call of it answered "not found"), else fails with
   * `StreamGoneError`; its "not found" answers are that error too (confirmed at its next use).
   */
  route<T>(serialized: string, shardId: string, call: (member: SetMember) => Observable<T>): Observable<T> {
    return this.resolve(serialized).pipe(
      switchMap((member) => {
        if (member === undefined) return throwError(() => new StreamGoneError(parseStreamIdentifier(serialized)?.streamName ?? serialized, shardId));
        return call(member).pipe(catchError((error: unknown) => {
          // A position or an iterator the stream refuses may be another stream's: one created again
          // under the name since. Looked at again before the next use; the error stays the shard's.
          if (MAYBE_ANOTHER_STREAM.has((error as { name?: unknown }).name as string)) member.stale = true;
          if (!notFound(error)) return throwError(() => error);
          member.stale = true;
          return throwError(() => new StreamGoneError(member.entry, shardId, { cause: error }));
        }));
      }),
    );
  }

  /**
   * The member of an identity: known, or found among the listed names that could name it (this
   * process may never have listed: only the leader lists every stream). `undefined` when no listed
   * name names that stream any more.
   */
  private resolve(serialized: string): Observable<SetMember | undefined> {
    return defer(() => {
      const member = this.byIdentity.get(serialized);
      if (member !== undefined && !member.gone) {
        return member.stale ? this.identify(member.entry).pipe(map((known) => (known === member ? member : undefined))) : of(member);
      }
      const wanted = parseStreamIdentifier(serialized);
      if (wanted === undefined) return of(undefined);
      const named = (entries: readonly string[]) => entries.filter((entry) => names(entry, wanted));
      // A stream added since this process asked for the list is asked for again.
      const entries$ = this.listed !== undefined && named(this.listed).length > 0 ? of(this.listed) : this.askList();
      return entries$.pipe(
        concatMap((entries) => from(named(entries)).pipe(concatMap((entry) => this.identify(entry)), toArray())),
        map((found) => found.find((known): known is SetMember => known !== null && known.identity.serialized === serialized)),
      );
    });
  }

  /** The list of now: the option's, or the function's answer (checked; a failed call is a retriable fault). */
  private askList(): Observable<readonly string[]> {
    const { streams } = this.options;
    const asked$ = typeof streams === 'function'
      ? defer(() => from(Promise.resolve().then(streams))).pipe(
        catchError((error: unknown) => throwError(() => new KinsumerError('the streams function failed: the last list stands', { cause: error, retriable: true }))),
        map((answer) => checkStreamList(answer, 'streams (the function\'s answer)', true)),
      )
      : of(streams);
    return asked$.pipe(tap((entries) => this.relist(entries)));
  }

  private relist(entries: readonly string[]): void {
    const now = new Set(entries);
    for (const entry of this.listed ?? []) {
      if (now.has(entry)) continue;
      // Its leases are given up gracefully once the shard list no longer has its shards; meanwhile it is still read.
      const known = this.known.get(entry);
      if (known !== undefined && known !== null) {
        this.options.logger.info({ stream: entry, identity: known.identity.serialized }, `kinsumer: stream ${entry} is no longer listed: it is not read any more; its checkpoint rows are kept`);
      }
      this.known.delete(entry);
    }
    this.listed = entries;
  }

  private shardsOf(entry: string, check: boolean): Observable<{ entry: string; shards: ShardInfo[] }> {
    const known = this.known.get(entry);
    const member$ = check || known === undefined || known === null || known.stale ? this.identify(entry) : of(known);
    return member$.pipe(
      concatMap((member) => (member === null || member.changing ? of([]) : member.source.port.listShards().pipe(
        map((shards) => shards.map((shard) => keyed(member.identity, shard))),
        catchError((error: unknown) => {
          if (!notFound(error)) return throwError(() => error);
          member.stale = true;
          return of([]);
        }),
      ))),
      map((shards) => ({ entry, shards })),
    );
  }

  /** Which stream `entry` names now (one DescribeStreamSummary, shared by concurrent callers). */
  private identify(entry: string): Observable<Known> {
    let shared = this.identifying.get(entry);
    if (shared === undefined) {
      const source = this.source(entry);
      shared = source.identify().pipe(
        map(({ streamArn, createdAt, status }): Known => {
          const known = this.learn(entry, source, streamIdentity(accountOfArn(streamArn) ?? '', nameOf(streamArn), createdAt));
          if (known !== null) {
            known.changing = status === 'CREATING' || status === 'DELETING';
            known.stale = known.changing;
          }
          return known;
        }),
        catchError((error: unknown) => (notFound(error) ? of(this.learn(entry, source, undefined)) : throwError(() => error))),
        finalize(() => this.identifying.delete(entry)),
        shareReplay({ bufferSize: 1, refCount: true }),
      );
      this.identifying.set(entry, shared);
    }
    return shared;
  }

  private learn(entry: string, source: StreamSource, identity: StreamIdentity | undefined): Known {
    const before = this.known.get(entry);
    if (before !== undefined && before !== null && before.identity.serialized === identity?.serialized) {
      before.stale = false;
      return before;
    }
    const { logger } = this.options;
    if (before !== undefined && before !== null) before.gone = true;
    if (identity === undefined) {
      if (before !== null) logger.warn({ stream: entry }, `kinsumer: stream ${entry} not found: it is not read until it exists; its checkpoint rows are kept`);
      this.known.set(entry, null);
      return null;
    }
    const member: SetMember = { entry, source, identity, stale: false, changing: false, gone: false };
    this.known.set(entry, member);
    // A listed name may still be reading this identity under another entry (a name and its ARN).
    const other = this.byIdentity.get(identity.serialized);
    if (other === undefined || other.gone) this.byIdentity.set(identity.serialized, member);
    if (before !== undefined && before !== null) {
      logger.warn({ stream: entry, was: before.identity.serialized, now: identity.serialized },
        `kinsumer: stream ${entry} was deleted and created again: the new stream is read from initialPosition; the old one's checkpoint rows are kept`);
    } else {
      logger.info({ stream: entry, identity: identity.serialized }, `kinsumer: reading stream ${entry}`);
    }
    return member;
  }

  private source(entry: string): StreamSource {
    let source = this.sources.get(entry);
    if (source === undefined) {
      source = this.options.open(entry);
      this.sources.set(entry, source);
    }
    return source;
  }

}

/**
 * Fan-out over the set: each stream has its own registered consumer (consumers belong to a
 * stream), found or registered, and waited for until ACTIVE, at the first subscription to one of
 * its shards, so a stream added at run time gets one too. The consumer "ARN" the core holds is the
 * consumer's name; the set subscribes with each stream's own ARN.
 */
class StreamSetFanOut implements FanOutPort {
  constructor(private readonly set: StreamSet, private readonly options: Pick<StreamSetOptions, 'scheduler' | 'emit'>) {}

  describeConsumer(consumerName: string): Observable<StreamConsumerInfo | undefined> {
    return of({ consumerName, consumerArn: consumerName, status: 'ACTIVE' });
  }

  registerConsumer(consumerName: string): Observable<StreamConsumerInfo> {
    return of({ consumerName, consumerArn: consumerName, status: 'ACTIVE' });
  }

  deregisterConsumer(): Observable<void> {
    return EMPTY;
  }

  subscribeToShard(consumerName: string, shardId: string, start: IteratorStart): Observable<ShardEventPull> {
    const key = parseShardKey(shardId);
    if (key === undefined) return throwError(() => new KinsumerError(`${shardId} is not a shard key of a group that reads streams`));
    return this.set.route(key.stream.serialized, shardId, (member) => {
      const { fanOut } = member.source.port;
      if (fanOut === undefined) return throwError(() => new KinsumerError(`stream ${member.entry} has no enhanced fan-out in this adapter`));
      member.consumers ??= {
        describeConsumer: (name) => fanOut.describeConsumer(name),
        registerConsumer: (name) => fanOut.registerConsumer(name),
        deregisterConsumer: (name) => fanOut.deregisterConsumer(name),
        subscribeToShard: (arn, id, from) => fanOut.subscribeToShard(arn, id, from),
      };
      return consumerArn({ port: member.consumers, consumerName, scheduler: this.options.scheduler, emit: this.options.emit }).pipe(
        switchMap((arn) => fanOut.subscribeToShard(arn, key.shardId, start)),
        map((pull): ShardEventPull => keyedPull(pull, member.identity)),
      );
    });
  }
}

function keyedPull(pull: ShardEventPull, identity: StreamIdentity): ShardEventPull {
  return {
    ...(pull.streamTime === undefined ? {} : { streamTime: pull.streamTime }),
    next: () => pull.next().pipe(map((event) => (event?.childShardIds === undefined ? event : { ...event, childShardIds: event.childShardIds.map((child) => shardKey(identity, child)) }))),
  };
}

function keyed(identity: StreamIdentity, shard: ShardInfo): ShardInfo {
  return { ...shard, shardId: shardKey(identity, shard.shardId), parentShardIds: shard.parentShardIds.map((parent) => shardKey(identity, parent)) };
}

/** Errors a stream created again under its name answers to the old one's positions and iterators. */
const MAYBE_ANOTHER_STREAM: ReadonlySet<string> = new Set(['InvalidArgumentException', 'ExpiredIteratorException']);

function notFound(error: unknown): boolean {
  return error instanceof StreamNotFoundError || classifyAwsError(error) === 'not-found';
}
