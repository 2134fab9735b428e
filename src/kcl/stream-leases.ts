// Which items of a KCL lease table are this stream's leases. Pure.
//
// A single-stream table's keys are shard ids: every lease is the stream's. A multi-stream table's
// keys name the stream as `<account>:<stream>:<creationEpoch>`: a lease is this stream's when the
// name, the account and the creation epoch match. The epoch is the application's choice (the KCL
// takes it on trust): seconds or milliseconds of the stream's creation are both accepted. A lease
// of the same name and account with another epoch belongs to an older stream that was deleted and
// created again: its checkpoints are sequence numbers of shards that no longer exist.
import { accountOfArn, parseShardKey } from '../ports/stream-key.js';
import type { KclItem, KclStreamIdentifier } from './lease-row.js';

/** The stream being moved, as DescribeStreamSummary tells it. */
export interface StreamIdentity {
  readonly streamName: string;
  /** The account of the stream's ARN; `undefined` when it cannot be read from it. */
  readonly accountId: string | undefined;
  /** When the stream was created (epoch ms); `undefined` when the service did not say. */
  readonly creationMs: number | undefined;
}

/** A lease item (readable or not) of the KCL table. */
export type LeaseItem = Extract<KclItem, { kind: 'lease' | 'unreadable' }>;

/** The KCL table's items, sorted by the stream they belong to. */
export interface StreamLeases {
  /** This stream's leases by shard id (more than one for a shard is a conflict the plan refuses). */
  readonly byShard: ReadonlyMap<string, readonly LeaseItem[]>;
  /** Leases of another stream of the same name (an older one), each with the reason it is not taken. */
  readonly otherIncarnations: readonly { readonly item: LeaseItem; readonly reason: string }[];
  /** The multi-stream identifier this stream's leases carry, when the table is a multi-stream one and holds some. */
  readonly identifier: KclStreamIdentifier | undefined;
  /** `true` when any lease of the table has a multi-stream key. */
  readonly multiStream: boolean;
  /** Leases of other streams. */
  readonly otherStreams: number;
  /** Items that are not leases (3.5's other entity types). */
  readonly otherItems: number;
}

/** Where a lease item stands: its stream identifier, when its key is a multi-stream one. */
function streamOf(item: LeaseItem): KclStreamIdentifier | undefined {
  return item.kind === 'lease' ? item.lease.stream : undefined;
}

/** The account id of a stream ARN (`arn:aws:kinesis:<region>:<account>:stream/<name>`). */
export const accountOf = accountOfArn;

/** `true` when `epoch` is the stream's creation time in seconds or in milliseconds. */
export function epochMatches(epoch: bigint, creationMs: number): boolean {
  const ms = BigInt(Math.trunc(creationMs));
  return epoch === ms || epoch === ms / 1000n;
}

/** An epoch in milliseconds: one below 10^11 is taken for seconds (10^11 s is the year 5138, 10^11 ms 1973). */
function epochMs(epoch: bigint): number {
  return epoch < 100_000_000_000n ? Number(epoch) * 1000 : Number(epoch);
}

/** Sorts a KCL table's items into this stream's leases and the rest. */
export function selectStreamLeases(items: readonly KclItem[], stream: StreamIdentity): StreamLeases {
  const byShard = new Map<string, LeaseItem[]>();
  const otherIncarnations: { item: LeaseItem; reason: string }[] = [];
  const sameName: { item: LeaseItem; id: KclStreamIdentifier }[] = [];
  let otherStreams = 0;
  let otherItems = 0;
  let multiStream = false;
  const take = (shardId: string, item: LeaseItem) => byShard.set(shardId, [...(byShard.get(shardId) ?? []), item]);
  for (const item of items) {
    if (item.kind === 'other') {
      otherItems += 1;
      continue;
    }
    const id = streamOf(item);
    // An unreadable item whose key looks multi-stream is matched by its key's text.
    const keyed = id ?? (item.leaseKey.includes(':') ? parseIdentifier(item.leaseKey) : undefined);
    if (keyed === undefined) {
      take(item.shardId, item);
      continue;
    }
    multiStream = true;
    if (keyed.streamName !== stream.streamName || (stream.accountId !== undefined && keyed.accountId !== stream.accountId)) {
      otherStreams += 1;
      continue;
    }
    sameName.push({ item, id: keyed });
  }
  const epochs = new Set(sameName.map(({ id }) => id.creationEpoch));
  let identifier: KclStreamIdentifier | undefined;
  for (const { item, id } of sameName) {
    const { shardId } = item;
    const matches = stream.creationMs === undefined ? epochs.size === 1 : epochMatches(id.creationEpoch, stream.creationMs);
    if (matches) {
      identifier ??= id;
      take(shardId, item);
      continue;
    }
    const created = stream.creationMs === undefined ? undefined : new Date(stream.creationMs).toISOString();
    const reason = created === undefined
      ? `a lease of stream ${id.serialized}: the leases name ${epochs.size} creation epochs of ${stream.streamName} and the service did not say when this one was created`
      : `a lease of ${epochMs(id.creationEpoch) < (stream.creationMs ?? 0) ? 'an older' : 'another'} stream named ${stream.streamName} (${id.serialized}); this one was created ${created}`;
    otherIncarnations.push({ item, reason });
  }
  return { byShard, otherIncarnations, identifier, multiStream, otherStreams, otherItems };
}

function parseIdentifier(leaseKey: string): KclStreamIdentifier | undefined {
  return parseShardKey(leaseKey)?.stream;
}
