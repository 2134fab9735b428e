import { classifyAwsError, isSetupFault } from './aws-error-kind.js';
import { EndpointError } from './endpoint-error.js';
import {
  ClientReplacedError, ConfigError, CorruptCheckpointError, KinsumerError, LeaseLostError, StreamGoneError, StreamNotFoundError, TableNotFoundError,
} from './kinsumer-errors.js';

/**
 * `true` for the faults of the whole group, which must stop the client: a missing stream or table,
 * access denied or bad credentials, a bad configuration, an endpoint that is not AWS, another
 * process that took this client's place (static membership). Everything
 * else stays in its shard (design §7.1): an unknown AWS error, a malformed record, a corrupt row or
 * a lost lease ends that shard's reading, is reported, and the shard is taken again later.
 * kinsumer's wrappers (`ShardReadError`, a failed commit) are judged by the error they wrap.
 */
export function stopsTheClient(error: unknown): boolean {
  if (error instanceof TableNotFoundError || error instanceof StreamNotFoundError || error instanceof ConfigError || error instanceof ClientReplacedError) return true;
  if (error instanceof EndpointError) return !error.retriable;
  if (error instanceof LeaseLostError || error instanceof CorruptCheckpointError || error instanceof StreamGoneError) return false;
  if (error instanceof KinsumerError) return error.cause !== undefined && stopsTheClient(error.cause);
  return isSetupFault(error) || classifyAwsError(error) === 'not-found';
}

/** Any thrown value as an Error (so events and subscribers always get one). */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new KinsumerError(String(error));
}
