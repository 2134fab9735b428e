// The one rule for naming a shard in a group that reads several streams (and for telling such a
// name from a plain shard id). Pure.
//
// A multi-stream group names each shard `<account>:<stream>:<creationEpoch>:<shardId>`, the AWS
// KCL's multi-stream lease key (`MultiStreamLease.getLeaseKey`): the account and the creation time
// make a stream deleted and created again under the same name another stream, whose shards get
// other names, so its old checkpoints are never read for it. The epoch is in seconds, as the KCL's
// own applications write it (`Instant.getEpochSecond()`), so a KCL table and a kinsumer group name
// the same shards alike. The core never looks inside a name: to it, as to the checkpoints table,
// the key is the shard's id. A one-stream group keeps plain shard ids (the Go kinsumer's rows).
import { ConfigError } from '../errors/kinsumer-errors.js';

/** A stream's name: what Kinesis allows. */
export const STREAM_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
/** A stream's ARN (`arn:<partition>:kinesis:<region>:<account>:stream/<name>`). */
export const STREAM_ARN = /^arn:aws[a-z-]*:kinesis:[a-z0-9-]+:\d{12}:stream\/[A-Za-z0-9_.-]{1,128}$/;

/** A stream as a multi-stream group names it: its account, its name, when it was created. */
export interface StreamIdentity {
  /** The account of the stream's ARN (12 digits on AWS). */
  readonly accountId: string;
  readonly streamName: string;
  /**
   * When it was created, in seconds since the epoch as the group writes it; a KCL table may hold
   * milliseconds (its application chose), which the KCL import accepts too.
   */
  readonly creationEpoch: bigint;
  /** `<account>:<stream>:<creationEpoch>`, the prefix of its shards' keys (the KCL's `streamName` attribute). */
  readonly serialized: string;
}

/** A multi-stream shard key, taken apart. */
export interface ShardKey {
  readonly stream: StreamIdentity;
  /** The shard's own id in its stream, such as `shardId-000000000003`. */
  readonly shardId: string;
}

const IDENTIFIER = /^(\d+):([A-Za-z0-9_.-]{1,128}):(\d{1,20})$/;
// The shard id is everything after the third colon (Kinesis shard ids have none).
const KEY = /^(\d+):([A-Za-z0-9_.-]{1,128}):(\d{1,20}):(.+)$/s;

/** The identity of a stream from its ARN's account, its name and its creation time. */
export function streamIdentity(accountId: string, streamName: string, createdAt: Date): StreamIdentity {
  const creationEpoch = BigInt(Math.floor(createdAt.getTime() / 1000));
  return identity(accountId, streamName, creationEpoch);
}

function identity(accountId: string, streamName: string, creationEpoch: bigint): StreamIdentity {
  return { accountId, streamName, creationEpoch, serialized: `${accountId}:${streamName}:${creationEpoch}` };
}

/** `<account>:<stream>:<creationEpoch>`, read back; `undefined` when `text` is not one. */
export function parseStreamIdentifier(text: string): StreamIdentity | undefined {
  const match = IDENTIFIER.exec(text);
  if (match === null) return undefined;
  const [, accountId = '', streamName = '', epoch = ''] = match;
  return { accountId, streamName, creationEpoch: BigInt(epoch), serialized: text };
}

/** The key of a shard of `stream` in a multi-stream group. */
export function shardKey(stream: StreamIdentity, shardId: string): string {
  return `${stream.serialized}:${shardId}`;
}

/** A multi-stream key taken apart; `undefined` for a plain shard id (or anything else). */
export function parseShardKey(key: string): ShardKey | undefined {
  const match = KEY.exec(key);
  if (match === null) return undefined;
  const [, accountId = '', streamName = '', epoch = '', shardId = ''] = match;
  return { stream: identity(accountId, streamName, BigInt(epoch)), shardId };
}

/** The account of a stream ARN; `undefined` when `arn` is not one. */
export function accountOfArn(arn: string): string | undefined {
  const account = arn.split(':')[4];
  return arn.startsWith('arn:') && account !== undefined && /^\d+$/.test(account) ? account : undefined;
}

/** The stream name a name or an ARN names (the tail of an ARN). */
export function nameOf(nameOrArn: string): string {
  return nameOrArn.startsWith('arn:') ? nameOrArn.slice(nameOrArn.lastIndexOf('/') + 1) : nameOrArn;
}

/**
 * Whether a name or an ARN names the stream of `stream`: by name (any account), or by ARN (that
 * account and name). The creation time is not compared: a name names every stream it was given to.
 */
export function names(nameOrArn: string, stream: Pick<StreamIdentity, 'accountId' | 'streamName'>): boolean {
  if (nameOf(nameOrArn) !== stream.streamName) return false;
  const account = accountOfArn(nameOrArn);
  return account === undefined || account === stream.accountId;
}

/**
 * A list of streams, each a name or an ARN, checked as the `streams` option checks it: each a
 * stream name or ARN, none twice, and not empty (unless `allowEmpty`: a `streams` function may
 * answer that there is nothing to read now). Throws {@link ConfigError} naming `option`.
 */
export function checkStreamList(value: unknown, option: string, allowEmpty = false): readonly string[] {
  if (!Array.isArray(value)) throw new ConfigError(option, 'must be an array of stream names or ARNs, or a function returning a promise of one');
  const entries = value as unknown[];
  if (entries.length === 0 && !allowEmpty) throw new ConfigError(option, 'must name at least one stream');
  const seen = new Set<string>();
  for (const entry of entries) {
    if (typeof entry !== 'string' || !(STREAM_NAME.test(entry) || STREAM_ARN.test(entry))) {
      throw new ConfigError(option, `${JSON.stringify(entry)} is neither a stream name (1-128 characters of A-Z a-z 0-9 _ . -) nor a Kinesis stream ARN`);
    }
    if (seen.has(entry)) throw new ConfigError(option, `names ${entry} twice`);
    seen.add(entry);
  }
  return Object.freeze([...entries as string[]]);
}
