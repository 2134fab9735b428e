// A row of the AWS KCL's lease table, read as every KCL version (1.x, 2.x, 3.x) writes it and
// written so that every version reads it. Pure. The facts behind each rule (the KCL's serializer,
// checked against its source) are in docs/kcl-lease-table.md and the notes of issue 25.
//
// Reading is lenient where the KCL is (a missing checkpointSubSequenceNumber is 0, as KCL 1.0-1.3
// wrote none; a pendingCheckpointState of either type is ignored; a parentShardId of the wrong type
// is read as a set) and strict where a guess could move a checkpoint (no checkpoint, a checkpoint
// that is neither a sequence number nor a sentinel, no leaseCounter). Writing is strict the other
// way: 1.x, 2.x and the 3.0-3.4 scans abort on one malformed item, so every written row carries
// leaseKey S, leaseCounter N, ownerSwitchesSinceCheckpoint N, checkpoint S and
// checkpointSubSequenceNumber N, and the sets as SS (an S parentShardId reads as "no parents").
import { type StreamIdentity, parseShardKey, shardKey } from '../ports/stream-key.js';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { isSequenceNumber } from '../checkpoint/sequence-number.js';
import type { Item } from '../dynamodb/dynamo.js';

/** The KCL's attribute names. */
export const KCL_ATTRIBUTES = {
  leaseKey: 'leaseKey',
  leaseOwner: 'leaseOwner',
  leaseCounter: 'leaseCounter',
  ownerSwitchesSinceCheckpoint: 'ownerSwitchesSinceCheckpoint',
  checkpoint: 'checkpoint',
  checkpointSubSequenceNumber: 'checkpointSubSequenceNumber',
  pendingCheckpoint: 'pendingCheckpoint',
  pendingCheckpointSubSequenceNumber: 'pendingCheckpointSubSequenceNumber',
  pendingCheckpointState: 'pendingCheckpointState',
  parentShardId: 'parentShardId',
  childShardIds: 'childShardIds',
  startingHashKey: 'startingHashKey',
  endingHashKey: 'endingHashKey',
  throughputKBps: 'throughputKBps',
  checkpointOwner: 'checkpointOwner',
  entityType: 'entityType',
  streamName: 'streamName',
  shardId: 'shardId',
} as const;

const A = KCL_ATTRIBUTES;

/** The checkpoint sentinels the KCL stores in `checkpoint` instead of a sequence number. */
export const KCL_SENTINELS = ['TRIM_HORIZON', 'LATEST', 'AT_TIMESTAMP', 'SHARD_END'] as const;

/** A sentinel: a start (`TRIM_HORIZON`, `LATEST`, `AT_TIMESTAMP`) or a finished shard (`SHARD_END`). */
export type KclSentinel = (typeof KCL_SENTINELS)[number];

/**
 * A KCL checkpoint: the last user record processed, inclusive (the KCL resumes AT its sequence
 * number and drops every user record at or before it), or a sentinel.
 */
export type KclCheckpoint =
  | { readonly type: 'sequence'; readonly sequenceNumber: string; readonly subSequenceNumber: number }
  | { readonly type: KclSentinel };

/**
 * The stream of a multi-stream lease: `streamName` holds `<account>:<stream>:<creationEpoch>`, in
 * seconds or milliseconds (the KCL application chose; the KCL takes it on trust). The key format is
 * ports/stream-key.ts's, the one a `streams` group names its shards by.
 */
export type KclStreamIdentifier = StreamIdentity;

/** A lease, decoded. */
export interface KclLease {
  readonly leaseKey: string;
  /** The bare shard id. */
  readonly shardId: string;
  /** Present for a multi-stream lease. */
  readonly stream?: KclStreamIdentifier;
  readonly leaseOwner?: string;
  /** Any signed 64-bit value; the KCL compares only changes. */
  readonly leaseCounter: bigint;
  readonly ownerSwitchesSinceCheckpoint: bigint;
  readonly checkpoint: KclCheckpoint;
  /** Prepared by `prepareCheckpoint`, not committed: the KCL does not resume from it. */
  readonly pendingCheckpoint?: KclCheckpoint;
  readonly parentShardIds: readonly string[];
  readonly childShardIds: readonly string[];
  readonly startingHashKey?: string;
  readonly endingHashKey?: string;
}

/** What an item of a KCL lease table is. */
export type KclItem =
  | { readonly kind: 'lease'; readonly leaseKey: string; readonly shardId: string; readonly lease: KclLease }
  /** Not a lease: 3.5's other entity types (and, as a safety net, items with neither checkpoint nor counter). */
  | { readonly kind: 'other'; readonly leaseKey: string; readonly entityType: string | undefined }
  /** Looks like a lease and cannot be read: nothing is guessed from it. */
  | { readonly kind: 'unreadable'; readonly leaseKey: string; readonly shardId: string; readonly problem: string };

const SIGNED_64 = /^-?\d{1,19}$/;

/** Decodes one item of a KCL lease table. Never throws. */
export function decodeKclItem(item: Item): KclItem {
  const leaseKey = item[A.leaseKey]?.S ?? '';
  const entityType = item[A.entityType]?.S;
  // 3.5+: only LEASE items are leases; older leases carry no entityType at all.
  if (item[A.entityType] !== undefined && entityType !== 'LEASE') return { kind: 'other', leaseKey, entityType: entityType ?? '(not a string)' };
  if (item[A.checkpoint] === undefined && item[A.leaseCounter] === undefined) return { kind: 'other', leaseKey, entityType };
  const key = parseLeaseKey(leaseKey, item);
  const unreadable = (problem: string): KclItem => ({ kind: 'unreadable', leaseKey, shardId: key.shardId, problem });
  if (leaseKey === '') return unreadable('has no leaseKey string');
  if (key.problem !== undefined) return unreadable(key.problem);
  const counter = item[A.leaseCounter]?.N;
  if (counter === undefined || !SIGNED_64.test(counter)) return unreadable('has no leaseCounter number');
  const checkpoint = readCheckpoint(item[A.checkpoint]?.S, item[A.checkpointSubSequenceNumber]);
  if (typeof checkpoint === 'string') return unreadable(`checkpoint ${checkpoint}`);
  const switches = item[A.ownerSwitchesSinceCheckpoint]?.N;
  const pending = item[A.pendingCheckpoint]?.S;
  const pendingCheckpoint = pending === undefined || pending === '' ? undefined : readCheckpoint(pending, item[A.pendingCheckpointSubSequenceNumber]);
  const owner = item[A.leaseOwner]?.S;
  const startingHashKey = item[A.startingHashKey]?.S;
  const endingHashKey = item[A.endingHashKey]?.S;
  return {
    kind: 'lease',
    leaseKey,
    shardId: key.shardId,
    lease: {
      leaseKey,
      shardId: key.shardId,
      ...(key.stream === undefined ? {} : { stream: key.stream }),
      ...(owner === undefined || owner === '' ? {} : { leaseOwner: owner }),
      leaseCounter: BigInt(counter),
      ownerSwitchesSinceCheckpoint: switches !== undefined && SIGNED_64.test(switches) ? BigInt(switches) : 0n,
      checkpoint,
      ...(pendingCheckpoint === undefined || typeof pendingCheckpoint === 'string' ? {} : { pendingCheckpoint }),
      parentShardIds: readIds(item[A.parentShardId]),
      childShardIds: readIds(item[A.childShardIds]),
      // The KCL reads the hash range only when both ends are there.
      ...(startingHashKey && endingHashKey ? { startingHashKey, endingHashKey } : {}),
    },
  };
}

/** A checkpoint, or the reason it cannot be one. */
function readCheckpoint(text: string | undefined, sub: AttributeValue | undefined): KclCheckpoint | string {
  if (text === undefined) return 'is missing';
  if ((KCL_SENTINELS as readonly string[]).includes(text)) return { type: text as KclSentinel };
  if (!isSequenceNumber(text)) return `is neither a sequence number nor a sentinel: ${JSON.stringify(String(text).slice(0, 40))}`;
  // KCL 1.0-1.3 wrote no sub-sequence number; the KCL reads a missing one as 0.
  const subText: string = sub?.N ?? '0';
  const subSequenceNumber = Number(subText);
  if (!/^\d{1,16}$/.test(subText) || !Number.isSafeInteger(subSequenceNumber)) return `sub-sequence number is not a whole number: ${JSON.stringify(subText.slice(0, 40))}`;
  return { type: 'sequence', sequenceNumber: text, subSequenceNumber };
}

/** SS as the KCL writes sets; an S or an L of S read too (the KCL itself would read an S as empty). */
function readIds(value: AttributeValue | undefined): string[] {
  if (value === undefined) return [];
  const ids = value.SS ?? (value.S === undefined ? value.L?.map((v) => v.S ?? '') : [value.S]) ?? [];
  return [...new Set(ids.filter((id) => id !== ''))].sort();
}

/**
 * Single-stream keys are shard ids; multi-stream keys are `<account>:<stream>:<epoch>:<shardId>`
 * (`MultiStreamLease.getLeaseKey`), with `streamName` and `shardId` beside them.
 */
function parseLeaseKey(leaseKey: string, item: Item): { shardId: string; stream?: KclStreamIdentifier; problem?: string } {
  if (!leaseKey.includes(':')) return { shardId: leaseKey };
  const key = parseShardKey(leaseKey);
  if (key === undefined) return { shardId: leaseKey, problem: 'leaseKey is neither a shard id nor <account>:<stream>:<creationEpoch>:<shardId>' };
  const { shardId, stream } = key;
  const stored = item[A.streamName]?.S;
  if (stored !== undefined && stored !== stream.serialized) return { shardId, problem: `streamName ${stored} does not match its leaseKey` };
  const storedShard = item[A.shardId]?.S;
  if (storedShard !== undefined && storedShard !== shardId) return { shardId, problem: `shardId ${storedShard} does not match its leaseKey` };
  return { shardId, stream };
}

/** The lease key of a shard: the shard id, or its multi-stream key for a multi-stream table. */
export function kclLeaseKey(shardId: string, stream: KclStreamIdentifier | undefined): string {
  return stream === undefined ? shardId : shardKey(stream, shardId);
}

/** The checkpoint as the KCL stores it: the `checkpoint` string and its sub-sequence number. */
export function kclCheckpointText(checkpoint: KclCheckpoint): { readonly checkpoint: string; readonly subSequenceNumber: number } {
  return checkpoint.type === 'sequence'
    ? { checkpoint: checkpoint.sequenceNumber, subSequenceNumber: checkpoint.subSequenceNumber }
    : { checkpoint: checkpoint.type, subSequenceNumber: 0 };
}

/**
 * The item of a lease, as the KCL's own create writes it (no `entityType`: a missing one is read as
 * a lease by 3.5, and older versions do not know it). Optional attributes are left out when empty.
 */
export function encodeKclLease(lease: KclLease): Item {
  const { checkpoint, subSequenceNumber } = kclCheckpointText(lease.checkpoint);
  const item: Item = {
    [A.leaseKey]: { S: lease.leaseKey },
    [A.leaseCounter]: { N: lease.leaseCounter.toString() },
    [A.ownerSwitchesSinceCheckpoint]: { N: lease.ownerSwitchesSinceCheckpoint.toString() },
    [A.checkpoint]: { S: checkpoint },
    [A.checkpointSubSequenceNumber]: { N: String(subSequenceNumber) },
  };
  if (lease.leaseOwner !== undefined) item[A.leaseOwner] = { S: lease.leaseOwner };
  if (lease.pendingCheckpoint !== undefined) {
    const pending = kclCheckpointText(lease.pendingCheckpoint);
    item[A.pendingCheckpoint] = { S: pending.checkpoint };
    item[A.pendingCheckpointSubSequenceNumber] = { N: String(pending.subSequenceNumber) };
  }
  if (lease.parentShardIds.length > 0) item[A.parentShardId] = { SS: [...lease.parentShardIds] };
  if (lease.childShardIds.length > 0) item[A.childShardIds] = { SS: [...lease.childShardIds] };
  if (lease.startingHashKey !== undefined && lease.endingHashKey !== undefined) {
    item[A.startingHashKey] = { S: lease.startingHashKey };
    item[A.endingHashKey] = { S: lease.endingHashKey };
  }
  if (lease.stream !== undefined) {
    item[A.streamName] = { S: lease.stream.serialized };
    item[A.shardId] = { S: lease.shardId };
  }
  return item;
}
