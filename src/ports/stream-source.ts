// Which streams a group reads, from its options: `streamName` or `streamArn` (one stream), or
// `streams` (several). The checks of the public options that name streams, in one place.
import { ConfigError } from '../errors/kinsumer-errors.js';
import type { KinsumerOptions, StreamList, StreamRef } from '../options.js';
import { STREAM_ARN, STREAM_NAME, checkStreamList } from './stream-key.js';

/** The stream named by `streamName` or `streamArn` (exactly one); throws {@link ConfigError}. */
export function resolveStream(input: Pick<KinsumerOptions, 'streamName' | 'streamArn'>): StreamRef {
  const { streamName, streamArn } = input;
  if (streamName !== undefined && streamArn !== undefined) {
    throw new ConfigError('streamName', 'give streamName or streamArn, not both');
  }
  if (streamArn !== undefined) {
    if (typeof streamArn !== 'string' || !STREAM_ARN.test(streamArn)) {
      throw new ConfigError('streamArn', 'must be a Kinesis stream ARN (arn:aws:kinesis:<region>:<account>:stream/<name>)');
    }
    return { streamArn };
  }
  if (streamName === undefined) throw new ConfigError('streamName', 'is required (or give streamArn, or streams)');
  if (typeof streamName !== 'string' || !STREAM_NAME.test(streamName)) {
    throw new ConfigError('streamName', 'must be 1-128 characters of A-Z a-z 0-9 _ . -');
  }
  return { streamName };
}

/** What `streams`, `streamName` and `streamArn` resolve to: exactly one stream, or the list. */
export function resolveSource(input: { readonly streamName?: unknown; readonly streamArn?: unknown; readonly streams?: unknown }): { stream: StreamRef | undefined; streams: StreamList | undefined } {
  const { streams } = input;
  if (streams === undefined) return { stream: resolveStream(input as Pick<KinsumerOptions, 'streamName' | 'streamArn'>), streams: undefined };
  if (input.streamName !== undefined || input.streamArn !== undefined) {
    throw new ConfigError('streams', `give streams or ${input.streamName === undefined ? 'streamArn' : 'streamName'}, not both`);
  }
  if (typeof streams === 'function') return { stream: undefined, streams: streams as () => Promise<readonly string[]> };
  return { stream: undefined, streams: checkStreamList(streams, 'streams') };
}

