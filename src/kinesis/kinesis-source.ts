// A listed stream of a `streams` group on Kinesis: requests name it as the list did (by name, or by
// ARN for another account's), and DescribeStreamSummary tells which stream it is now.
import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { asyncScheduler, map } from 'rxjs';
import { KinsumerError } from '../errors/kinsumer-errors.js';
import type { StreamList } from '../options.js';
import { HOST_CLOCK } from '../ports/clock.js';
import type { ServiceConnections } from '../connections/service-connections.js';
import type { RequestBound } from '../ports/request-timeout.js';
import { KinesisStream } from './kinesis.js';
import { StreamSet, type StreamSetOptions, type StreamSource } from './stream-set.js';

/** The {@link StreamSource} of a listed name or ARN, through the application's client. */
export function kinesisSource(client: KinesisClient, nameOrArn: string, bound: RequestBound | undefined, connections?: ServiceConnections): StreamSource {
  // Every stream of the set shares the client's connections (and their bound on how many).
  const port = new KinesisStream(client, nameOrArn.startsWith('arn:') ? { streamArn: nameOrArn } : { streamName: nameOrArn }, {
    ...(bound === undefined ? {} : { bound }), ...(connections === undefined ? {} : { connections }),
  });
  return {
    port,
    identify: () => port.describeSummary().pipe(map((summary) => {
      // The creation time is half of the stream's identity: without it, a stream created again could not be told from the old one.
      if (summary.creationTimestamp === undefined) throw new KinsumerError(`DescribeStreamSummary of ${nameOrArn} did not say when the stream was created: a group that reads streams needs it`);
      return { streamArn: summary.streamArn, createdAt: summary.creationTimestamp, status: summary.status };
    })),
  };
}

/**
 * A group's `streams` on Kinesis, as the group reads them (the operator tools too: they name each
 * shard by the group's key). Defaults for a one-shot tool: no bound, the host's clock, a silent
 * logger, the list looked at again once a minute.
 */
export function kinesisStreamSet(
  client: KinesisClient, streams: StreamList,
  options: Partial<Omit<StreamSetOptions, 'streams' | 'open'>> & { readonly bound?: RequestBound; readonly connections?: ServiceConnections } = {},
): StreamSet {
  const { bound, connections, ...rest } = options;
  return new StreamSet({
    streamCheckFrequencyMs: 60_000, elapsedNow: () => HOST_CLOCK.elapsedNow(), logger: SILENT, scheduler: asyncScheduler, emit: () => undefined,
    ...rest, streams, open: (nameOrArn) => kinesisSource(client, nameOrArn, bound, connections),
  });
}

const SILENT = { debug() {}, info() {}, warn() {}, error() {} };
