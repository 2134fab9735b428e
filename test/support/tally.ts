// The independent checker of a fleet run: from what the producer put, what the workers logged as
// acked and (for chaos runs) what the run did to them, it counts and checks the promises — nothing
// lost, per-shard order, parents before children, duplicates only where a crash or a zombie
// explains them, no write by a client that did not hold the lease. Pure: no I/O.
import type { AckLine } from '../../examples/demo/ack-log.js';
import type { Produced } from '../../examples/demo/producer.js';
import { linesByShard } from './ack-log.js';

/**
 * A disruption the run caused (from the runner's action timeline). Graceful stops are not
 * disruptions: they commit and release, so they may cause no duplicate at all.
 */
export interface Disruption {
  readonly kind: 'crash' | 'zombie';
  readonly worker: string;
  /** When SIGKILL (crash) or SIGSTOP (zombie) was sent. */
  readonly at: number;
  /** Crash only: when the process was seen gone. SIGKILL is not instant: it may ack until then. */
  readonly goneAt?: number;
  /** Zombie only: when SIGCONT was sent. */
  readonly resumedAt?: number;
}

/**
 * What a worker reported about one shard's lease (from its events): `acquired` (position: where
 * its reading started), `commit` (a checkpoint written), `released` (final checkpoint written with
 * the release), `lost`. A position means "everything up to here is checkpointed"; none means
 * nothing is.
 */
export interface LeaseMark {
  readonly type: 'acquired' | 'commit' | 'released' | 'lost';
  readonly w: string;
  readonly shardId: string;
  readonly at: number;
  readonly seq?: string;
  readonly sub?: number;
  /** With `acquired`: the capture's fencing token (tokens only grow: a higher one captured later). */
  readonly token?: number;
}

/** The duplicate bound's parameters (the workers' options). */
export interface DuplicateBound {
  /** The workers' `commitFrequencyMs`. */
  readonly commitFrequencyMs: number;
  /**
   * Allowance for one commit write to land after it is due: the write, its retries under
   * injected faults (100 ms base backoff, doubling) and timer lateness on a loaded machine.
   */
  readonly commitGraceMs: number;
}

/** Everything the checker looks at. */
export interface TallyInput {
  readonly produced: readonly Produced[];
  readonly acks: readonly AckLine[];
  /** Each shard's parent shard ids (from ListShards). */
  readonly parents: ReadonlyMap<string, readonly string[]>;
  /** Chaos runs: the crashes and zombies. When given, every duplicate must be explained (see {@link tally}). */
  readonly disruptions?: readonly Disruption[];
  /** Chaos runs: the workers' lease marks (checkpoint positions for the duplicate rule; writes for the fencing rule). */
  readonly marks?: readonly LeaseMark[];
  /** Chaos runs: the duplicate bound. */
  readonly bound?: DuplicateBound;
  /**
   * Groups that start at `LATEST`: per shard, when it was first captured. A record produced before
   * that is not expected (the group began after it); a shard missing here expects every record.
   */
  readonly expectedAfter?: ReadonlyMap<string, number>;
  /** Worker processes that failed or exited without being told to (from the runner). */
  readonly deaths?: readonly { readonly w: string; readonly detail: string }[];
}

/** A broken promise, in words a reader can check against the logs. */
export interface Violation {
  readonly kind:
    | 'per-shard order' | 'parent after child' | 'unknown record' | 'unexplained duplicate'
    | 'duplicate window' | 'fenced write' | 'worker died';
  readonly detail: string;
}

/** The duplicates one disruption caused on one shard. */
export interface DisruptionDuplicates {
  /** Index into `TallyInput.disruptions`. */
  readonly disruption: number;
  readonly shardId: string;
  /** Distinct records delivered again. */
  readonly records: number;
  /**
   * How long before the disruption the earliest of them was acked by the disrupted worker (ms):
   * the window of acks the last commit had not covered. Must stay within commitFrequencyMs + commitGraceMs.
   */
  readonly exposureMs: number;
}

export interface Tally {
  readonly produced: number;
  /** Distinct produced records acked at least once. */
  readonly consumedUnique: number;
  /** Ack lines in all (deliveries that were processed). */
  readonly acks: number;
  /** Ack lines beyond the first for their record. */
  readonly duplicates: number;
  readonly duplicatesByShard: ReadonlyMap<string, number>;
  /** Chaos runs: duplicates attributed to each disruption, per shard. */
  readonly duplicatesByDisruption: readonly DisruptionDuplicates[];
  /** Produced records never acked (their data tags). */
  readonly lost: readonly string[];
  readonly violations: readonly Violation[];
}

interface Positioned {
  readonly seq: string;
  readonly sub?: number | undefined;
}

function bySequence(a: Positioned, b: Positioned): number {
  const x = BigInt(a.seq);
  const y = BigInt(b.seq);
  if (x !== y) return x < y ? -1 : 1;
  return (a.sub ?? Number.POSITIVE_INFINITY) - (b.sub ?? Number.POSITIVE_INFINITY);
}

/** Receipt order: emission time, then the worker's own counter (same worker, same millisecond). */
function byReceipt(a: AckLine, b: AckLine): number {
  return a.e - b.e || (a.w === b.w ? a.i - b.i : 0);
}

/**
 * Checks a run.
 *
 * - **Lost**: every produced record has at least one ack line (in a LATEST group, every record
 *   produced after its shard was first captured: see `expectedAfter`).
 * - **Per-shard order**: per shard, the first deliveries (earliest receipt of each record) come in
 *   sequence order.
 * - **Parents before children**: per partition key, every record of a parent shard was acked
 *   (its earliest ack) before any record of a child shard was received. A zombie's late second
 *   ack of a parent record does not count: the promise is about the group, and the group had it.
 * - **Duplicates** (when `disruptions` is given). A delivery of record r of shard S that is not
 *   r's first is explained by a disruption E of worker W when all of these hold:
 *   (a) W had r: a crash: W acked r before E; a zombie: kinsumer emitted r to W before E (the
 *       `r` of its ack line; W may ack it after it wakes up). A zombie must emit nothing of a
 *       lost shard after it wakes up: such a delivery explains nothing;
 *   (b) r lies after the last checkpoint W reported for S before E (its last `commit`,
 *       `released` or `acquired` mark): what W had checkpointed is never delivered again;
 *   (c) the delivery came after E began.
 *   Each duplicate is attributed to the latest such E. Per (E, S), every record W acked before E
 *   and that was delivered again was acked at most commitFrequencyMs + commitGraceMs before E —
 *   one commit interval's worth, plus the time for that commit to land.
 *   A duplicate no disruption explains is a violation, and so is a wider window.
 * - **Fencing** (when `marks` is given): no `commit` or `released` write of a client landed after
 *   another client captured the shard: a zombie must not write after losing (see fencingViolations).
 * - **Deaths**: every worker failure the runner reports is a violation.
 */
/** Whether the group must deliver `record`: always, unless it was produced before its shard's first capture in a LATEST group. */
export function isExpected(record: Pick<Produced, 'shardId' | 't'>, expectedAfter: ReadonlyMap<string, number> | undefined): boolean {
  const after = expectedAfter?.get(record.shardId);
  return after === undefined || record.t > after;
}

export function tally(input: TallyInput): Tally {
  const { produced, acks, parents } = input;
  const producedByData = new Map(produced.map((p) => [p.data, p] as const));
  const deliveries = new Map<string, AckLine[]>();
  const duplicatesByShard = new Map<string, number>();
  const violations: Violation[] = [];
  let duplicates = 0;
  for (const line of [...acks].sort(byReceipt)) {
    if (!producedByData.has(line.data)) {
      violations.push({ kind: 'unknown record', detail: `${line.w} acked ${line.data} (${line.shardId} ${line.seq}), which nobody produced` });
      continue;
    }
    const seen = deliveries.get(line.data);
    if (seen === undefined) {
      deliveries.set(line.data, [line]);
    } else {
      seen.push(line);
      duplicates += 1;
      duplicatesByShard.set(line.shardId, (duplicatesByShard.get(line.shardId) ?? 0) + 1);
    }
  }
  const first = new Map<string, AckLine>();
  for (const [data, lines] of deliveries) if (lines[0] !== undefined) first.set(data, lines[0]);
  const lost = produced.filter((p) => !first.has(p.data) && isExpected(p, input.expectedAfter)).map((p) => p.data);

  violations.push(...orderViolations(first.values()));
  violations.push(...parentViolations(deliveries, first, parents));
  let duplicatesByDisruption: DisruptionDuplicates[] = [];
  if (input.disruptions !== undefined) {
    const bound = input.bound ?? { commitFrequencyMs: 1000, commitGraceMs: 1000 };
    const checked = checkDuplicates(deliveries, input.disruptions, input.marks ?? [], bound);
    duplicatesByDisruption = checked.byDisruption;
    violations.push(...checked.violations);
  }
  if (input.marks !== undefined) violations.push(...fencingViolations(input.marks));
  for (const death of input.deaths ?? []) violations.push({ kind: 'worker died', detail: `${death.w}: ${death.detail}` });
  return {
    produced: produced.length, consumedUnique: first.size, acks: acks.length, duplicates, duplicatesByShard,
    duplicatesByDisruption, lost, violations,
  };
}

/** Per shard, the first delivery of each record must come in sequence order. */
function orderViolations(firsts: Iterable<AckLine>): Violation[] {
  const violations: Violation[] = [];
  const byShard = linesByShard(firsts);
  for (const [shardId, lines] of byShard) {
    const sorted = [...lines].sort(bySequence);
    for (let i = 1; i < sorted.length; i += 1) {
      const [before, after] = [sorted[i - 1], sorted[i]];
      if (before !== undefined && after !== undefined && byReceipt(before, after) > 0) {
        violations.push({ kind: 'per-shard order', detail: `${shardId}: ${after.data} (${after.seq}) received before ${before.data} (${before.seq})` });
      }
    }
  }
  return violations;
}

/** Per partition key, every parent record's earliest ack comes before any child record is received. */
function parentViolations(
  deliveries: ReadonlyMap<string, readonly AckLine[]>, first: ReadonlyMap<string, AckLine>, parents: ReadonlyMap<string, readonly string[]>,
): Violation[] {
  const violations: Violation[] = [];
  // shard|key → the record of that shard and key whose earliest ack came last.
  const lastParentAck = new Map<string, AckLine>();
  for (const lines of deliveries.values()) {
    const acked = lines.reduce<AckLine | undefined>((min, line) => (min === undefined || line.t < min.t ? line : min), undefined);
    if (acked === undefined) continue;
    const k = `${acked.shardId}|${acked.key}`;
    const seen = lastParentAck.get(k);
    if (seen === undefined || acked.t > seen.t) lastParentAck.set(k, acked);
  }
  for (const line of first.values()) {
    for (const parent of parents.get(line.shardId) ?? []) {
      const last = lastParentAck.get(`${parent}|${line.key}`);
      if (last !== undefined && last.t > line.e) {
        violations.push({ kind: 'parent after child', detail: `${line.key}: ${last.data} of parent ${parent} acked at ${last.t}, after ${line.data} of child ${line.shardId} was received at ${line.e}` });
      }
    }
  }
  return violations;
}

/** The position W had checkpointed for a shard just before `at` (`null`: none, so nothing is excluded). */
function checkpointBefore(marks: readonly LeaseMark[], w: string, shardId: string, at: number): Positioned | null {
  let latest: LeaseMark | undefined;
  for (const mark of marks) {
    if (mark.w !== w || mark.shardId !== shardId || mark.type === 'lost' || mark.at > at) continue;
    if (latest === undefined || mark.at >= latest.at) latest = mark;
  }
  return latest?.seq === undefined ? null : { seq: latest.seq, sub: latest.sub };
}

function checkDuplicates(
  deliveries: ReadonlyMap<string, readonly AckLine[]>, disruptions: readonly Disruption[], marks: readonly LeaseMark[], bound: DuplicateBound,
): { byDisruption: DisruptionDuplicates[]; violations: Violation[] } {
  const windowMs = bound.commitFrequencyMs + bound.commitGraceMs;
  const violations: Violation[] = [];
  // Latest first, so each duplicate goes to its closest cause.
  const order = disruptions.map((d, index) => ({ d, index })).sort((a, b) => b.d.at - a.d.at);
  const checkpoints = new Map<string, Positioned | null>();
  const checkpointOf = (index: number, d: Disruption, shardId: string) => {
    const key = `${index}|${shardId}`;
    if (!checkpoints.has(key)) checkpoints.set(key, checkpointBefore(marks, d.worker, shardId, d.at));
    return checkpoints.get(key) ?? null;
  };
  // A killed worker acts until it is gone, not only until the signal was sent.
  const lastAct = (d: Disruption) => (d.kind === 'crash' ? d.goneAt ?? d.at : d.at);
  const holds = (d: Disruption, h: AckLine) =>
    h.w === d.worker && (d.kind === 'crash' ? h.t <= lastAct(d) : (h.r ?? h.e) <= d.at);
  // (disruption, shard) → records delivered again, and the earliest ack the disrupted worker made of one.
  const groups = new Map<string, { disruption: number; shardId: string; records: Set<string>; earliestAck: number }>();
  for (const [data, lines] of deliveries) {
    for (const duplicate of lines.slice(1)) {
      const cause = order.find(({ d, index }) => {
        if (duplicate.e < d.at) return false;
        if (!lines.some((h) => holds(d, h))) return false;
        const checkpoint = checkpointOf(index, d, duplicate.shardId);
        return checkpoint === null || bySequence(duplicate, checkpoint) > 0;
      });
      if (cause === undefined) {
        const earlier = lines.filter((l) => l !== duplicate && byReceipt(l, duplicate) <= 0).map((l) => `${l.w}@${l.e}`).join(', ');
        violations.push({ kind: 'unexplained duplicate', detail: `${data} (${duplicate.shardId} ${duplicate.seq}) delivered again to ${duplicate.w} at ${duplicate.e} (before: ${earlier}); no crash or zombie explains it` });
        continue;
      }
      const key = `${cause.index}|${duplicate.shardId}`;
      const group = groups.get(key) ?? { disruption: cause.index, shardId: duplicate.shardId, records: new Set<string>(), earliestAck: Number.POSITIVE_INFINITY };
      groups.set(key, group);
      group.records.add(data);
      for (const h of lines) if (h.w === cause.d.worker && h.t <= lastAct(cause.d)) group.earliestAck = Math.min(group.earliestAck, h.t);
    }
  }
  const byDisruption: DisruptionDuplicates[] = [];
  for (const group of groups.values()) {
    const d = disruptions[group.disruption];
    if (d === undefined) continue;
    const exposureMs = Number.isFinite(group.earliestAck) ? Math.max(0, d.at - group.earliestAck) : 0;
    byDisruption.push({ disruption: group.disruption, shardId: group.shardId, records: group.records.size, exposureMs });
    if (exposureMs > windowMs) {
      violations.push({ kind: 'duplicate window', detail: `${d.kind} of ${d.worker} at ${d.at}: ${group.records.size} records of ${group.shardId} delivered again, the earliest acked ${exposureMs} ms before it (bound ${windowMs} ms)` });
    }
  }
  byDisruption.sort((a, b) => a.disruption - b.disruption || a.shardId.localeCompare(b.shardId));
  return { byDisruption, violations };
}

/**
 * No checkpoint write (commit or release) by a client lands after another client captured the
 * shard. A mark's time is when the worker learned of its write, not when the write landed: a
 * zombie frozen with a commit in flight learns after it wakes up of a write that landed before
 * the freeze. So a write reported after another client's capture is judged by its position: had
 * it landed after the capture, it would carry progress beyond the position that capture started
 * from (the capture reads the checkpoint; a write that landed before is what it read, or older).
 */
function fencingViolations(marks: readonly LeaseMark[]): Violation[] {
  const violations: Violation[] = [];
  const sorted = [...marks].sort((a, b) => a.at - b.at);
  const holder = new Map<string, LeaseMark>();
  const beyond = (write: LeaseMark, capture: LeaseMark) =>
    write.seq !== undefined && (capture.seq === undefined || bySequence({ seq: write.seq, sub: write.sub }, { seq: capture.seq, sub: capture.sub }) > 0);
  for (const mark of sorted) {
    // A capture reported after a later one (its client froze between the two): superseded already.
    const current = holder.get(mark.shardId);
    if (mark.type === 'acquired' && (current?.token === undefined || mark.token === undefined || mark.token > current.token)) holder.set(mark.shardId, mark);
    if (mark.type !== 'commit' && mark.type !== 'released') continue;
    const acquired = holder.get(mark.shardId);
    if (acquired !== undefined && acquired.w !== mark.w && beyond(mark, acquired)) {
      violations.push({ kind: 'fenced write', detail: `${mark.w} wrote a ${mark.type} of ${mark.shardId} (${String(mark.seq)}) reported at ${mark.at}, beyond ${String(acquired.seq)} where ${acquired.w}'s capture at ${acquired.at} started` });
    }
  }
  return violations;
}
