// How a shard reader's errors are judged and wrapped, for polling and fan-out alike: a fault that
// stays in its shard is a ShardReadError (the AWS error its cause), a start Kinesis refuses is a
// corrupt checkpoint of that shard, and what is retried is decided once here.
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { CorruptCheckpointError, KinsumerError } from '../errors/kinsumer-errors.js';
import type { IteratorStart } from '../ports/stream.js';

/** Reading a shard failed for good (access denied, KMS, a bad request): the AWS error is the cause. */
export class ShardReadError extends KinsumerError {
  /** The shard that could not be read. */
  readonly shardId: string;
  /** The Kinesis operation that failed: `GetShardIterator`, `GetRecords` or `SubscribeToShard`. */
  readonly operation: string;

  constructor(shardId: string, operation: string, cause: unknown) {
    super(`${operation} on shard ${shardId} failed${cause instanceof Error ? ` (${cause.name})` : ''}`, { cause });
    this.shardId = shardId;
    this.operation = operation;
  }
}

/** Typed kinsumer errors say whether they are retriable; AWS errors are classified. */
export function isRetriableReadError(error: unknown): boolean {
  return error instanceof KinsumerError ? error.retriable : classifyAwsError(error) === 'transient';
}

/** Typed errors (stream not found, lease lost) pass as they are; the rest is wrapped, cause kept. */
export function readError(shardId: string, operation: string, error: unknown): KinsumerError {
  return error instanceof KinsumerError ? error : new ShardReadError(shardId, operation, error);
}

/**
 * A stored checkpoint that Kinesis refuses as a start (InvalidArgumentException: not a sequence
 * number of this shard) is a corrupt checkpoint row of that shard, not a fault of the stream:
 * the error then ends that shard only. Other errors pass as they are.
 */
export function checkpointRejected(shardId: string, start: IteratorStart, error: unknown): unknown {
  if (start.type !== 'AFTER_SEQUENCE_NUMBER' && start.type !== 'AT_SEQUENCE_NUMBER') return error;
  if (!(error instanceof Error) || error.name !== 'InvalidArgumentException') return error;
  const shown = JSON.stringify(start.sequenceNumber.slice(0, 40));
  return new CorruptCheckpointError(shardId, 'SequenceNumber', `${shown} is not a position in this shard (GetShardIterator: ${error.name})`, { cause: error });
}
