import { classifyAwsError } from './aws-errors.js';
import { EndpointError } from './endpoint-errors.js';
import { KinsumerError, StreamNotFoundError, TableNotFoundError } from './errors.js';

/**
 * `true` for errors that must stop the whole client: a missing stream or table, access denied,
 * a bad request. Transient faults are retried; kinsumer's own per-shard errors (a corrupt
 * checkpoint row, a lost lease) affect that shard only.
 */
export function stopsTheClient(error: unknown): boolean {
  if (error instanceof TableNotFoundError || error instanceof StreamNotFoundError) return true;
  if (error instanceof EndpointError) return !error.retriable;
  if (error instanceof KinsumerError) return false;
  return classifyAwsError(error) === 'fatal' || classifyAwsError(error) === 'not-found';
}

/** Any thrown value as an Error (so events and subscribers always get one). */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new KinsumerError(String(error));
}
