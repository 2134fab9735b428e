// `readMode` in one place: which reader a lease reads with, and what a client must do before its
// first read (register the stream consumer, for fan-out).
import { type Observable, firstValueFrom, throwError } from 'rxjs';
import { ConfigError } from '../errors/kinsumer-errors.js';
import type { ResolvedOptions } from '../options.js';
import type { FanOutPort, StreamPort } from '../ports/stream.js';
import type { KinsumerEvent, KinsumerRecord } from '../types.js';
import { readFanOut } from './fan-out-reader.js';
import { type ReadShardOptions, readShard } from './shard-reader.js';
import { consumerArn } from './stream-consumer.js';

/** A shard reader: polling's options in, the shard's records out. */
export type ShardReader = (options: ReadShardOptions) => Observable<KinsumerRecord>;

type ModeOptions = Pick<ResolvedOptions, 'readMode' | 'consumerName' | 'scheduler'>;

/** The reader of the configured `readMode`: `readShard` (GetRecords) or `readFanOut` (SubscribeToShard). */
export function readerFor(options: ModeOptions, stream: StreamPort): ShardReader {
  if (options.readMode === 'polling') return readShard;
  const { fanOut } = stream;
  if (fanOut === undefined) return () => throwError(() => noFanOut());
  return (read) => readFanOut({
    ...read,
    fanOut,
    consumerArn$: consumerArn({ port: fanOut, consumerName: options.consumerName, scheduler: read.scheduler, emit: read.emit }),
  });
}

/**
 * Before the first capture: in fan-out mode, finds or registers the stream consumer and waits
 * until it is ACTIVE (leases then get its ARN at once). Nothing to do when polling.
 */
export async function prepareReadMode(options: ModeOptions, stream: StreamPort, emit: (event: KinsumerEvent) => void): Promise<void> {
  if (options.readMode === 'polling') return;
  const fanOut: FanOutPort | undefined = stream.fanOut;
  if (fanOut === undefined) throw noFanOut();
  await firstValueFrom(consumerArn({ port: fanOut, consumerName: options.consumerName, scheduler: options.scheduler, emit }));
}

function noFanOut(): ConfigError {
  return new ConfigError('readMode', "'fan-out' needs a stream adapter with enhanced fan-out (this one has none)");
}
