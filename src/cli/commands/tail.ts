// `kinsumer tail`: prints a stream's records as they arrive. Read-only: it takes no leases and
// never touches DynamoDB, so it can watch a stream that a consumer group is reading. Each shard
// is read by the library's own shard reader with a tracker that acks at once (nothing to
// checkpoint), so tail gets its KPL deaggregation, call spacing, retries and iterator refresh.
import {
  EMPTY, NEVER, type Observable, asyncScheduler, defer, exhaustMap, fromEvent, mergeMap, of, take, takeUntil, tap, timer,
} from 'rxjs';
import { retryTransient } from '../../errors/retry-backoff.js';
import { KinesisStream } from '../../kinesis/kinesis.js';
import { DEFAULTS } from '../../options.js';
import type { ShardTracker } from '../../ports/shard-tracker.js';
import type { IteratorStart, ShardInfo, StreamPort } from '../../ports/stream.js';
import { readShard } from '../../reading/shard-reader.js';
import type { KinsumerEvent, KinsumerRecord } from '../../types.js';
import { clientSettings, kinesisClient } from '../clients.js';
import { EXIT, UsageError, type Command, type CliIo } from '../command.js';
import { integerOption, listOption, parseTimestamp, streamOption, textOption } from '../common-options.js';
import { dataText, shortSequence } from '../format.js';
import { outputWidth } from '../wrap.js';

/** Records asked for per GetRecords: nothing waits for acks here, so only the page size matters. */
const RECORDS_PER_CALL = 1000;
/** How often the shard list is read again, to follow splits and merges. */
const DEFAULT_REFRESH_MS = 10_000;

/** Nothing to checkpoint: every record counts as acked at once, and the end of a shard needs no wait. */
const NO_TRACKING: ShardTracker = {
  track: () => 0,
  ack: () => undefined,
  inFlight: () => 0,
  pending: () => 0,
  acks$: NEVER,
  finish: () => EMPTY,
};

/** `--from`: `LATEST`, `TRIM_HORIZON` or an ISO 8601 timestamp. */
export function parseTailStart(text: string | undefined): IteratorStart {
  if (text === undefined || text === 'LATEST') return { type: 'LATEST' };
  if (text === 'TRIM_HORIZON') return { type: 'TRIM_HORIZON' };
  const timestamp = parseTimestamp(text, 'from');
  if (timestamp === undefined) throw new UsageError(`--from must be LATEST, TRIM_HORIZON or an ISO 8601 timestamp (2026-01-31T12:00:00Z), not '${text}'`);
  return { type: 'AT_TIMESTAMP', timestamp };
}

/**
 * Which shards to read and from where. At the start: the open shards (from LATEST nothing
 * else can arrive), or every shard (from TRIM_HORIZON or a timestamp). Shards that appear
 * later (children of a split or merge) are read from their beginning.
 */
export function shardsToRead(listed: readonly ShardInfo[], seen: ReadonlySet<string>, first: boolean, start: IteratorStart, only: readonly string[] | undefined): { shardId: string; start: IteratorStart }[] {
  return listed
    .filter((shard) => !seen.has(shard.shardId) && (only === undefined || only.includes(shard.shardId)))
    .filter((shard) => !first || start.type !== 'LATEST' || shard.open)
    .map((shard) => ({ shardId: shard.shardId, start: first ? start : { type: 'TRIM_HORIZON' } }));
}

/** What tail prints of a record. */
export type PrintedRecord = Omit<KinsumerRecord, 'ack' | 'text' | 'json' | 'id' | 'fencingToken' | 'streamName'>;

/**
 * One record as a line of text or of JSON. Text is tab-separated and whole (for a pipe), or, with
 * `width` (a terminal), the sequence number shortened as `status` shows it and the line cut at the
 * width: a 56-digit sequence number alone makes every record wrap at 80 columns.
 */
export function recordLine(record: PrintedRecord, json: boolean, width?: number): string {
  const data = dataText(record.data);
  const sub = record.subSequenceNumber === undefined ? '' : `/${record.subSequenceNumber}`;
  const text = data.encoding === 'utf8' ? data.text : `base64:${data.text}`;
  if (!json && width !== undefined) {
    const line = `${record.shardId}  ${shortSequence(record.sequenceNumber)}${sub}  ${record.partitionKey}  ${text.replaceAll('\t', ' ')}`;
    return `${line.length > width ? `${line.slice(0, width - 1)}…` : line}\n`;
  }
  if (!json) return `${record.shardId}\t${record.sequenceNumber}${sub}\t${record.partitionKey}\t${text}\n`;
  return `${JSON.stringify({
    shardId: record.shardId,
    sequenceNumber: record.sequenceNumber,
    ...(record.subSequenceNumber === undefined ? {} : { subSequenceNumber: record.subSequenceNumber }),
    partitionKey: record.partitionKey,
    ...(record.explicitHashKey === undefined ? {} : { explicitHashKey: record.explicitHashKey }),
    approximateArrivalTimestamp: record.approximateArrivalTimestamp.toISOString(),
    encoding: data.encoding,
    data: data.text,
  })}\n`;
}

/** Options of {@link tailRecords$}. */
export interface TailOptions {
  readonly stream: StreamPort;
  readonly start: IteratorStart;
  readonly only: readonly string[] | undefined;
  readonly refreshMs: number;
  /** Called once a shard's first iterator is issued: from then on its new records are seen. */
  readonly onReading: (shardId: string, start: IteratorStart) => void;
  readonly emit: (event: KinsumerEvent) => void;
}

/** Every record of the stream's shards from `start` on, merged, as the shards are discovered. */
export function tailRecords$(options: TailOptions): Observable<KinsumerRecord> {
  const { stream, start, only, refreshMs, onReading, emit } = options;
  const seen = new Set<string>();
  let first = true;
  return timer(0, refreshMs, asyncScheduler).pipe(
    // The first listing fails fast (a wrong stream or endpoint is exit 1); a refresh rides out
    // transient faults, as the shard readers do.
    exhaustMap((tick) => (tick === 0
      ? stream.listShards()
      : stream.listShards().pipe(retryTransient({ operation: 'ListShards', scheduler: asyncScheduler, emit })))),
    mergeMap((listed) => {
      const unknown = first ? (only ?? []).filter((id) => !listed.some((shard) => shard.shardId === id)) : [];
      if (unknown.length > 0) throw new UsageError(`not a shard of stream ${stream.streamLabel}: ${unknown.join(', ')}`);
      const next = shardsToRead(listed, seen, first, start, only);
      first = false;
      for (const { shardId } of next) seen.add(shardId);
      return of(...next);
    }),
    mergeMap(({ shardId, start: shardStart }) => {
      let announced = false;
      const announcing: StreamPort = {
        streamLabel: stream.streamLabel,
        listShards: () => stream.listShards(),
        getRecords: (iterator, limit) => stream.getRecords(iterator, limit),
        getShardIterator: (id, at) => stream.getShardIterator(id, at).pipe(tap(() => {
          if (!announced) onReading(id, at);
          announced = true;
        })),
      };
      return readShard({
        shardId, stream: announcing, tracker: NO_TRACKING, start: shardStart, scheduler: asyncScheduler, emit,
        throttleDelayMs: DEFAULTS.throttleDelayMs, maxInFlightRecords: RECORDS_PER_CALL,
      });
    }),
  );
}

function startText(start: IteratorStart): string {
  return start.type === 'AT_TIMESTAMP' ? start.timestamp.toISOString() : start.type;
}

function aborted$(signal: AbortSignal): Observable<unknown> {
  return defer(() => (signal.aborted ? of(true) : fromEvent(signal, 'abort')));
}

export const tailCommand: Command = {
  name: 'tail',
  summary: 'print the stream\'s records as they arrive (read-only: takes no leases, writes nothing)',
  usage: 'kinsumer tail --stream <name|arn> [--from LATEST|TRIM_HORIZON|<ISO timestamp>] [--shard <id>[,<id>...]] [--limit N] [--json] [--wide]',
  options: {
    from: { type: 'string' },
    shard: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
    wide: { type: 'boolean' },
    'refresh-ms': { type: 'string' },
  },
  optionHelp: {
    from: 'where to start: LATEST (default), TRIM_HORIZON or an ISO 8601 timestamp',
    shard: 'only these shards (comma-separated)',
    limit: 'exit after this many records',
    json: 'one JSON object per record instead of tab-separated shard, sequence, partition key, data',
    wide: 'in a terminal too, every record whole and tab-separated (by default a terminal gets one line per record, cut at its width, sequence numbers shortened; a pipe gets them whole)',
    'refresh-ms': `how often the shard list is read again to follow reshards (default ${DEFAULT_REFRESH_MS})`,
  },
  commonOptions: ['stream', 'region', 'endpoint', 'kinesis-endpoint', 'profile'],
  exitCodes: {
    [EXIT.ok]: 'stopped: --limit records printed, Ctrl-C or SIGTERM, or the reader closed the pipe',
    [EXIT.failure]: 'the stream was not found, or Kinesis failed or could not be reached',
    [EXIT.usage]: 'bad command line',
  },
  required: ['stream'],
  async run(values, io) {
    const stream = streamOption(values);
    const start = parseTailStart(textOption(values, 'from'));
    const only = listOption(values, 'shard');
    const limit = values.limit === undefined ? undefined : integerOption(values, 'limit', 1);
    const refreshMs = integerOption(values, 'refresh-ms', DEFAULT_REFRESH_MS);
    const json = values.json === true;
    const width = io.stdout.isTTY === true && values.wide !== true ? outputWidth(io.stdout) : undefined;
    const kinesis = kinesisClient(clientSettings(values));
    try {
      await tail(io, tailRecords$({
        stream: new KinesisStream(kinesis, stream), start, only, refreshMs,
        // On stderr: stdout holds records only, so it can be piped.
        onReading: (shardId, at) => io.stderr.write(`reading ${shardId} from ${startText(at)}\n`),
        emit: (event) => {
          if (event.type === 'retrying') io.stderr.write(`retrying ${event.operation}${event.shardId === undefined ? '' : ` on ${event.shardId}`} in ${event.delayMs} ms: ${event.error.name}\n`);
          if (event.type === 'record-undecodable') io.stderr.write(`${event.shardId} ${event.sequenceNumber}: KPL aggregate did not decode (${event.error.message}); printed raw\n`);
        },
      }).pipe(
        limit === undefined ? (source) => source : take(limit),
        takeUntil(aborted$(io.signal)),
      ), json, width);
      return EXIT.ok;
    } finally {
      kinesis.destroy();
    }
  },
};

function tail(io: CliIo, records$: Observable<KinsumerRecord>, json: boolean, width: number | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    records$.subscribe({
      next: (record) => io.stdout.write(recordLine(record, json, width)),
      error: reject,
      complete: resolve,
    });
  });
}
