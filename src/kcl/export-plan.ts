// The export's plan, per shard: the kinsumer checkpoint → the KCL lease a KCL fleet resumes from
// where kinsumer stopped. Pure: the rows as read, what the records at the checkpoints are, and who
// is live come in; the lines and the leases to write go out.
import type { CheckpointRow, StoredCheckpoint } from '../ports/lease-store.js';
import type { ShardInfo } from '../ports/stream.js';
import { inheritedStart, startOf } from '../reading/start-position.js';
import type { InitialPosition } from '../types.js';
import type { KinsumerRowRead } from './import-plan.js';
import { planCheckpoint } from './import-plan.js';
import { planStartOf } from './kinsumer-side.js';
import { type KclCheckpoint, type KclLease, type KclStreamIdentifier, kclLeaseKey } from './lease-row.js';
import type { KclPlanLine } from './plan.js';
import type { RecordAtCheckpoint } from './record-at.js';

/** Everything the export's plan is made from. */
export interface ExportFacts {
  /** The stream's shards, in ListShards order. */
  readonly shards: readonly ShardInfo[];
  /** kinsumer's rows by shard id (a shard with no row is absent). */
  readonly kinsumer: ReadonlyMap<string, KinsumerRowRead>;
  /** The leaseCounter of each lease key the KCL table holds (`undefined` when unreadable). */
  readonly kclCounters: ReadonlyMap<string, bigint | undefined>;
  /** The multi-stream identifier of the stream's keys; `undefined`: single-stream keys (shard ids). */
  readonly identifier: KclStreamIdentifier | undefined;
  /** The record at each whole-record checkpoint (no sub-sequence number), by shard id. */
  readonly records: ReadonlyMap<string, RecordAtCheckpoint>;
  /** Where the group starts a shard it never read (its `initialPosition`). */
  readonly initialPosition: InitialPosition;
  /** Ids of the kinsumer clients that are live (their rows moved during the watch). */
  readonly liveClients: readonly string[];
  /** Why the keys cannot be made (a multi-stream table with no lease of this stream), if so. */
  readonly keyProblem: string | undefined;
  readonly force: boolean;
}

/** A lease the export writes. */
export interface ExportWrite {
  readonly shardId: string;
  readonly lease: KclLease;
}

/** The export's plan: its lines, the leases to write, why the run refuses, and the KCL's AT_TIMESTAMP time. */
export interface ExportPlan {
  readonly lines: readonly KclPlanLine[];
  readonly writes: readonly ExportWrite[];
  readonly refused: readonly string[];
  readonly kclTimestamp: Date | undefined;
}

type Converted = { readonly checkpoint: KclCheckpoint; readonly note?: string; readonly timestamp?: Date } | { readonly refuse: string };

/**
 * The KCL checkpoint that resumes where kinsumer would. kinsumer's {s, n} is the KCL's (s, n); its
 * {s} ("after the whole record s") is (s, 0) for a plain record and (s, last index) for a KPL
 * aggregate, else the KCL would deliver the aggregate's later user records again.
 */
function convert(checkpoint: StoredCheckpoint, record: RecordAtCheckpoint | undefined): Converted {
  // Where kinsumer would start (startOf): a reset's LATEST is a time, the KCL's LATEST would skip what came since.
  const start = startOf(checkpoint);
  switch (start.type) {
    case 'position': {
      const { sequenceNumber, subSequenceNumber } = start.position;
      if (subSequenceNumber !== undefined) return { checkpoint: { type: 'sequence', sequenceNumber, subSequenceNumber } };
      const found = record ?? { kind: 'unknown' };
      if (found.kind === 'invalid') return { refuse: `Kinesis takes no sequence number ${sequenceNumber} on this shard (${found.problem})` };
      const last = found.kind === 'aggregate' ? Math.max(0, found.count - 1) : 0;
      return {
        checkpoint: { type: 'sequence', sequenceNumber, subSequenceNumber: last },
        ...(found.kind === 'unknown' ? { note: 'the record at the checkpoint could not be read: were it a KPL aggregate, the KCL would process its user records after the first again' } : {}),
      };
    }
    case 'LATEST':
    case 'TRIM_HORIZON':
      return { checkpoint: { type: start.type } };
    case 'AT_TIMESTAMP':
      return { checkpoint: { type: 'AT_TIMESTAMP' }, timestamp: start.timestamp };
  }
}

/** A shard kinsumer never checkpointed: where its parents' group started, else the group's initialPosition. */
function neverRead(shard: ShardInfo, rows: ReadonlyMap<string, KinsumerRowRead>, initialPosition: InitialPosition): StoredCheckpoint {
  const parents = shard.parentShardIds.map((id) => rows.get(id)?.row).filter((row): row is CheckpointRow => row !== undefined);
  const inherited = inheritedStart(parents);
  if (inherited !== undefined) return inherited;
  return typeof initialPosition === 'string' ? { type: initialPosition } : { type: 'AT_TIMESTAMP', timestamp: initialPosition.timestamp };
}

/** The export's plan (design §8.2). */
export function planExport(facts: ExportFacts): ExportPlan {
  const listed = new Set(facts.shards.map((s) => s.shardId));
  const lines: KclPlanLine[] = [];
  const writes: ExportWrite[] = [];
  const forced = facts.force && facts.liveClients.length > 0;
  let kclTimestamp: Date | undefined;
  for (const shard of facts.shards) {
    const { shardId } = shard;
    const leaseKey = kclLeaseKey(shardId, facts.identifier);
    const read = facts.kinsumer.get(shardId);
    const row = read?.row;
    const start = planStartOf(row?.checkpoint, row?.finished ?? false);
    if (read?.corrupt !== undefined) {
      lines.push({ shardId, leaseKey, kcl: undefined, start: undefined, action: 'refuse', reason: `kinsumer's row cannot be read (${read.corrupt}): repair it (kinsumer reset --force) and run this again` });
      continue;
    }
    const stored = row?.checkpoint ?? neverRead(shard, facts.kinsumer, facts.initialPosition);
    const converted: Converted = row?.finished === true ? { checkpoint: { type: 'SHARD_END' } } : convert(stored, facts.records.get(shardId));
    if ('refuse' in converted) {
      lines.push({ shardId, leaseKey, kcl: undefined, start, action: 'refuse', reason: converted.refuse });
      continue;
    }
    const notes: string[] = [];
    if (row?.checkpoint === undefined && row?.finished !== true) notes.push('never checkpointed by kinsumer: its parents\' start, else the group\'s initialPosition');
    if (converted.note !== undefined) notes.push(converted.note);
    if (converted.timestamp !== undefined) {
      notes.push(`AT_TIMESTAMP ${converted.timestamp.toISOString()}: the KCL application must be configured with this time or an earlier one`);
      if (kclTimestamp === undefined || converted.timestamp < kclTimestamp) kclTimestamp = converted.timestamp;
    }
    if (forced) notes.unshift(`forced: live kinsumer clients (${facts.liveClients.join(', ')})`);
    const counter = facts.kclCounters.get(leaseKey);
    const lease: KclLease = {
      leaseKey,
      shardId,
      ...(facts.identifier === undefined ? {} : { stream: facts.identifier }),
      // Above any the row had; the KCL only compares changes. Unreadable or absent: 0 before.
      leaseCounter: (counter ?? 0n) + 1n,
      ownerSwitchesSinceCheckpoint: 0n,
      checkpoint: converted.checkpoint,
      // Only parents the stream still lists: a child waits for a parent lease that is not at SHARD_END.
      parentShardIds: shard.parentShardIds.filter((id) => listed.has(id)).sort(),
      childShardIds: converted.checkpoint.type === 'SHARD_END' ? facts.shards.filter((s) => s.parentShardIds.includes(shardId)).map((s) => s.shardId).sort() : [],
      startingHashKey: shard.startingHashKey,
      endingHashKey: shard.endingHashKey,
    };
    lines.push({
      shardId, leaseKey, kcl: planCheckpoint(lease.checkpoint), start, action: 'write',
      ...(forced ? { forced: true } : {}), ...(notes.length > 0 ? { reason: notes.join('; ') } : {}),
    });
    writes.push({ shardId, lease });
  }
  const refused: string[] = [];
  if (facts.keyProblem !== undefined) refused.push(facts.keyProblem);
  if (facts.liveClients.length > 0 && !facts.force) {
    refused.push(`${facts.liveClients.length} kinsumer clients are live (${facts.liveClients.join(', ')}): stop them first (their rows moved while they were watched), or export anyway with --force`);
  }
  const refusedLines = lines.filter((l) => l.action === 'refuse').length;
  if (refusedLines > 0) refused.push(`${refusedLines} of the stream's shards are refused (see their lines)`);
  return { lines, writes: refused.length > 0 ? [] : writes, refused, kclTimestamp };
}
