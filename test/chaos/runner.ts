// The chaos run: local Kinesis and DynamoDB, a fault proxy in front of each, 3–5 worker
// processes on one stream, a producer tagging records per partition key, and the seeded schedule
// of crashes, zombies, reshards and graceful restarts. At the end the independent checker
// (examples/demo/tally.ts) reads the ack logs and the timeline.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Shard } from '@aws-sdk/client-kinesis';
import { FLEET_TIMINGS, type WorkerProcess } from '../../examples/demo/fleet.js';
import { Producer } from '../../examples/demo/producer.js';
import { isPoison } from '../../examples/demo/poison.js';
import type { WorkerConfig } from '../../examples/demo/worker.js';
import { createTables } from '../../src/index.js';
import {
  createStream, listShards, mergeShards, splitShard, startLocalAws, type LocalAws,
} from '../../src/testing/index.js';
import { readAckLogs } from '../support/ack-log.js';
import { type FaultProxy, type FaultProxyCounts, startFaultProxy } from '../support/fault-proxy.js';
import { isExpected, tally, type Tally } from '../support/tally.js';
import {
  type DeadLetterCheck, type EffectsCheck, checkDeadLetters, checkTotals, createUserTable, effectsFaultRules, expectedTotals, readTotals, splitRedeliveries, totalsReached,
} from './effects.js';
import { DYNAMODB_FAULTS, KINESIS_FAULTS, faultRules } from './faults.js';
import { FleetControl } from './fleet-control.js';
import { disruptions, failovers, leaseMarks, recoveries, type Failovers, type Recovery } from './metrics.js';
import { pickAt } from './random.js';
import { type PlannedAction, planSchedule } from './schedule.js';
import type { ActionRecord, WorkerEventRecord } from './timeline.js';

/** The workers' timings: the demo's (small, so a short run sees every failover). */
export const CHAOS_TIMINGS = FLEET_TIMINGS;

/**
 * The duplicate bound's allowance for one commit to land after it is due: a write through the
 * fault proxy, a retry or two (100 ms base backoff, doubling, full jitter), and timers firing
 * late on a 2-core machine running all of this at once.
 */
export const COMMIT_GRACE_MS = 1500;

export interface ChaosOptions {
  readonly durationMs: number;
  readonly workers: number;
  readonly seed: number;
  /** Share of every AWS call of the workers that is faulted. Default 0.05. */
  readonly faultRate?: number;
  /** Records a second the producer writes. Default 100 (50 with `effects`). */
  readonly perSecond?: number;
  /** Partition keys. Default 64. */
  readonly keys?: number;
  /**
   * Where the group starts on shards without a checkpoint. Default `'TRIM_HORIZON'`. With
   * `'LATEST'` the checker expects every record produced after its shard was first captured, and the
   * producer starts once every initial shard was captured: a record put between a capture and the
   * first GetShardIterator is before the group's start by LATEST's own definition, and a checker
   * timed on the capture could not tell it from a lost one.
   */
  readonly initialPosition?: 'TRIM_HORIZON' | 'LATEST';
  /** Open shards at the start. Default 4. */
  readonly initialShards?: number;
  /** How long to wait, after the window, for every produced record to be acked. Default 90 s (300 s with `effects`). */
  readonly drainTimeoutMs?: number;
  /**
   * Effects exactly once (design §8.1): the workers ack each record with a write adding its amount
   * to its key's total, on Amazon's DynamoDB Local; the run checks every total. Default `false`.
   */
  readonly effects?: boolean;
  /**
   * With `effects`: about this many records in a thousand are poison (design §9.3): the handler
   * exits its process on them, every time (the fleet starts it again); after `maxDeliveries` (3)
   * each is dead-lettered, once. Default 0: none.
   */
  readonly poisonPermille?: number;
  /** Progress lines. Default: none. */
  readonly log?: (line: string) => void;
}

export interface ChaosResult {
  readonly startedAt: number;
  readonly finishedAt: number;
  readonly options: Required<Omit<ChaosOptions, 'log'>>;
  readonly runDir: string;
  readonly stream: string;
  readonly schedule: readonly PlannedAction[];
  readonly actions: readonly ActionRecord[];
  readonly tally: Tally;
  readonly failovers: Failovers;
  readonly recoveries: readonly Recovery[];
  readonly faults: { readonly kinesis: FaultProxyCounts; readonly dynamodb: FaultProxyCounts };
  /** Events of every worker, counted by type (`retrying`: faults that reached kinsumer's retries). */
  readonly eventCounts: Readonly<Record<string, number>>;
  readonly drained: boolean;
  readonly producerErrors: number;
  /** With `effects`: what the totals came to. */
  readonly effects?: EffectsCheck;
  /** With `poisonPermille`: the dead letters, and the processes poison killed. */
  readonly deadLetters?: DeadLetterCheck & { readonly poisoned: number };
}

const until = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));

export async function runChaos(input: ChaosOptions): Promise<ChaosResult> {
  const options = {
    durationMs: input.durationMs, workers: input.workers, seed: input.seed,
    // DynamoDB Local runs one transaction at a time for the whole fleet: an effects run produces
    // half as fast, and gets longer to drain what is left at the end.
    faultRate: input.faultRate ?? 0.05, perSecond: input.perSecond ?? (input.effects === true ? 50 : 100), keys: input.keys ?? 64,
    initialShards: input.initialShards ?? 4, drainTimeoutMs: input.drainTimeoutMs ?? (input.effects === true ? 300_000 : 90_000),
    initialPosition: input.initialPosition ?? 'TRIM_HORIZON', effects: input.effects ?? false, poisonPermille: input.effects === true ? input.poisonPermille ?? 0 : 0,
  };
  const log = input.log ?? (() => undefined);
  const startedAt = Date.now();
  const runDir = mkdtempSync(join(tmpdir(), 'kinsumer-chaos-'));
  const stream = `chaos-${options.seed}`;
  const applicationName = `chaos-${options.seed}`;
  const local = await startLocalAws(options.effects ? { dynamodb: 'dynamodb-local' } : {});
  const totalsTable = `${applicationName}_totals`;
  const deadLettersTable = `${applicationName}_dead_letters`;
  const proxies: FaultProxy[] = [];
  let config: (id: string) => WorkerConfig = () => { throw new Error('not ready'); };
  const fleet = new FleetControl((id) => config(id));
  try {
    await createStream(local.kinesis, stream, options.initialShards);
    await createTables({ dynamodb: local.dynamodb, applicationName });
    if (options.effects) await createUserTable(local, totalsTable, 'account');
    if (options.poisonPermille > 0) await createUserTable(local, deadLettersTable, 'record');
    const kinesisProxy = await startFaultProxy({ target: local.endpoints.kinesis, seed: options.seed, rules: faultRules(options.faultRate, KINESIS_FAULTS) });
    proxies.push(kinesisProxy);
    const dynamoRules = options.effects ? effectsFaultRules(options.faultRate) : faultRules(options.faultRate, DYNAMODB_FAULTS);
    const dynamoProxy = await startFaultProxy({ target: local.endpoints.dynamodb, seed: options.seed + 1, rules: dynamoRules });
    proxies.push(dynamoProxy);
    const ids = Array.from({ length: options.workers }, (_, i) => `w${i + 1}`);
    config = (id) => ({
      id,
      logDir: runDir,
      aws: { region: local.region, credentials: local.credentials, endpoints: { kinesis: kinesisProxy.endpoint, dynamodb: dynamoProxy.endpoint } },
      options: { ...CHAOS_TIMINGS, streamName: stream, applicationName, initialPosition: options.initialPosition },
      // One SDK attempt: every injected fault reaches kinsumer's own retries.
      maxAttempts: 1,
      // Every other worker processes 4 records at once, acking out of order (the checkpoint must follow the gaps).
      ...(ids.indexOf(id) % 2 === 1 ? { concurrency: 4, processingMs: 2 } : {}),
      ...(options.effects ? { effects: { table: totalsTable } } : {}),
      ...(options.poisonPermille > 0 ? { poison: { deadLetters: deadLettersTable, permille: options.poisonPermille, maxDeliveries: 3 } } : {}),
    });

    // The producer writes straight to the server: its ledger must be exact, and the faults are for the consumers.
    const producer = new Producer(local.kinesis, stream, options.keys);
    const producing = new AbortController();
    let producerErrors = 0;
    const produce = () => producer.run(options.perSecond, producing.signal, () => { producerErrors += 1; });
    let production = options.initialPosition === 'LATEST' ? undefined : produce();
    for (const id of ids) fleet.start(id);
    log(`run ${runDir}: ${options.workers} workers on ${stream} (${options.initialShards} shards, from ${options.initialPosition}), seed ${options.seed}, faults ${options.faultRate * 100} %`);
    await waitFor(() => fleet.running().every((w) => w.events.some((e) => e.type === 'rebalance')), 60_000);
    if (production === undefined) {
      const initial = (await listShards(local.kinesis, stream)).map((s) => s.ShardId ?? '');
      await waitFor(() => initial.every((shardId) => firstCaptures(fleet.events()).has(shardId)), 60_000);
      production = produce();
    }
    log(`workers up after ${Date.now() - startedAt} ms`);

    const windowStart = Date.now();
    const windowEnd = windowStart + options.durationMs;
    const schedule = planSchedule({
      durationMs: options.durationMs, workers: options.workers, seed: options.seed, leaseTtlMs: CHAOS_TIMINGS.leaseTtlMs,
      initialShards: options.initialShards, minShards: 2, maxShards: 2 * options.initialShards,
    });
    const actions: ActionRecord[] = [];
    for (const planned of schedule) {
      await until(windowStart + planned.atMs);
      // Actions that run late (a slow graceful stop) push the rest back: past the window's end,
      // only a kind not done yet still goes, so a short run keeps its one of each.
      const late = Date.now() > windowEnd - 2 * CHAOS_TIMINGS.leaseTtlMs;
      if (late && actions.some((a) => a.kind === planned.kind && a.skipped === undefined)) continue;
      const done = await perform(planned, { fleet, local, stream, ids });
      actions.push(done);
      log(`${((done.at - windowStart) / 1000).toFixed(1)} s ${done.kind}${done.worker === undefined ? '' : ` ${done.worker}`} ${done.shards.join(' ')}${done.children === undefined ? '' : ` → ${done.children.join(' ')}`}${done.skipped === undefined ? '' : ` (skipped: ${done.skipped})`}`);
    }
    // Records keep flowing for two lease TTLs after the last action, so its failover is seen under load.
    await until(Math.max(windowEnd, Date.now() + 2 * CHAOS_TIMINGS.leaseTtlMs));
    producing.abort();
    await production;
    log(`produced ${producer.produced.length} records; waiting for every one to be acked`);

    const expectedAfter = options.initialPosition === 'LATEST' ? firstCaptures(fleet.events()) : undefined;
    const wanted = new Set(producer.produced.filter((p) => isExpected(p, expectedAfter)).map((p) => p.data));
    const drained = await waitFor(() => {
      const acked = new Set(readAckLogs(runDir).map((l) => l.data));
      for (const data of wanted) if (!acked.has(data)) return false;
      return true;
    }, options.drainTimeoutMs, 1000);
    // With effects, acked is not enough: the writes commit with the checkpoint, a moment later.
    const expected = expectedTotals(producer.produced);
    if (options.effects) await waitForAsync(async () => totalsReached(expected, await readTotals(local, totalsTable)), options.drainTimeoutMs, 1000);
    await fleet.stopAll();
    const totals = options.effects ? await readTotals(local, totalsTable) : undefined;
    const poison = producer.produced.map((p) => p.data).filter((data) => isPoison(data, options.poisonPermille));
    const deadLetters = options.poisonPermille > 0 ? { ...await checkDeadLetters(local, deadLettersTable, poison), poisoned: fleet.poisoned } : undefined;
    const shards = await listShards(local.kinesis, stream);
    const faults = { kinesis: kinesisProxy.counts(), dynamodb: dynamoProxy.counts() };
    const events = fleet.events();
    writeFileSync(join(runDir, 'events.jsonl'), events.map((e) => JSON.stringify(e)).join('\n'));
    writeFileSync(join(runDir, 'timeline.json'), JSON.stringify({ schedule, actions }, null, 1));
    writeFileSync(join(runDir, 'produced.jsonl'), producer.produced.map((p) => JSON.stringify(p)).join('\n'));
    writeFileSync(join(runDir, 'shards.json'), JSON.stringify(shards, null, 1));
    const marks = leaseMarks(events);
    const acks = readAckLogs(runDir);
    const parents = parentMap(shards);
    const checked = tally({
      produced: producer.produced, acks, parents, disruptions: disruptions(actions), marks,
      ...(expectedAfter === undefined ? {} : { expectedAfter: firstCaptures(events) }),
      bound: { commitFrequencyMs: CHAOS_TIMINGS.commitFrequencyMs, commitGraceMs: COMMIT_GRACE_MS },
      deaths: fleet.deaths(),
    });
    const split = totals === undefined ? undefined : splitRedeliveries(checked);
    const result = split?.tally ?? checked;
    const effects: EffectsCheck | undefined = totals === undefined ? undefined : checkTotals(totalsTable, expected, totals, split?.redeliveries.length ?? 0);
    return {
      startedAt, finishedAt: Date.now(), options, runDir, stream, schedule, actions, tally: result,
      failovers: failovers(marks), recoveries: recoveries(actions, acks, parents), faults,
      eventCounts: countByType(events), drained, producerErrors, ...(effects === undefined ? {} : { effects }), ...(deadLetters === undefined ? {} : { deadLetters }),
    };
  } finally {
    await Promise.all(fleet.running().map((w) => w.kill()));
    await Promise.allSettled(proxies.map((p) => p.stop()));
    await local.stop();
  }
}

/** When each shard was first captured by any worker (the start of a LATEST group on that shard). */
function firstCaptures(events: readonly WorkerEventRecord[]): Map<string, number> {
  const first = new Map<string, number>();
  for (const event of events) {
    if (event.type !== 'lease-acquired' || event.shardId === undefined) continue;
    const seen = first.get(event.shardId);
    if (seen === undefined || event.at < seen) first.set(event.shardId, event.at);
  }
  return first;
}

interface Context {
  readonly fleet: FleetControl;
  readonly local: LocalAws;
  readonly stream: string;
  readonly ids: readonly string[];
}

async function perform(planned: PlannedAction, context: Context): Promise<ActionRecord> {
  const { fleet, local, stream } = context;
  const at = Date.now();
  const skip = (why: string): ActionRecord => ({ kind: planned.kind, at, endedAt: Date.now(), shards: [], skipped: why });
  switch (planned.kind) {
    case 'kill': {
      const victim = chooseVictim(planned, context);
      if (victim === undefined) return skip('no worker running');
      const shards = victim.held();
      const killedAt = Date.now();
      const exitedAt = await fleet.kill(victim);
      await until(killedAt + planned.holdMs);
      fleet.start(victim.id);
      return { kind: 'kill', at: killedAt, endedAt: Date.now(), worker: victim.id, shards, exitedAt };
    }
    case 'zombie': {
      const victim = chooseVictim(planned, context);
      if (victim === undefined) return skip('no worker running');
      const shards = victim.held();
      const pausedAt = Date.now();
      victim.pause();
      await until(pausedAt + planned.holdMs);
      const resumedAt = Date.now();
      victim.resume();
      return { kind: 'zombie', at: pausedAt, endedAt: resumedAt, worker: victim.id, shards, resumedAt };
    }
    case 'restart': {
      const victim = chooseVictim(planned, context);
      if (victim === undefined) return skip('no worker running');
      const shards = victim.held();
      const stoppedAt = Date.now();
      const exitedAt = await fleet.stop(victim);
      await until(exitedAt + planned.holdMs);
      fleet.start(victim.id);
      return { kind: 'restart', at: stoppedAt, endedAt: Date.now(), worker: victim.id, shards, exitedAt };
    }
    case 'split': {
      const open = openShards(await listShards(local.kinesis, stream));
      const parent = pickAt(open, planned.pick)?.ShardId;
      if (parent === undefined) return skip('no open shard');
      const children = await splitShard(local.kinesis, stream, parent);
      return { kind: 'split', at, endedAt: Date.now(), shards: [parent], children };
    }
    case 'merge': {
      const pair = pickAt(adjacentPairs(await listShards(local.kinesis, stream)), planned.pick);
      if (pair === undefined) return skip('no two adjacent open shards');
      const child = await mergeShards(local.kinesis, stream, pair[0], pair[1]);
      return { kind: 'merge', at, endedAt: Date.now(), shards: pair, children: [child] };
    }
  }
}

/** The planned worker if it runs and holds a shard, else the next one round that does, else any running one. */
function chooseVictim(planned: PlannedAction, { fleet, ids }: Context): WorkerProcess | undefined {
  const order = ids.map((_, i) => ids[(planned.worker + i) % ids.length] ?? '');
  const running = order.map((id) => fleet.get(id)).filter((w): w is WorkerProcess => w?.running === true);
  return running.find((w) => w.held().length > 0) ?? running[0];
}

function openShards(shards: readonly Shard[]): Shard[] {
  return shards
    .filter((s) => s.SequenceNumberRange?.EndingSequenceNumber === undefined)
    .sort((a, b) => (BigInt(a.HashKeyRange?.StartingHashKey ?? '0') < BigInt(b.HashKeyRange?.StartingHashKey ?? '0') ? -1 : 1));
}

/** Open shards whose hash key ranges touch, in hash order. */
export function adjacentPairs(shards: readonly Shard[]): Array<[string, string]> {
  const open = openShards(shards);
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i + 1 < open.length; i += 1) {
    const [a, b] = [open[i], open[i + 1]];
    if (a?.ShardId !== undefined && b?.ShardId !== undefined && BigInt(a.HashKeyRange?.EndingHashKey ?? '-2') + 1n === BigInt(b.HashKeyRange?.StartingHashKey ?? '-1')) {
      pairs.push([a.ShardId, b.ShardId]);
    }
  }
  return pairs;
}

function parentMap(shards: readonly Shard[]): Map<string, string[]> {
  return new Map(shards.map((s) => [s.ShardId ?? '', [s.ParentShardId, s.AdjacentParentShardId].filter((p): p is string => p !== undefined)]));
}

function countByType(events: readonly WorkerEventRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const event of events) counts[event.type] = (counts[event.type] ?? 0) + 1;
  return counts;
}

/** As {@link waitFor}, for a condition that has to ask a server. */
async function waitForAsync(condition: () => Promise<boolean>, timeoutMs: number, intervalMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Polls until the condition holds or the deadline passes; says which. */
async function waitFor(condition: () => boolean, timeoutMs: number, intervalMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
