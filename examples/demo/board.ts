// What the demo's live view shows, computed from what the run has seen so far: the shard list, what
// the producer put, the workers' ack logs and their events, and what the demo did to them (kill,
// restart, split). Pure: the same input gives the same view, so it is tested without processes.
import type { AckLine } from './ack-log.js';

/** A shard as ListShards described it. */
export interface ShardInfo {
  readonly shardId: string;
  readonly parents: readonly string[];
  /** Has an ending sequence number: no new records (a parent after a split). */
  readonly closed: boolean;
}

/** A put record: where it landed and when. */
export interface PutRecord {
  readonly data: string;
  readonly shardId: string;
  readonly seq: string;
  readonly t: number;
}

/** A worker event as it came over IPC, with its arrival time. */
export interface TimedEvent {
  readonly type: string;
  readonly at: number;
  readonly shardId?: string;
  readonly [field: string]: unknown;
}

/** One worker process (a restarted worker is a second process with the same id). */
export interface ProcessSnapshot {
  readonly id: string;
  readonly pid: number | undefined;
  readonly running: boolean;
  readonly exit?: { readonly code: number | null; readonly signal: string | null; readonly at: number };
  readonly events: readonly TimedEvent[];
}

/** What the demo did to the fleet and the stream. */
export type Incident =
  | { readonly kind: 'kill'; readonly worker: string; readonly pid: number | undefined; readonly at: number; readonly held: readonly string[] }
  | { readonly kind: 'restart'; readonly worker: string; readonly pid: number | undefined; readonly at: number }
  | { readonly kind: 'split'; readonly parent: string; readonly children: readonly string[]; readonly at: number };

export type Phase = 'starting' | 'running' | 'draining' | 'stopping' | 'done';

export interface BoardInput {
  readonly now: number;
  /** When the run started: the one clock of the view and its notes, from start-up to the end. */
  readonly startedAt: number;
  /** When the producer started; `undefined` while the workers are still taking their leases. */
  readonly producerStartedAt?: number | undefined;
  /** When the producer stopped; `undefined` while it runs. */
  readonly producerStoppedAt?: number | undefined;
  /** How long the producer runs. */
  readonly durationMs: number;
  /** Records a second the producer aims at. */
  readonly targetRate: number;
  /** The workers' `leaseTtlMs`: what a failover waits out. */
  readonly leaseTtlMs?: number | undefined;
  readonly phase: Phase;
  readonly shards: readonly ShardInfo[];
  readonly produced: readonly PutRecord[];
  readonly acks: readonly AckLine[];
  /** Every worker process started, in start order. */
  readonly processes: readonly ProcessSnapshot[];
  readonly incidents: readonly Incident[];
  /** Window of the rates. Default 2000. */
  readonly rateWindowMs?: number;
}

export type ShardState = 'open' | 'closed' | 'finished';

export interface ShardRow {
  readonly shardId: string;
  readonly parents: readonly string[];
  /** Worker holding the lease now; `undefined` while nobody does (after a crash, before a parent finishes). */
  readonly owner: string | undefined;
  /** Distinct records of this shard acked so far. */
  readonly consumed: number;
  /** Records put to this shard after its checkpoint. */
  readonly lagRecords: number;
  /** Age of the oldest record after the checkpoint (0 when none). */
  readonly lagMs: number;
  readonly state: ShardState;
}

export type WorkerState = 'starting' | 'running' | 'killed' | 'stopped' | 'exited';

export interface WorkerRow {
  readonly id: string;
  readonly pid: number | undefined;
  readonly state: WorkerState;
  readonly shards: readonly string[];
  /** Acks a second over the rate window. */
  readonly rate: number;
  /** Acks in all, over every process of this id. */
  readonly acked: number;
}

/** A moment worth telling: it gets one line, once. */
export interface Note {
  /** Stable identity: a note is printed once however often the view is computed. */
  readonly key: string;
  /** Ms since the start of the run. */
  readonly at: number;
  readonly kind: 'kill' | 'failover' | 'restart' | 'split' | 'finished' | 'handoff';
  readonly text: string;
}

export interface ViewModel {
  /** Since the run started (one clock for the whole run). */
  readonly elapsedMs: number;
  /** Since the producer started; `undefined` before. */
  readonly producerElapsedMs: number | undefined;
  readonly durationMs: number;
  readonly phase: Phase;
  readonly produced: number;
  /** The producer's average over its run so far (records a second): the figure to hold against the target. */
  readonly producedRate: number;
  readonly targetRate: number;
  readonly consumedUnique: number;
  readonly duplicates: number;
  readonly shards: readonly ShardRow[];
  readonly workers: readonly WorkerRow[];
  readonly notes: readonly Note[];
  /** Kill to the last of the dead worker's shards delivering a record again; `undefined` until then. */
  readonly failoverMs: number | undefined;
  /** Split parent finished to the last of its children delivering its first record; `undefined` until then. */
  readonly handoffMs: number | undefined;
}

/** `shardId-000000000004` → `shard-4`: the view is narrow. */
export function shortShard(shardId: string): string {
  const match = /^shardId-0*(\d+)$/.exec(shardId);
  return match === null ? shardId : `shard-${match[1]}`;
}

/** Shards each running process holds, from its lease events. */
export function heldShards(process: ProcessSnapshot): string[] {
  if (!process.running) return [];
  const held = new Set<string>();
  for (const event of process.events) {
    if (event.shardId === undefined) continue;
    if (event.type === 'lease-acquired') held.add(event.shardId);
    if (event.type === 'lease-released' || event.type === 'lease-lost') held.delete(event.shardId);
  }
  return [...held].sort();
}

function checkpointSeq(event: TimedEvent): bigint | undefined {
  if (event.type !== 'checkpoint' && event.type !== 'lease-released') return undefined;
  const checkpoint = event.checkpoint as { sequenceNumber?: unknown } | undefined;
  return typeof checkpoint?.sequenceNumber === 'string' ? BigInt(checkpoint.sequenceNumber) : undefined;
}

function isFinishing(event: TimedEvent): boolean {
  return event.type === 'shard-finished' || ((event.type === 'checkpoint' || event.type === 'lease-released') && event.finished === true);
}

/** When and by whom each shard was first seen finished. */
function finishedShards(processes: readonly ProcessSnapshot[]): Map<string, { at: number; by: string }> {
  const finished = new Map<string, { at: number; by: string }>();
  for (const process of processes) {
    for (const event of process.events) {
      if (event.shardId === undefined || !isFinishing(event)) continue;
      const seen = finished.get(event.shardId);
      if (seen === undefined || event.at < seen.at) finished.set(event.shardId, { at: event.at, by: process.id });
    }
  }
  return finished;
}

function workerState(process: ProcessSnapshot): WorkerState {
  if (process.running) return process.events.some((e) => e.type === 'lease-acquired' || e.type === 'rebalance') ? 'running' : 'starting';
  if (process.exit?.signal === 'SIGKILL') return 'killed';
  return process.exit?.code === 0 ? 'stopped' : 'exited';
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** A setting as written in options: `500 ms`, `3 s`, `1.5 s`. */
export function settingText(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Number((ms / 1000).toFixed(1))} s`;
}

/** The moments of the run, in time order: kill, failover, restart, split, parent finished, handoff. */
export function timeline(input: Pick<BoardInput, 'startedAt' | 'acks' | 'processes' | 'incidents' | 'leaseTtlMs'>): Pick<ViewModel, 'notes' | 'failoverMs' | 'handoffMs'> {
  const { startedAt, acks, processes, incidents, leaseTtlMs } = input;
  const lease = leaseTtlMs === undefined ? 'its lease' : `its ${settingText(leaseTtlMs)} lease`;
  const notes: Note[] = [];
  const since = (at: number) => at - startedAt;
  // First acked record per shard received after a moment: who delivered it, when.
  const firstAfter = (shardId: string, after: number): AckLine | undefined => {
    let best: AckLine | undefined;
    for (const line of acks) {
      if (line.shardId === shardId && line.e > after && (best === undefined || line.e < best.e)) best = line;
    }
    return best;
  };
  let failoverMs: number | undefined;
  let handoffMs: number | undefined;
  const finished = finishedShards(processes);
  for (const incident of incidents) {
    if (incident.kind === 'kill') {
      const held = incident.held.map(shortShard).join(', ') || 'nothing';
      notes.push({ key: `kill:${incident.worker}:${incident.at}`, at: since(incident.at), kind: 'kill', text: `SIGKILL ${incident.worker} (pid ${incident.pid ?? '?'}) while it held ${held}: no release, no final commit` });
      const delays: number[] = [];
      for (const shardId of incident.held) {
        const first = firstAfter(shardId, incident.at);
        if (first === undefined) continue;
        delays.push(first.e - incident.at);
        notes.push({
          key: `failover:${shardId}:${incident.at}`, at: since(first.e), kind: 'failover',
          text: `failover ${shortShard(shardId)}: ${incident.worker} -> ${first.w}, records flowing again ${seconds(first.e - incident.at)} after the kill (${lease} had to expire)`,
        });
      }
      if (incident.held.length > 0 && delays.length === incident.held.length) failoverMs = Math.max(failoverMs ?? 0, ...delays);
    } else if (incident.kind === 'restart') {
      notes.push({ key: `restart:${incident.worker}:${incident.at}`, at: since(incident.at), kind: 'restart', text: `restarted ${incident.worker} (pid ${incident.pid ?? '?'}), same client id: it rejoins and the shards rebalance` });
    } else {
      notes.push({ key: `split:${incident.parent}`, at: since(incident.at), kind: 'split', text: `split ${shortShard(incident.parent)} -> ${incident.children.map(shortShard).join(' + ')}: children wait until the parent is read to its end` });
      const done = finished.get(incident.parent);
      if (done === undefined) continue;
      notes.push({ key: `finished:${incident.parent}`, at: since(done.at), kind: 'finished', text: `${shortShard(incident.parent)} finished: ${done.by} read it to its end and checkpointed it as finished` });
      const delays: number[] = [];
      for (const child of incident.children) {
        const first = firstAfter(child, 0);
        if (first === undefined) continue;
        delays.push(first.e - done.at);
        notes.push({
          key: `handoff:${child}`, at: since(first.e), kind: 'handoff',
          text: `handoff ${shortShard(incident.parent)} -> ${shortShard(child)}: first record on ${first.w}, ${seconds(first.e - done.at)} after the parent finished`,
        });
      }
      if (incident.children.length > 0 && delays.length === incident.children.length) handoffMs = Math.max(handoffMs ?? 0, ...delays);
    }
  }
  notes.sort((a, b) => a.at - b.at);
  return { notes, failoverMs, handoffMs };
}

/** The view of the run at `input.now`. */
export function buildView(input: BoardInput): ViewModel {
  const { now, startedAt, produced, acks, processes } = input;
  const windowMs = input.rateWindowMs ?? 2000;
  const finished = finishedShards(processes);

  const checkpoints = new Map<string, bigint>();
  for (const process of processes) {
    for (const event of process.events) {
      const seq = checkpointSeq(event);
      if (seq === undefined || event.shardId === undefined) continue;
      const seen = checkpoints.get(event.shardId);
      if (seen === undefined || seq > seen) checkpoints.set(event.shardId, seq);
    }
  }
  const owners = new Map<string, string>();
  for (const process of processes) for (const shardId of heldShards(process)) owners.set(shardId, process.id);

  const consumedByShard = new Map<string, Set<string>>();
  const seen = new Set<string>();
  for (const line of acks) {
    seen.add(line.data);
    const set = consumedByShard.get(line.shardId) ?? new Set<string>();
    set.add(line.data);
    consumedByShard.set(line.shardId, set);
  }
  const lag = new Map<string, { records: number; oldest: number }>();
  for (const record of produced) {
    const checkpoint = checkpoints.get(record.shardId);
    if (finished.has(record.shardId) || (checkpoint !== undefined && BigInt(record.seq) <= checkpoint)) continue;
    const entry = lag.get(record.shardId) ?? { records: 0, oldest: record.t };
    lag.set(record.shardId, { records: entry.records + 1, oldest: Math.min(entry.oldest, record.t) });
  }
  const shards: ShardRow[] = input.shards.map((shard) => {
    const behind = lag.get(shard.shardId);
    return {
      shardId: shard.shardId,
      parents: shard.parents,
      owner: owners.get(shard.shardId),
      consumed: consumedByShard.get(shard.shardId)?.size ?? 0,
      lagRecords: behind?.records ?? 0,
      lagMs: behind === undefined ? 0 : Math.max(0, now - behind.oldest),
      state: finished.has(shard.shardId) ? 'finished' : shard.closed ? 'closed' : 'open',
    };
  });

  // One row per worker id: its latest process.
  const latest = new Map<string, ProcessSnapshot>();
  for (const process of processes) latest.set(process.id, process);
  const workers: WorkerRow[] = [...latest.values()].map((process) => {
    const mine = acks.filter((line) => line.w === process.id);
    return {
      id: process.id,
      pid: process.pid,
      state: workerState(process),
      shards: heldShards(process),
      rate: process.running ? mine.filter((line) => line.t > now - windowMs && line.t <= now).length / (windowMs / 1000) : 0,
      acked: mine.length,
    };
  });

  // An average over the producer's run, not a recent window: it does not decay once the producer
  // stops, so the end of the run shows the rate the run actually had.
  const { producerStartedAt, producerStoppedAt } = input;
  const producingMs = producerStartedAt === undefined ? 0 : Math.min(now, producerStoppedAt ?? now) - producerStartedAt;
  const { notes, failoverMs, handoffMs } = timeline(input);
  return {
    elapsedMs: Math.max(0, now - startedAt),
    producerElapsedMs: producerStartedAt === undefined ? undefined : Math.max(0, now - producerStartedAt),
    durationMs: input.durationMs,
    phase: input.phase,
    produced: produced.length,
    producedRate: producingMs > 0 ? produced.length / (producingMs / 1000) : 0,
    targetRate: input.targetRate,
    consumedUnique: seen.size,
    duplicates: acks.length - seen.size,
    shards,
    workers,
    notes,
    failoverMs,
    handoffMs,
  };
}
