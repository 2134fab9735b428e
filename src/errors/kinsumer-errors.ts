import type { CheckpointPosition } from '../types.js';
import { type ErrorJson, errorJson } from './error-json.js';

/**
 * Base class of every error kinsumer raises. AWS errors are kept as {@link KinsumerError.cause},
 * never flattened into the message, so callers can still test their type.
 */
export class KinsumerError extends Error {
  /** `true` when trying again later may succeed (throttling, 5xx, lost connection). */
  readonly retriable: boolean;

  constructor(message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super(withSetupCause(message, options.cause), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.retriable = options.retriable ?? false;
  }

  /**
   * What `JSON.stringify` writes (an event logged as JSON, a log pipeline without an error
   * serializer): `name`, `message`, `retriable`, the typed fields of the subclass (such as
   * `shardId` or `table`), and the `cause` chain, five causes deep at most (an AWS or Node error
   * as its `name`, `message`, `code` and `httpStatusCode`). Never a credential or a record's payload.
   */
  toJSON(): ErrorJson {
    return errorJson(this) as ErrorJson;
  }
}

/** An option given to `new Kinsumer(...)` (or another entry point) breaks a rule. Thrown synchronously. */
export class ConfigError extends KinsumerError {
  /** The option at fault, as the user spells it (`throttleDelayMs`, `streamName`, ...). */
  readonly option: string;
  /** The rule it breaks, in words. */
  readonly rule: string;

  constructor(option: string, rule: string) {
    super(`invalid option ${option}: ${rule}`);
    this.option = option;
    this.rule = rule;
  }
}

/** The Kinesis stream does not exist (or is being deleted). */
export class StreamNotFoundError extends KinsumerError {
  /** The stream as the options named it: its name, or its ARN when `streamArn` was given. */
  readonly stream: string;

  constructor(stream: string, options: { cause?: unknown } = {}) {
    super(`Kinesis stream ${stream} not found`, options);
    this.stream = stream;
  }
}

/**
 * In a group that reads `streams`: a shard's stream is no longer the one its key names — deleted,
 * created again under its name (a new stream, with other keys), or dropped from the list. A fault
 * of that shard only: the shard is not read, its row is kept, the rest of the group reads on.
 */
export class StreamGoneError extends KinsumerError {
  /** The stream, by the name (or ARN) the list gave. */
  readonly stream: string;
  /** The shard's key in the group (`<account>:<stream>:<creationEpoch>:<shardId>`). */
  readonly shardId: string;

  constructor(stream: string, shardId: string, options: { cause?: unknown } = {}) {
    super(`Kinesis stream ${stream} is gone (deleted, created again, or no longer listed): shard ${shardId} is not read; its row is kept`, options);
    this.stream = stream;
    this.shardId = shardId;
  }
}

/** One of the application's DynamoDB tables is missing. */
export class TableNotFoundError extends KinsumerError {
  /** The missing table's full name, such as `myapp_checkpoints`. */
  readonly table: string;

  constructor(table: string, options: { cause?: unknown } = {}) {
    super(`DynamoDB table ${table} not found (create it with createTables, the CLI's create-tables, or the createTables option)`, options);
    this.table = table;
  }
}

/**
 * Another client holds the shard's lease now: this client must not read or checkpoint it any more.
 * Ends that shard's `records$`; the consumer as a whole keeps running.
 */
export class LeaseLostError extends KinsumerError {
  /** The shard whose lease this client no longer holds. */
  readonly shardId: string;
  /**
   * `true` when the row names no owner any more: the lease was revoked, most likely by an
   * operator's reset (`kinsumer reset --force`, `resetCheckpoints`, `import-kcl`), not taken by
   * another client. The shard is captured again, and read from the new checkpoint.
   */
  readonly revoked: boolean;

  constructor(shardId: string, options: { cause?: unknown; revoked?: boolean } = {}) {
    const { revoked = false, ...rest } = options;
    super(revoked
      ? `lease on shard ${shardId} was revoked: its row names no owner now (a reset, such as kinsumer reset --force, or import-kcl); no other client holds it`
      : `lease on shard ${shardId} was lost to another client`, rest);
    this.shardId = shardId;
    this.revoked = revoked;
  }
}

/** `stop()` did not finish draining, committing and releasing within `shutdownTimeoutMs`. */
export class ShutdownTimeoutError extends KinsumerError {
  /** The bound that ran out, in milliseconds (the `shutdownTimeoutMs` option). */
  readonly timeoutMs: number;

  constructor(timeoutMs: number, pending: readonly string[] = []) {
    const what = pending.length > 0 ? ` (still pending: ${pending.join(', ')})` : '';
    super(`stop() did not complete within ${timeoutMs} ms${what}`);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * A call to AWS (or to a store or stream port) did not answer within `requestTimeoutMs`: it was
 * aborted, and is retried like any transient fault (a `retrying` event carries this error).
 */
export class RequestTimeoutError extends KinsumerError {
  /** The call that hung, such as `DynamoDB UpdateItem`, or the port method (`commit`). */
  readonly operation: string;
  /** The bound that ran out, in milliseconds (the `requestTimeoutMs` option). */
  readonly timeoutMs: number;

  constructor(operation: string, timeoutMs: number) {
    super(`${operation} did not answer within ${timeoutMs} ms`, { retriable: true });
    this.operation = operation;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The client could not start within `startTimeoutMs`: the tables, the stream or the group could not
 * be reached (DynamoDB or Kinesis unreachable, every call failing or hanging). `cause` is the last
 * error seen while trying; the message names its root cause (the innermost `EndpointError` of that
 * error's causes, else the innermost cause), such as `cannot reach DynamoDB at http://127.0.0.1:9: connection refused`. `records$` and `leases$` error
 * with it; create a new Kinsumer to try again.
 */
export class StartTimeoutError extends KinsumerError {
  /** The bound that ran out, in milliseconds (the `startTimeoutMs` option). */
  readonly timeoutMs: number;

  constructor(timeoutMs: number, options: { cause?: unknown } = {}) {
    super(`could not start within ${timeoutMs} ms${whyNot(options.cause)}`, { ...options, retriable: true });
    this.timeoutMs = timeoutMs;
  }
}

/** The service behind an endpoint. */
export type AwsService = 'Kinesis' | 'DynamoDB';

/**
 * The first contact with an AWS endpoint failed in a way that says more about the setup than
 * about AWS: nothing listens there, it speaks another protocol, or another server answers.
 * The message says what to check or pass; the original error is the `cause`.
 */
export class EndpointError extends KinsumerError {
  /** The service the client was calling. */
  readonly service: AwsService;
  /** The endpoint as the client was configured with it (or the address it tried), when known. */
  readonly endpoint: string | undefined;

  constructor(service: AwsService, endpoint: string | undefined, message: string, options: { cause: unknown; retriable: boolean }) {
    super(message, options);
    this.service = service;
    this.endpoint = endpoint;
  }
}

/**
 * `message` with the {@link EndpointError} among `cause`'s causes on top (`describing table
 * a_clients failed: the DynamoDB client has no region: ...`): it says what to change, and a
 * wrapper's own words (which call failed) rarely do. Other causes stay below, as causes.
 */
function withSetupCause(message: string, cause: unknown): string {
  for (let e: unknown = cause, depth = 0; e instanceof Error && depth < MAX_CAUSE_DEPTH; e = e.cause, depth += 1) {
    if (e instanceof EndpointError) return message.includes(e.message) ? message : `${message}: ${e.message}`;
  }
  return message;
}

/** How deep {@link rootCause} looks: kinsumer wraps an SDK error that wraps a socket error. */
const MAX_CAUSE_DEPTH = 8;

/**
 * The error that says what went wrong, under the wrappers: the innermost {@link EndpointError} of
 * `error`'s cause chain (it explains the socket error beneath it in words: nothing listens there,
 * another protocol), else the innermost error of the chain. `undefined` for a non-Error.
 */
export function rootCause(error: unknown): Error | undefined {
  let innermost: Error | undefined;
  let explained: EndpointError | undefined;
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < MAX_CAUSE_DEPTH; e = e.cause, depth += 1) {
    innermost = e;
    if (e instanceof EndpointError) explained = e;
  }
  return explained ?? innermost;
}

/** An error in a sentence: kinsumer's own message as it is, another error's with its name (`ThrottlingException: ...`). */
export function describeError(error: Error): string {
  if (error instanceof KinsumerError || error.name === 'Error' || error.name === '') return error.message;
  return `${error.name}: ${error.message}`;
}

// `: <root cause>` and, when the last error is a wrapper around it, what it wrapped.
function whyNot(cause: unknown): string {
  if (!(cause instanceof Error)) return '';
  const root = rootCause(cause) ?? cause;
  if (root === cause) return `: ${describeError(cause)}`;
  // The last error's own words: the explanation it carries on top is the root cause, said already.
  const own = cause.message.endsWith(`: ${root.message}`) ? cause.message.slice(0, -root.message.length - 2) : cause.message;
  return `: ${describeError(root)} (last error: ${own})`;
}

/** An operation that needs a shard without a live owner (such as `reset`) found one. */
export class LeaseHeldError extends KinsumerError {
  /** The shard a live client still holds. */
  readonly shardId: string;

  constructor(shardId: string, options: { cause?: unknown } = {}) {
    super(`shard ${shardId} is leased by a live client (stop the consumers first, or force it)`, options);
    this.shardId = shardId;
  }
}

/**
 * A shard's checkpoint row holds what kinsumer (or the Go kinsumer) cannot have written: an
 * attribute of the wrong type, a sequence number that is not one, or one Kinesis refuses as a
 * position in that shard. Affects that shard only: it is reported (an `error` event with the
 * shard id) and the shard is left unread, its row untouched, until an operator fixes the row.
 */
export class CorruptCheckpointError extends KinsumerError {
  /** The shard whose checkpoint row is corrupt (`(unknown)` when the row has no usable `Shard` key). */
  readonly shardId: string;
  /** The attribute at fault (`SequenceNumber`, `LeaseCounter`, ...). */
  readonly attribute: string;

  constructor(shardId: string, attribute: string, problem: string, options: { cause?: unknown } = {}) {
    super(`checkpoint row of shard ${shardId} is corrupt: ${attribute} ${problem}`, { ...options, retriable: false });
    this.shardId = shardId;
    this.attribute = attribute;
  }
}

/**
 * Another process started with this client's `clientId` and took its place (static membership,
 * design §9.3): it raised the member's life in the clients table and captures its leases, fenced.
 * This process ends: `records$` and `leases$` error with this error; it emitted nothing after its
 * first heartbeat the new process refused (at most one renewal interval, a third of `leaseTtlMs`,
 * after the take-over). Two live processes configured with one `clientId` keep replacing each
 * other: give each process its own stable id (a StatefulSet pod name, an ECS task id).
 */
export class ClientReplacedError extends KinsumerError {
  /** The clientId both processes use. */
  readonly clientId: string;
  /** The instance id of the process that took the place (the clients row's `InstanceID`), when known. */
  readonly replacedBy: string | undefined;

  constructor(clientId: string, replacedBy: string | undefined) {
    super(`another process started with clientId ${clientId}${replacedBy === undefined ? '' : ` (instance ${replacedBy})`} and took this one's place: `
      + 'its leases are fenced and this process stops; if both were meant to run, give each its own clientId', { retriable: false });
    this.clientId = clientId;
    this.replacedBy = replacedBy;
  }
}

/**
 * A shard's checkpoint lies behind the stream's trim horizon and `onDataLoss` is `'stop-shard'`:
 * the stream no longer keeps the checkpoint's record, so the records after it that arrived before
 * the horizon expired unread, if there were any (docs/data-loss.md). The shard's `records$` errors
 * with it; its checkpoint is left as it is and its lease kept unread, until the client gives it up
 * or an operator resets the checkpoint (`kinsumer reset --force`).
 */
export class DataLostError extends KinsumerError {
  /** The shard. */
  readonly shardId: string;
  /** The checkpoint the lease started from. */
  readonly checkpoint: CheckpointPosition;
  /** The sequence number of the oldest record the stream keeps after it. */
  readonly resumedAt: string;

  constructor(shardId: string, checkpoint: CheckpointPosition, resumedAt: string) {
    super(`shard ${shardId}: the stream no longer keeps the record of its checkpoint ${checkpoint.sequenceNumber} (retention); `
      + `the oldest record it keeps after it is ${resumedAt}, and records between may have expired unread`);
    this.shardId = shardId;
    this.checkpoint = checkpoint;
    this.resumedAt = resumedAt;
  }
}
