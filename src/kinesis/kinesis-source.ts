// A listed stream of a `streams` group on Kinesis: requests name it as the list did (by name, or by
// ARN for another account's), and DescribeStreamSummary tells which stream it is now.
import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { map } from 'rxjs';
import { KinsumerError } from '../errors/kinsumer-errors.js';
import type { RequestBound } from '../ports/request-timeout.js';
import { KinesisStream } from './kinesis.js';
import type { StreamSource } from './stream-set.js';

/** The {@link StreamSource} of a listed name or ARN, through the application's client. */
export function kinesisSource(client: KinesisClient, nameOrArn: string, bound: RequestBound | undefined): StreamSource {
  const port = new KinesisStream(client, nameOrArn.startsWith('arn:') ? { streamArn: nameOrArn } : { streamName: nameOrArn }, bound === undefined ? {} : { bound });
  return {
    port,
    identify: () => port.describeSummary().pipe(map((summary) => {
      // The creation time is half of the stream's identity: without it, a stream created again could not be told from the old one.
      if (summary.creationTimestamp === undefined) throw new KinsumerError(`DescribeStreamSummary of ${nameOrArn} did not say when the stream was created: a group that reads streams needs it`);
      return { streamArn: summary.streamArn, createdAt: summary.creationTimestamp };
    })),
  };
}
