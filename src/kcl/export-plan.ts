// The export's plan, per shard: the kinsumer checkpoint → the KCL lease a KCL fleet resumes from
// where kinsumer stopped. Pure: the rows as read, what the records at the checkpoints are, and who
// is live come in; the lines and the leases to write go out.
import type { CheckpointRow, StoredCheckpoint } from '../ports/lease-store.js';
import type { Position } from '../ports/position.js';
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
  /** The record at the sequence number each shard's row names (see {@link recordToRead}), by shard id. */
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

/** The export's plan: its lines, the leases to write, why the run refuses, and the KCL's AT_TIMESTAMP time (see `KclPlan.kclTimestamp`). */
export interface ExportPlan {
  readonly lines: readonly KclPlanLine[];
  readonly writes: readonly ExportWrite[];
  readonly refused: readonly string[];
  readonly kclTimestamp: Date | undefined;
}

type Converted = { readonly checkpoint: KclCheckpoint; readonly note?: string } | { readonly refuse: string };

/**
 * The KCL checkpoint "right after `position`". kinsumer's {s, n} is the KCL's (s, n); its {s}
 * ("after the whole record s") is (s, 0) for a plain record and (s, last index) for a KPL
 * aggregate, else the KCL would deliver the aggregate's later user records again.
 */
function afterPosition(position: Position, record: RecordAtCheckpoint | undefined): Converted {
  const { sequenceNumber, subSequenceNumber } = position;
  if (subSequenceNumber !== undefined) return { checkpoint: { type: 'sequence', sequenceNumber, subSequenceNumber } };
  const found = record ?? { kind: 'unknown' };
  if (found.kind === 'invalid') return { refuse: `Kinesis takes no sequence number ${sequenceNumber} on this shard (${found.problem})` };
  const last = found.kind === 'aggregate' ? Math.max(0, found.count - 1) : 0;
  return {
    checkpoint: { type: 'sequence', sequenceNumber, subSequenceNumber: last },
    ...(found.kind === 'unknown' ? { note: 'the record at the checkpoint could not be read: were it a KPL aggregate, the KCL would process its user records after the first again' } : {}),
  };
}

/**
 * The KCL checkpoint that resumes where kinsumer would (`start`, read through startOf: a reset's
 * LATEST is a time, where the KCL's LATEST would skip what came since). The KCL takes an
 * `AT_TIMESTAMP` lease's time from its configuration, one for the stream (`kclTimestamp`, the
 * earliest time start): a shard whose own start time is later is read from that earlier time —
 * unless its start has a floor (the checkpoint a reset replaced) whose record arrived at or after
 * that time: then "after the floor" re-reads a part of what the earlier time would (only records
 * after the floor that arrived before the shard's start, none kinsumer consumed), and is written.
 */
function convert(start: StoredCheckpoint, record: RecordAtCheckpoint | undefined, kclTimestamp: Date | undefined): Converted {
  switch (start.type) {
    case 'position':
      return afterPosition(start.position, record);
    case 'LATEST':
    case 'TRIM_HORIZON':
      return { checkpoint: { type: start.type } };
    case 'AT_TIMESTAMP': {
      const configure = `AT_TIMESTAMP ${(kclTimestamp ?? start.timestamp).toISOString()}: the KCL application must be configured with this time (its InitialPositionInStream: the KCL takes the time from its configuration, one for the stream, not from the lease)`;
      if (kclTimestamp === undefined || start.timestamp <= kclTimestamp) return { checkpoint: { type: 'AT_TIMESTAMP' }, note: configure };
      const arrivedAt = record !== undefined && 'arrivedAt' in record ? record.arrivedAt : undefined;
      if (start.after !== undefined && arrivedAt !== undefined && arrivedAt >= kclTimestamp) {
        const floor = afterPosition(start.after, record);
        if (!('refuse' in floor)) {
          const { sequenceNumber } = start.after;
          return {
            checkpoint: floor.checkpoint,
            note: `kinsumer would start at ${start.timestamp.toISOString()} after ${sequenceNumber}; the stream's one AT_TIMESTAMP (${kclTimestamp.toISOString()}) is earlier than that record's arrival, so this lease resumes after its floor ${sequenceNumber}: the KCL delivers the records after it that arrived before ${start.timestamp.toISOString()} (which kinsumer skipped), none kinsumer consumed`,
          };
        }
      }
      return {
        checkpoint: { type: 'AT_TIMESTAMP' },
        note: `${configure}; this shard is read by the KCL from that time, earlier than kinsumer's ${start.timestamp.toISOString()}: records that arrived in between, which kinsumer would not deliver, are delivered`,
      };
    }
  }
}

/** A shard kinsumer never checkpointed: where its parents' group started, else the group's initialPosition. */
function neverRead(shard: ShardInfo, rows: ReadonlyMap<string, KinsumerRowRead>, initialPosition: InitialPosition): StoredCheckpoint {
  const parents = shard.parentShardIds.map((id) => rows.get(id)?.row).filter((row): row is CheckpointRow => row !== undefined);
  const inherited = inheritedStart(parents);
  if (inherited !== undefined) return inherited;
  return typeof initialPosition === 'string' ? { type: initialPosition } : { type: 'AT_TIMESTAMP', timestamp: initialPosition.timestamp };
}

/**
 * The sequence number whose record the plan needs for a row: a whole-record checkpoint's (plain or
 * KPL aggregate, see afterPosition), or the floor of a time start (its form, and when it arrived:
 * see convert). `undefined`: none.
 */
export function recordToRead(row: CheckpointRow | undefined): string | undefined {
  if (row?.checkpoint === undefined || row.finished) return undefined;
  const start = startOf(row.checkpoint);
  if (start.type === 'position') return start.position.subSequenceNumber === undefined ? start.position.sequenceNumber : undefined;
  return start.type === 'AT_TIMESTAMP' ? start.after?.sequenceNumber : undefined;
}

/** The earliest time start (the KCL's one AT_TIMESTAMP for the stream), `undefined` when none is a time. */
function earliestTime(starts: readonly (StoredCheckpoint | undefined)[]): Date | undefined {
  let earliest: Date | undefined;
  for (const start of starts) if (start?.type === 'AT_TIMESTAMP' && (earliest === undefined || start.timestamp < earliest)) earliest = start.timestamp;
  return earliest;
}

/** The export's plan (design §8.2). */
export function planExport(facts: ExportFacts): ExportPlan {
  const listed = new Set(facts.shards.map((s) => s.shardId));
  const lines: KclPlanLine[] = [];
  const writes: ExportWrite[] = [];
  const forced = facts.force && facts.liveClients.length > 0;
  // Where kinsumer would start each shard, first: the KCL's one AT_TIMESTAMP is the earliest of them.
  const starts = new Map(facts.shards.map((shard) => {
    const read = facts.kinsumer.get(shard.shardId);
    const exported = read?.corrupt !== undefined || read?.row?.finished === true ? undefined : startOf(read?.row?.checkpoint ?? neverRead(shard, facts.kinsumer, facts.initialPosition));
    return [shard.shardId, exported] as const;
  }));
  const kclTimestamp = earliestTime([...starts.values()]);
  for (const shard of facts.shards) {
    const { shardId } = shard;
    const leaseKey = kclLeaseKey(shardId, facts.identifier);
    const read = facts.kinsumer.get(shardId);
    const row = read?.row;
    const start = planStartOf(row?.checkpoint, row?.finished ?? false);
    const stored = starts.get(shardId);
    if (read?.corrupt !== undefined) {
      lines.push({ shardId, leaseKey, kcl: undefined, start: undefined, action: 'refuse', reason: `kinsumer's row cannot be read (${read.corrupt}): repair it (kinsumer reset --force) and run this again` });
      continue;
    }
    // No start: a finished shard (a corrupt one was refused above).
    const converted: Converted = stored === undefined ? { checkpoint: { type: 'SHARD_END' } } : convert(stored, facts.records.get(shardId), kclTimestamp);
    if ('refuse' in converted) {
      lines.push({ shardId, leaseKey, kcl: undefined, start, action: 'refuse', reason: converted.refuse });
      continue;
    }
    const notes: string[] = [];
    if (row?.checkpoint === undefined && row?.finished !== true) notes.push('never checkpointed by kinsumer: its parents\' start, else the group\'s initialPosition');
    if (converted.note !== undefined) notes.push(converted.note);
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
