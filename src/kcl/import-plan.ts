// The import's plan, per shard: the KCL checkpoint → the kinsumer checkpoint row that resumes right
// after it, and whether writing it is safe. Pure: every fact (the tables as read after the watch,
// what moved during it, the records at the checkpoints) comes in, the lines and writes go out.
import type { CheckpointRow, StoredCheckpoint } from '../ports/lease-store.js';
import type { ShardInfo } from '../ports/stream.js';
import { withResetFloor } from '../reading/start-position.js';
import { type KinsumerTarget, compareWithRow, planStartOf } from './kinsumer-side.js';
import { type KclCheckpoint, type KclLease, kclCheckpointText } from './lease-row.js';
import type { KclPlanCheckpoint, KclPlanLine } from './plan.js';
import type { RecordAtCheckpoint } from './record-at.js';
import type { LeaseItem, StreamLeases } from './stream-leases.js';

/** A kinsumer checkpoint row as the import read it. */
export interface KinsumerRowRead {
  /** The row decoded; `undefined` when there is none or it cannot be read. */
  readonly row: CheckpointRow | undefined;
  /** Why the row cannot be read. */
  readonly corrupt?: string;
}

/** Everything the import's plan is made from. */
export interface ImportFacts {
  /** The stream's shards, in ListShards order. */
  readonly shards: readonly ShardInfo[];
  readonly leases: StreamLeases;
  /** kinsumer's rows by shard id (a shard with no row is absent). */
  readonly kinsumer: ReadonlyMap<string, KinsumerRowRead>;
  /** The record at each sequence checkpoint, by shard id. */
  readonly records: ReadonlyMap<string, RecordAtCheckpoint>;
  /** Keys of the KCL leases (of any stream) whose leaseCounter moved during the watch, or that came or went. */
  readonly movedLeases: ReadonlySet<string>;
  /** Shards whose kinsumer row is owned by a client that is live (its row moved during the watch), with the owner. */
  readonly liveOwners: ReadonlyMap<string, string>;
  /** `--timestamp`: the KCL application's configured AT_TIMESTAMP time. */
  readonly timestamp: Date | undefined;
  /**
   * The import's moment, on DynamoDB's clock (read before any write): a KCL `LATEST` lease becomes
   * `LATEST` from this moment, as `kinsumer reset --to LATEST` stores its own (design §8.3).
   */
  readonly importedAt: Date;
  readonly force: boolean;
}

/** A row the import writes. */
export interface ImportWrite extends KinsumerTarget {
  readonly shardId: string;
}

/** The import's plan: its lines, the rows to write, and why the run refuses (empty: it goes ahead). */
export interface ImportPlan {
  readonly lines: readonly KclPlanLine[];
  readonly writes: readonly ImportWrite[];
  readonly refused: readonly string[];
}

/** A KCL checkpoint as a plan line shows it. */
export function planCheckpoint(checkpoint: KclCheckpoint): KclPlanCheckpoint {
  const text = kclCheckpointText(checkpoint);
  return checkpoint.type === 'sequence' ? text : { checkpoint: text.checkpoint };
}

type Target = (KinsumerTarget & { readonly note?: string }) | { readonly refuse: string };

/**
 * The kinsumer row that resumes where the KCL would: right after the user record checkpointed
 * (see record-at.ts for the two forms), a sentinel as the shard's start, SHARD_END as finished.
 * `LATEST` is stored as a reset to `LATEST` at the import's moment stores it (withResetFloor): the
 * KCL would start at the tip when a worker first took the lease; kinsumer starts at the import, so
 * what is put between the import and the group's first capture is delivered, as after a reset.
 */
function targetOf(checkpoint: KclCheckpoint, record: RecordAtCheckpoint | undefined, current: StoredCheckpoint | undefined, facts: ImportFacts): Target {
  switch (checkpoint.type) {
    case 'sequence': {
      const { sequenceNumber, subSequenceNumber } = checkpoint;
      const found = record ?? { kind: 'unknown' };
      if (found.kind === 'invalid') return { refuse: `Kinesis takes no sequence number ${sequenceNumber} on this shard (${found.problem}): the lease names no record of it` };
      if (found.kind === 'plain' || found.kind === 'gone') return { checkpoint: { type: 'position', position: { sequenceNumber } }, finished: false };
      return {
        checkpoint: { type: 'position', position: { sequenceNumber, subSequenceNumber } },
        finished: false,
        ...(found.kind === 'unknown' ? { note: 'the record at the checkpoint could not be read: resumed as inside a KPL aggregate, so a plain record there is delivered once more' } : {}),
      };
    }
    case 'TRIM_HORIZON':
      return { checkpoint: { type: checkpoint.type }, finished: false };
    case 'LATEST':
      return {
        checkpoint: withResetFloor({ type: 'LATEST' }, current, facts.importedAt),
        finished: false,
        note: `LATEST: from the import's moment (${facts.importedAt.toISOString()}), as after kinsumer reset --to LATEST: records put since are delivered`,
      };
    case 'AT_TIMESTAMP':
      return facts.timestamp === undefined
        ? { refuse: 'AT_TIMESTAMP: the time is in the KCL application\'s configuration, not in the lease; give it with --timestamp' }
        : { checkpoint: { type: 'AT_TIMESTAMP', timestamp: facts.timestamp }, finished: false };
    case 'SHARD_END':
      return { checkpoint: undefined, finished: true };
  }
}

/** The import's plan (design §8.2). */
export function planImport(facts: ImportFacts): ImportPlan {
  const lines: KclPlanLine[] = [];
  const writes: ImportWrite[] = [];
  let refusedLines = 0;
  const listed = new Set(facts.shards.map((s) => s.shardId));
  for (const { shardId } of facts.shards) {
    const planned = planShard(shardId, facts.leases.byShard.get(shardId) ?? [], facts);
    lines.push(planned.line);
    if (planned.write !== undefined) writes.push(planned.write);
    if (planned.line.action === 'refuse') refusedLines += 1;
  }
  for (const [shardId, items] of facts.leases.byShard) {
    if (listed.has(shardId)) continue;
    for (const item of items) {
      lines.push({
        shardId, leaseKey: item.leaseKey, kcl: item.kind === 'lease' ? planCheckpoint(item.lease.checkpoint) : undefined, start: undefined,
        action: 'skip', reason: 'the stream no longer lists this shard (its records aged out): nothing to read',
      });
    }
  }
  for (const { item, reason } of facts.leases.otherIncarnations) {
    lines.push({ shardId: item.shardId, leaseKey: item.leaseKey, kcl: item.kind === 'lease' ? planCheckpoint(item.lease.checkpoint) : undefined, start: undefined, action: 'refuse', reason: `not imported: ${reason}` });
  }
  const refused: string[] = [];
  if (facts.movedLeases.size > 0 && !facts.force) {
    const keys = [...facts.movedLeases].sort();
    refused.push(`the KCL fleet is alive: the leaseCounter of ${keys.length} leases moved while they were watched (${keys.slice(0, 3).join(', ')}${keys.length > 3 ? ', ...' : ''}); stop every KCL worker and run this again`);
  }
  if (refusedLines > 0) refused.push(`${refusedLines} of the stream's shards are refused (see their lines)`);
  return { lines, writes: refused.length > 0 ? [] : writes, refused };
}

function planShard(shardId: string, items: readonly LeaseItem[], facts: ImportFacts): { line: KclPlanLine; write?: ImportWrite } {
  const read = facts.kinsumer.get(shardId);
  const current = planStartOf(read?.row?.checkpoint, read?.row?.finished ?? false);
  const [item] = items;
  if (item === undefined) {
    const reason = current.type === 'INITIAL_POSITION'
      ? 'no KCL lease: the initialPosition option decides where it starts'
      : 'no KCL lease: kinsumer\'s own checkpoint stays';
    return { line: { shardId, kcl: undefined, start: current, action: 'skip', reason } };
  }
  const base = { shardId, leaseKey: item.leaseKey };
  if (items.length > 1) {
    return { line: { ...base, kcl: undefined, start: current, action: 'refuse', reason: `${items.length} KCL leases name this shard (${items.map((i) => i.leaseKey).join(', ')}): remove the stale ones` } };
  }
  if (item.kind === 'unreadable') {
    return { line: { ...base, kcl: undefined, start: current, action: 'refuse', reason: `its KCL lease cannot be read: ${item.problem}` } };
  }
  return planLease(shardId, item.lease, read, facts);
}

function planLease(shardId: string, lease: KclLease, read: KinsumerRowRead | undefined, facts: ImportFacts): { line: KclPlanLine; write?: ImportWrite } {
  const base = { shardId, leaseKey: lease.leaseKey, kcl: planCheckpoint(lease.checkpoint) };
  const target = targetOf(lease.checkpoint, facts.records.get(shardId), read?.row?.checkpoint, facts);
  const current = planStartOf(read?.row?.checkpoint, read?.row?.finished ?? false);
  if ('refuse' in target) return { line: { ...base, start: current, action: 'refuse', reason: target.refuse } };
  const notes: string[] = [];
  if (target.note !== undefined) notes.push(target.note);
  if (lease.pendingCheckpoint !== undefined) {
    const pending = kclCheckpointText(lease.pendingCheckpoint);
    notes.push(`pendingCheckpoint ${pending.checkpoint}/${pending.subSequenceNumber} (prepared, not committed) is not used, as the KCL does not resume from it`);
  }
  // SHARD_END keeps the row's checkpoint; a row with none gets TRIM_HORIZON, so a child with no row
  // of its own inherits a start that reads all of it (as the KCL starts children at TRIM_HORIZON).
  const checkpoint: StoredCheckpoint | undefined = target.finished ? (read?.row?.checkpoint === undefined ? { type: 'TRIM_HORIZON' } : undefined) : target.checkpoint;
  const write: ImportWrite = { shardId, checkpoint, finished: target.finished };
  const start = planStartOf(target.checkpoint ?? read?.row?.checkpoint, target.finished);
  const blockers: string[] = [];
  if (read?.corrupt !== undefined) blockers.push(`kinsumer's row cannot be read (${read.corrupt})`);
  const compared = compareWithRow(read?.row, target);
  if (compared === 'same' && read?.corrupt === undefined) {
    return { line: { ...base, start, action: 'skip', reason: ['kinsumer is there already', ...notes].join('; ') } };
  }
  if (typeof compared === 'object') blockers.push(`backwards: ${compared.backwards}`);
  const owner = facts.liveOwners.get(shardId);
  if (owner !== undefined) blockers.push(`a live kinsumer client (${owner}) holds it`);
  if (facts.movedLeases.has(lease.leaseKey)) blockers.push('its KCL lease moved during the watch (a live KCL worker)');
  if (blockers.length === 0) {
    return { line: { ...base, start, action: 'write', ...(notes.length > 0 ? { reason: notes.join('; ') } : {}) }, write };
  }
  if (!facts.force) {
    return { line: { ...base, start, action: 'refuse', reason: [...blockers, ...notes].join('; ') + ' (--force writes it anyway)' } };
  }
  return { line: { ...base, start, action: 'write', forced: true, reason: ['forced', ...blockers, ...notes].join('; ') }, write };
}
