import { KinsumerError } from './kinsumer-errors.js';

/**
 * How kinsumer treats an error from an AWS call. Decided from the error's name and HTTP status,
 * so no module but the two client adapters needs the SDK's error classes.
 */
export type AwsErrorKind =
  /** A DynamoDB condition did not hold (lease taken, counter moved). */
  | 'conditional'
  /** The table, stream or consumer does not exist. */
  | 'not-found'
  /** The resource is busy (being created, deleted, updated). */
  | 'in-use'
  /** Throttling, 5xx, timeouts, dropped connections, expired iterators: try again. */
  | 'transient'
  /** Access denied, bad arguments, KMS: trying again will not help. */
  | 'fatal';

const THROTTLING = new Set([
  'ProvisionedThroughputExceededException', 'LimitExceededException', 'ThrottlingException',
  'Throttling', 'ThrottledException', 'RequestLimitExceeded', 'TooManyRequestsException',
  'RequestThrottled', 'RequestThrottledException', 'SlowDown', 'TransactionInProgressException',
]);

const TRANSIENT = new Set([
  'InternalFailure', 'InternalServerError', 'InternalFailureException', 'ServiceUnavailable',
  'ServiceUnavailableException', 'RequestTimeout', 'RequestTimeoutException', 'TimeoutError',
  'ExpiredIteratorException', 'ExpiredTokenException', 'ECONNRESET', 'ECONNREFUSED', 'EPIPE',
  'ETIMEDOUT', 'EAI_AGAIN', 'ENOTFOUND', 'ECONNABORTED', 'NetworkingError', 'AbortError',
  'IDPCommunicationError',
]);

const FATAL = new Set([
  'AccessDeniedException', 'AccessDenied', 'UnrecognizedClientException', 'InvalidSignatureException',
  'IncompleteSignature', 'MissingAuthenticationToken', 'ValidationException', 'InvalidArgumentException',
  'SerializationException', 'KMSDisabledException', 'KMSInvalidStateException', 'KMSAccessDeniedException',
  'KMSNotFoundException', 'KMSOptInRequired', 'InvalidClientTokenId',
]);

interface ErrorShape {
  name?: unknown;
  code?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  $retryable?: unknown;
  cause?: unknown;
}

/**
 * Classifies an error thrown by an AWS SDK v3 call (or by the network under it). A kinsumer error
 * wrapping one (an unreachable endpoint, say) is judged by its own `retriable`.
 */
export function classifyAwsError(error: unknown): AwsErrorKind {
  if (error instanceof KinsumerError) return error.retriable ? 'transient' : 'fatal';
  if (typeof error !== 'object' || error === null) return 'fatal';
  const shape = error as ErrorShape;
  const name = typeof shape.name === 'string' ? shape.name : '';
  const code = typeof shape.code === 'string' ? shape.code : '';
  if (name === 'ConditionalCheckFailedException') return 'conditional';
  if (name === 'ResourceNotFoundException') return 'not-found';
  if (name === 'ResourceInUseException') return 'in-use';
  // KMS throttling is throttling; check before the fatal KMS names.
  if (name === 'KMSThrottlingException') return 'transient';
  if (THROTTLING.has(name) || TRANSIENT.has(name) || TRANSIENT.has(code)) return 'transient';
  if (FATAL.has(name)) return 'fatal';
  if (shape.$retryable !== undefined && shape.$retryable !== null) return 'transient';
  const status = shape.$metadata?.httpStatusCode;
  if (typeof status === 'number') {
    if (status >= 500 || status === 429) return 'transient';
    if (status >= 400) return 'fatal';
  }
  // No HTTP status at all: the request never got an answer (socket hang up, reset, timeout).
  if (shape.$metadata === undefined || status === undefined) {
    if (error instanceof Error && /socket|ECONN|EPIPE|ETIMEDOUT|timeout|timed out|hang up|network/i.test(`${name} ${code} ${error.message}`)) {
      return 'transient';
    }
  }
  return 'fatal';
}

const INTERNAL = new Set(['InternalFailure', 'InternalServerError', 'InternalFailureException']);

/**
 * The server answered, and failed on the request (HTTP 500, an internal error): transient as a
 * rule, but also how DynamoDB Local answers some malformed requests, every time. Not throttling,
 * not an overloaded service (503), not a request that got no answer.
 */
export function isInternalServerError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null || error instanceof KinsumerError) return false;
  const { name, $metadata } = error as ErrorShape;
  return (typeof name === 'string' && INTERNAL.has(name)) || $metadata?.httpStatusCode === 500;
}

/** `true` for the kinds that are worth retrying. */
export function isTransient(error: unknown): boolean {
  return classifyAwsError(error) === 'transient';
}

/**
 * `true` for the fatal errors AWS names (access denied, bad credentials, KMS, a malformed
 * request): faults of the client's setup, which no shard escapes. An error AWS does not name
 * that way (a 4xx this library does not know, a bug of its own) is not one of them.
 */
export function isSetupFault(error: unknown): boolean {
  if (typeof error !== 'object' || error === null || error instanceof KinsumerError) return false;
  const { name } = error as ErrorShape;
  return typeof name === 'string' && FATAL.has(name);
}
