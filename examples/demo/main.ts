// `npm start`: kinsumer on embedded local servers, no AWS account. A producer writes to a 4-shard
// stream, three worker processes share it, and a live view shows who holds which shard and how
// far behind each checkpoint is. Mid-run one worker is killed (SIGKILL, then restarted) and a
// shard is split; the run ends with a tally from the workers' ack logs, and exits 1 if a record
// was lost. Ctrl-C stops everything it started and removes its temp folder.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { createTables } from 'kinsumer';
import { createStream, listShards, splitShard, startLocalAws, type LocalAws } from 'kinsumer/testing';
import { AckTail } from './ack-tail.js';
import { buildView, heldShards, type Incident, type Phase, type ProcessSnapshot, type ShardInfo, type ViewModel } from './board.js';
import { FLEET_TIMINGS, WorkerProcess, type Exit } from './fleet.js';
import { Producer } from './producer.js';
import { createWriter, renderTally, renderTimings, type ViewWriter } from './view.js';
import type { WorkerConfig } from './worker.js';
// The verdict comes from the same independent checker the chaos test uses.
import { readAckLogs } from '../../test/support/ack-log.js';
import { tally } from '../../test/support/tally.js';

const USAGE = `Usage: npm start -- [--duration <seconds>] [--rate <records per second>]

Runs kinsumer on local Kinesis and DynamoDB servers (kinesalite, dynalite) in this process:
a producer, a 4-shard stream, three worker processes and a live view. Mid-run it kills one
worker with SIGKILL (and restarts it later) and splits a shard. Ends with a tally; exits 1 if
any produced record was never acked, 130 when interrupted.

Options:
  --duration <s>   how long the producer runs, at least 10 (default 30)
  --rate <n>       records a second the producer puts (default 100)
  -h, --help       this text
`;

const STREAM = 'kinsumer-demo';
const APP = 'kinsumer-demo';
const SHARDS = 4;
const WORKER_IDS = ['w1', 'w2', 'w3'] as const;
const WORKER_OPTIONS = { streamName: STREAM, applicationName: APP, ...FLEET_TIMINGS } as const;
// Above this, kinesalite keeps records on disk: in memory a record costs ~2.8 KB.
const ON_DISK_AFTER_MS = 120_000;
const STARTUP_TIMEOUT_MS = 90_000;
const DRAIN_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;

interface Settings {
  readonly durationMs: number;
  readonly rate: number;
}

class UsageError extends Error {}
class Interrupted extends Error {}

function parseSettings(argv: readonly string[]): Settings | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { duration: { type: 'string' }, rate: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (parsed.values.help === true) return 'help';
  const duration = Number(parsed.values.duration ?? '30');
  const rate = Number(parsed.values.rate ?? '100');
  if (!Number.isFinite(duration) || duration < 10) throw new UsageError('--duration must be a number of seconds, at least 10');
  if (!Number.isFinite(rate) || rate < 1 || rate > 5000) throw new UsageError('--rate must be between 1 and 5000 records a second');
  return { durationMs: duration * 1000, rate };
}

/** Every worker process this run started, with how each ended. */
class Fleet {
  private readonly entries: Array<{ readonly worker: WorkerProcess; exit?: Exit }> = [];
  /** Workers the demo itself kills or stops: their exits are expected. */
  private readonly ending = new Set<WorkerProcess>();

  /** `onUnexpectedExit`: a worker died on its own (its stderr may be hidden under the redrawn view). */
  constructor(private readonly base: Omit<WorkerConfig, 'id'>, private readonly onUnexpectedExit: (id: string, exit: Exit) => void) {}

  start(id: string): WorkerProcess {
    const generation = this.entries.filter((e) => e.worker.id === id).length + 1;
    // A restarted worker keeps its client id (it rejoins as itself) but writes a new ack log.
    const worker = new WorkerProcess({ ...this.base, id, ...(generation > 1 ? { logFile: `${id}.${generation}.acks.jsonl` } : {}) }, { detached: true });
    const entry: { readonly worker: WorkerProcess; exit?: Exit } = { worker };
    void worker.exited.then((exit) => {
      entry.exit = exit;
      if (!this.ending.has(worker)) this.onUnexpectedExit(id, exit);
    });
    this.entries.push(entry);
    return worker;
  }

  /** SIGKILL, as a crash. */
  kill(worker: WorkerProcess): Promise<Exit> {
    this.ending.add(worker);
    return worker.kill();
  }

  running(): WorkerProcess[] {
    return this.entries.map((e) => e.worker).filter((w) => w.running);
  }

  snapshots(): ProcessSnapshot[] {
    return this.entries.map(({ worker, exit }) => ({
      id: worker.id, pid: worker.pid, running: worker.running, events: worker.events, ...(exit === undefined ? {} : { exit }),
    }));
  }

  failures(): string[] {
    return this.entries.flatMap(({ worker }) => worker.failures.map((f) => `${worker.id}: ${f}`));
  }

  /** Graceful stop of every running worker; those not gone within the bound are killed. */
  async stopAll(): Promise<void> {
    await Promise.all(this.running().map(async (worker) => {
      this.ending.add(worker);
      const bound = delay(STOP_TIMEOUT_MS, undefined, { ref: false }).then(() => 'late' as const);
      if ((await Promise.race([worker.stop(), bound])) === 'late') await worker.kill();
    }));
  }

  async killAll(): Promise<void> {
    await Promise.all(this.running().map((worker) => this.kill(worker)));
  }
}

async function shardInfos(local: LocalAws): Promise<ShardInfo[]> {
  const shards = await listShards(local.kinesis, STREAM);
  return shards.map((s) => ({
    shardId: s.ShardId ?? '',
    parents: [s.ParentShardId, s.AdjacentParentShardId].filter((p): p is string => p !== undefined),
    closed: s.SequenceNumberRange?.EndingSequenceNumber !== undefined,
  })).sort((a, b) => a.shardId.localeCompare(b.shardId));
}

/** Waits until `deadline` (epoch ms), or throws {@link Interrupted} on Ctrl-C. */
async function until(deadline: number, interrupt: AbortSignal): Promise<void> {
  try {
    await delay(Math.max(0, deadline - Date.now()), undefined, { signal: interrupt });
  } catch {
    throw new Interrupted();
  }
}

/** Polls a condition every 100 ms until it holds; `false` when the time is up. */
async function waitFor(condition: () => boolean, timeoutMs: number, interrupt: AbortSignal): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await until(Math.min(deadline, Date.now() + 100), interrupt);
  }
  return true;
}

async function run(settings: Settings, writer: ViewWriter, interrupt: AbortSignal, fleetRef: { fleet?: Fleet }): Promise<number> {
  // One clock for the whole run: every time shown counts from here.
  const startedAt = Date.now();
  const temp = mkdtempSync(join(tmpdir(), 'kinsumer-demo-'));
  const logDir = join(temp, 'acks');
  mkdirSync(logDir);
  const onDisk = settings.durationMs > ON_DISK_AFTER_MS;
  let local: LocalAws | undefined;
  let fleet: Fleet | undefined;
  let render: NodeJS.Timeout | undefined;
  const producing = new AbortController();
  let producerDone: Promise<void> = Promise.resolve();
  try {
    writer.line(`kinsumer demo: ${SHARDS}-shard stream, ${WORKER_IDS.length} worker processes, producer target ${settings.rate} records/s for ${settings.durationMs / 1000} s`);
    for (const line of renderTimings(FLEET_TIMINGS, writer.width())) writer.line(line);
    writer.line(`temp folder ${temp} (ack logs${onDisk ? ', Kinesis data' : ''}; removed at the end)`);
    local = await startLocalAws({ kinesis: 'kinesalite', dynamodb: 'dynalite', ...(onDisk ? { kinesisPath: join(temp, 'kinesis') } : {}) });
    writer.line(`local Kinesis ${local.endpoints.kinesis}, local DynamoDB ${local.endpoints.dynamodb}`);
    await createStream(local.kinesis, STREAM, SHARDS);
    await createTables({ dynamodb: local.dynamodb, applicationName: APP });
    let shards = await shardInfos(local);

    fleet = new Fleet({
      aws: { region: local.region, endpoints: local.endpoints, credentials: local.credentials },
      options: WORKER_OPTIONS,
      logDir,
    }, (id, exit) => writer.line(`${id} exited on its own (code ${String(exit.code)}, signal ${String(exit.signal)})`));
    fleetRef.fleet = fleet;
    for (const id of WORKER_IDS) {
      const worker = fleet.start(id);
      writer.line(`started ${id} (pid ${worker.pid ?? '?'})`);
    }

    const tail = new AckTail(logDir);
    const producer = new Producer(local.kinesis, STREAM);
    const incidents: Incident[] = [];
    let phase: Phase = 'starting';
    // When the producer started and stopped (set below; the view reads them each second).
    const producerTimes: { startedAt?: number; stoppedAt?: number } = {};
    let producerErrors = 0;
    const view = (now = Date.now()): ViewModel => {
      tail.poll();
      return buildView({
        now, startedAt, producerStartedAt: producerTimes.startedAt, producerStoppedAt: producerTimes.stoppedAt, durationMs: settings.durationMs, targetRate: settings.rate,
        leaseTtlMs: FLEET_TIMINGS.leaseTtlMs, phase, shards, produced: producer.produced, acks: tail.lines,
        processes: fleet?.snapshots() ?? [], incidents,
      });
    };
    render = setInterval(() => {
      try {
        writer.tick(view());
      } catch (error) {
        writer.line(`view failed: ${(error as Error).message}`);
      }
    }, 1000);

    // The schedule below counts from the moment every shard has an owner and the producer starts.
    const owned = () => shards.every((s) => fleet?.running().some((w) => heldShards(snapshotOf(w)).includes(s.shardId)));
    const started = await waitFor(() => owned() || fleet?.running().length === 0, STARTUP_TIMEOUT_MS, interrupt);
    if (!started || !owned()) {
      const failures = fleet.failures().join('; ');
      throw new Error(`the workers did not take all ${SHARDS} shards within ${STARTUP_TIMEOUT_MS / 1000} s${failures === '' ? '' : `: ${failures}`} (their own errors, if any, are on stderr)`);
    }
    const producing0 = Date.now();
    producerTimes.startedAt = producing0;
    phase = 'running';
    producerDone = producer.run(settings.rate, producing.signal, () => { producerErrors += 1; });
    const at = (fraction: number) => producing0 + Math.round(fraction * settings.durationMs);

    await until(at(0.25), interrupt);
    const victim = [...fleet.running()].sort((a, b) => b.held().length - a.held().length)[0];
    if (victim !== undefined) {
      const held = victim.held();
      const pid = victim.pid;
      await fleet.kill(victim);
      incidents.push({ kind: 'kill', worker: victim.id, pid, at: Date.now(), held });
    }

    await until(at(0.45), interrupt);
    // Split a shard a live worker holds: its handoff is then not mixed up with the failover.
    const live = fleet.running().flatMap((w) => w.held());
    const parent = shards.find((s) => !s.closed && live.includes(s.shardId)) ?? shards.find((s) => !s.closed);
    if (parent !== undefined) {
      const splitAt = Date.now();
      const children = await splitShard(local.kinesis, STREAM, parent.shardId);
      shards = await shardInfos(local);
      incidents.push({ kind: 'split', parent: parent.shardId, children, at: splitAt });
    }

    await until(at(0.7), interrupt);
    if (victim !== undefined) {
      const restarted = fleet.start(victim.id);
      incidents.push({ kind: 'restart', worker: victim.id, pid: restarted.pid, at: Date.now() });
    }

    await until(at(1), interrupt);
    producing.abort();
    await producerDone;
    producerTimes.stoppedAt = Date.now();
    phase = 'draining';
    const produced = producer.produced;
    // Incremental: a long run has many records, and this is checked ten times a second.
    const unacked = new Set(produced.map((p) => p.data));
    let checked = 0;
    const drained = await waitFor(() => {
      tail.poll();
      for (; checked < tail.lines.length; checked += 1) unacked.delete(tail.lines[checked]?.data ?? '');
      return unacked.size === 0;
    }, DRAIN_TIMEOUT_MS, interrupt);
    if (!drained) writer.line(`not every record was acked within ${DRAIN_TIMEOUT_MS / 1000} s of the producer stopping`);

    phase = 'stopping';
    await fleet.stopAll();
    clearInterval(render);
    render = undefined;
    phase = 'done';

    // The verdict comes from the ack logs read afresh by the independent checker, not from the view.
    const result = tally({
      produced, acks: readAckLogs(logDir), parents: new Map(shards.map((s) => [s.shardId, s.parents])),
    });
    const final = view();
    const failures = fleet.failures();
    if (producerErrors > 0) writer.line(`producer: ${producerErrors} failed puts (those records were not counted as produced)`);
    for (const failure of failures) writer.line(`worker failed: ${failure}`);
    writer.end(final, renderTally({
      produced: result.produced,
      consumedUnique: result.consumedUnique,
      duplicates: result.duplicates,
      lost: result.lost.length,
      lostSample: result.lost.slice(0, 5),
      violations: result.violations.map((v) => `${v.kind}: ${v.detail}`),
      failoverMs: final.failoverMs,
      handoffMs: final.handoffMs,
      producedRate: final.producedRate,
      targetRate: settings.rate,
      leaseTtlMs: FLEET_TIMINGS.leaseTtlMs,
    }, writer.width()));
    return result.lost.length === 0 && result.violations.length === 0 ? 0 : 1;
  } finally {
    if (render !== undefined) clearInterval(render);
    producing.abort();
    await producerDone.catch(() => undefined);
    if (interrupt.aborted) writer.line('interrupted: stopping the workers and the local servers');
    await fleet?.stopAll();
    await local?.stop();
    rmSync(temp, { recursive: true, force: true });
    writer.line(`removed ${temp}`);
  }
}

function snapshotOf(worker: WorkerProcess): ProcessSnapshot {
  return { id: worker.id, pid: worker.pid, running: worker.running, events: worker.events };
}

async function main(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  let settings: Settings | 'help';
  try {
    settings = parseSettings(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (settings === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  const writer = createWriter(process.stdout);
  const interrupt = new AbortController();
  const fleetRef: { fleet?: Fleet } = {};
  const onSignal = () => {
    // First Ctrl-C: orderly teardown. Second: the workers are killed at once (teardown goes on).
    if (interrupt.signal.aborted) void fleetRef.fleet?.killAll();
    else interrupt.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    process.exitCode = await run(settings, writer, interrupt.signal, fleetRef);
  } catch (error) {
    if (error instanceof Interrupted) {
      process.exitCode = 130;
    } else {
      process.stderr.write(`demo failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
      process.exitCode = 1;
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

await main();
