// The independent checker of a fleet run: from what the producer put and what the workers logged
// as acked, it counts and checks the promises — nothing lost, per-shard order, parents before
// children, duplicates. Pure: no I/O.
import type { AckLine } from './ack-log.js';
import type { Produced } from './producer.js';

/** Everything the checker looks at. */
export interface TallyInput {
  readonly produced: readonly Produced[];
  readonly acks: readonly AckLine[];
  /** Each shard's parent shard ids (from ListShards). */
  readonly parents: ReadonlyMap<string, readonly string[]>;
}

/** A broken promise, in words a reader can check against the logs. */
export interface Violation {
  readonly kind: 'per-shard order' | 'parent after child' | 'unknown record';
  readonly detail: string;
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
  /** Produced records never acked (their data tags). */
  readonly lost: readonly string[];
  readonly violations: readonly Violation[];
}

function bySequence(a: { seq: string; sub?: number | undefined }, b: { seq: string; sub?: number | undefined }): number {
  const x = BigInt(a.seq);
  const y = BigInt(b.seq);
  if (x !== y) return x < y ? -1 : 1;
  return (a.sub ?? Number.POSITIVE_INFINITY) - (b.sub ?? Number.POSITIVE_INFINITY);
}

/** Receipt order: emission time, then the worker's own counter (same worker, same millisecond). */
function byReceipt(a: AckLine, b: AckLine): number {
  return a.e - b.e || (a.w === b.w ? a.i - b.i : 0);
}

export function tally(input: TallyInput): Tally {
  const { produced, acks, parents } = input;
  const producedByData = new Map(produced.map((p) => [p.data, p] as const));
  const first = new Map<string, AckLine>();
  const duplicatesByShard = new Map<string, number>();
  const violations: Violation[] = [];
  let duplicates = 0;
  for (const line of [...acks].sort(byReceipt)) {
    if (!producedByData.has(line.data)) {
      violations.push({ kind: 'unknown record', detail: `${line.w} acked ${line.data} (${line.shardId} ${line.seq}), which nobody produced` });
      continue;
    }
    if (first.has(line.data)) {
      duplicates += 1;
      duplicatesByShard.set(line.shardId, (duplicatesByShard.get(line.shardId) ?? 0) + 1);
    } else {
      first.set(line.data, line);
    }
  }
  const lost = produced.filter((p) => !first.has(p.data)).map((p) => p.data);

  // Per shard, the first delivery of each record must come in sequence order.
  const firstsByShard = new Map<string, AckLine[]>();
  for (const line of first.values()) firstsByShard.set(line.shardId, [...(firstsByShard.get(line.shardId) ?? []), line]);
  for (const [shardId, lines] of firstsByShard) {
    const sorted = [...lines].sort(bySequence);
    for (let i = 1; i < sorted.length; i += 1) {
      const [before, after] = [sorted[i - 1], sorted[i]];
      if (before !== undefined && after !== undefined && byReceipt(before, after) > 0) {
        violations.push({ kind: 'per-shard order', detail: `${shardId}: ${after.data} (${after.seq}) received before ${before.data} (${before.seq})` });
      }
    }
  }

  // Per partition key, every parent record is acked before any child record is received.
  const lastParentAck = new Map<string, AckLine>();
  for (const line of acks) {
    const k = `${line.shardId}|${line.key}`;
    const seen = lastParentAck.get(k);
    if (seen === undefined || line.t > seen.t) lastParentAck.set(k, line);
  }
  for (const line of first.values()) {
    for (const parent of parents.get(line.shardId) ?? []) {
      const last = lastParentAck.get(`${parent}|${line.key}`);
      if (last !== undefined && last.t > line.e) {
        violations.push({ kind: 'parent after child', detail: `${line.key}: ${last.data} of parent ${parent} acked at ${last.t}, after ${line.data} of child ${line.shardId} was received at ${line.e}` });
      }
    }
  }
  return {
    produced: produced.length, consumedUnique: first.size, acks: acks.length, duplicates, duplicatesByShard,
    lost, violations,
  };
}
