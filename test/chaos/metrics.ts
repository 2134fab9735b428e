// Figures of a chaos run for the report: lease handoffs, time to recover after each disruption
// and reshard, and the marks the checker needs, all derived from the ack logs, the workers' events
// and the action timeline. Pure.
import type { AckLine } from '../../examples/demo/ack-log.js';
import { linesByShard } from '../support/ack-log.js';
import type { Disruption, LeaseMark } from '../support/tally.js';
import type { ActionRecord, WorkerEventRecord } from './timeline.js';

/** How long one shard took to flow again after an action. */
export interface Recovery {
  readonly action: number;
  readonly kind: ActionRecord['kind'];
  readonly shardId: string;
  /** From the action's start to the first record of the shard (or of a child of it) received by a live worker. */
  readonly ms: number;
}

/** Lease handoffs: captures of a shard whose previous capture was by another worker. */
export interface Failovers {
  readonly total: number;
  /** Lease losses the workers reported (a write found another owner). */
  readonly leasesLost: number;
  readonly captures: number;
}

interface Position {
  readonly sequenceNumber?: unknown;
  readonly subSequenceNumber?: unknown;
}

function positionOf(value: unknown): { seq?: string; sub?: number } {
  const position = value as Position | undefined;
  if (typeof position?.sequenceNumber !== 'string') return {};
  return typeof position.subSequenceNumber === 'number' ? { seq: position.sequenceNumber, sub: position.subSequenceNumber } : { seq: position.sequenceNumber };
}

/** The workers' lease events as marks for the checker. */
export function leaseMarks(events: readonly WorkerEventRecord[]): LeaseMark[] {
  const marks: LeaseMark[] = [];
  for (const event of events) {
    if (event.shardId === undefined) continue;
    const base = { w: event.w, shardId: event.shardId, at: event.at };
    if (event.type === 'lease-acquired') {
      const start = event.startingPosition as ({ type?: unknown } & Position) | undefined;
      const token = typeof event.fencingToken === 'number' ? { token: event.fencingToken } : {};
      marks.push({ type: 'acquired', ...base, ...token, ...(start?.type === 'AFTER_SEQUENCE_NUMBER' ? positionOf(start) : {}) });
    } else if (event.type === 'checkpoint') {
      marks.push({ type: 'commit', ...base, ...positionOf(event.checkpoint) });
    } else if (event.type === 'lease-released') {
      marks.push({ type: 'released', ...base, ...positionOf(event.checkpoint) });
    } else if (event.type === 'lease-lost') {
      marks.push({ type: 'lost', ...base });
    }
  }
  return marks;
}

/** The crashes and zombies of the timeline (graceful stops and reshards are not disruptions). */
export function disruptions(actions: readonly ActionRecord[]): Disruption[] {
  const out: Disruption[] = [];
  for (const action of actions) {
    if (action.skipped !== undefined || action.worker === undefined) continue;
    if (action.kind === 'kill') out.push({ kind: 'crash', worker: action.worker, at: action.at, ...(action.exitedAt === undefined ? {} : { goneAt: action.exitedAt }) });
    if (action.kind === 'zombie') out.push({ kind: 'zombie', worker: action.worker, at: action.at, ...(action.resumedAt === undefined ? {} : { resumedAt: action.resumedAt }) });
  }
  return out;
}

export function failovers(marks: readonly LeaseMark[]): Failovers {
  const last = new Map<string, string>();
  let total = 0;
  let captures = 0;
  let leasesLost = 0;
  for (const mark of [...marks].sort((a, b) => a.at - b.at)) {
    if (mark.type === 'lost') leasesLost += 1;
    if (mark.type !== 'acquired') continue;
    captures += 1;
    const before = last.get(mark.shardId);
    if (before !== undefined && before !== mark.w) total += 1;
    last.set(mark.shardId, mark.w);
  }
  return { total, leasesLost, captures };
}

/** Each shard and every shard descended from it. */
function withDescendants(shardId: string, parents: ReadonlyMap<string, readonly string[]>): Set<string> {
  const family = new Set([shardId]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [child, ps] of parents) {
      if (!family.has(child) && ps.some((p) => family.has(p))) {
        family.add(child);
        grew = true;
      }
    }
  }
  return family;
}

/**
 * Time to recover, per action and shard: from the action's start to the first record of that
 * shard (or a descendant) received afterwards by a process that is not the victim as it was —
 * after a kill, anyone (the restarted process included); after a zombie, another worker; after a
 * graceful restart, anyone once the old process has exited. For a reshard: from the call to the
 * first record of each new shard. A shard that received nothing afterwards has no figure.
 */
export function recoveries(actions: readonly ActionRecord[], acks: readonly AckLine[], parents: ReadonlyMap<string, readonly string[]>): Recovery[] {
  const out: Recovery[] = [];
  const byShard = linesByShard(acks);
  actions.forEach((action, index) => {
    if (action.skipped !== undefined) return;
    const reshard = action.kind === 'split' || action.kind === 'merge';
    const targets = reshard ? action.children ?? [] : action.shards;
    const from = action.kind === 'restart' ? action.exitedAt ?? action.at : action.at;
    const counts = (line: AckLine) => line.e > from && (action.kind !== 'zombie' || line.w !== action.worker);
    for (const shardId of targets) {
      const family = reshard ? new Set([shardId]) : withDescendants(shardId, parents);
      let firstE = Number.POSITIVE_INFINITY;
      for (const member of family) for (const line of byShard.get(member) ?? []) if (counts(line) && line.e < firstE) firstE = line.e;
      if (Number.isFinite(firstE)) out.push({ action: index, kind: action.kind, shardId, ms: firstE - action.at });
    }
  });
  return out;
}

/** Count, median, 95th percentile and max of a list of durations. */
export function summary(values: readonly number[]): { count: number; medianMs: number; p95Ms: number; maxMs: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { count: sorted.length, medianMs: at(0.5), p95Ms: at(0.95), maxMs: sorted.at(-1) ?? 0 };
}
