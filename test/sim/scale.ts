// Scale by simulation: what this machine cannot run for real. 2,000 shards and 50 clients (real
// Kinsumers, default timings, on the in-memory tables and a synthetic stream) for one simulated
// hour: time until balanced after a cold start, after one client leaves, after one crashes; the
// DynamoDB requests and capacity units the group would use (dynamo-model.ts maps every port call
// to the requests of the real adapter); the cost per month at on-demand prices; the largest item.
//
//   npm run simulate -- --scale [--shards 2000] [--clients 50] [--minutes 60] [--records-per-second 0] [--json]
import { parseArgs } from 'node:util';
import { BehaviorSubject, type Observable, config as rxjsConfig, defer } from 'rxjs';
import { Kinsumer } from '../../src/index.js';
import { QUIET } from '../support/memory-group.js';
import type { CachedShard } from '../../src/ports/coordination.js';
import { MemoryCoordinationTables, MemoryMembershipStore, MemoryMetadataStore } from '../../src/testing/memory-coordination.js';
import { MemoryCheckpointTable, MemoryLeaseStore } from '../../src/testing/memory-lease-store.js';
import { seededRandom } from '../support/seeded-random.js';
import { DynamoMeter, ItemSizes, type MeterSnapshot, PRICES, SECONDS_PER_MONTH, readUnits, writeUnits } from './dynamo-model.js';
import { faultyPort } from './faults.js';
import { describeError } from './process.js';
import { ScaleStream } from './scale-stream.js';
import { ClientClock, SimScheduler } from './sim-scheduler.js';

export interface ScaleSettings {
  readonly shards: number;
  readonly clients: number;
  readonly durationMs: number;
  /** Records per second arriving on every shard (0: an idle stream). */
  readonly recordsPerSecond: number;
  /** When one client leaves (stop()), and when another crashes. */
  readonly leaveAtMs: number;
  readonly crashAtMs: number;
  /** How often the balance is looked at (the resolution of the times to balance). */
  readonly probeMs: number;
  readonly seed: number;
}

/** Default timings of the contract (design.md §2): the scale figures are for an unchanged configuration. */
const TIMINGS = { throttleDelayMs: 250, commitFrequencyMs: 1000, shardCheckFrequencyMs: 5000, leaderActionFrequencyMs: 10_000, leaseTtlMs: 15_000 } as const;
const START_MS = 1_764_000_000_000;
/** The `GroupEpoch` item (Key, Epoch, ID, LastUpdate, LastUpdateRFC): under 200 bytes. */
const GROUP_EPOCH_BYTES = 200;
/** A `LeaseCounter:<shardId>` item of the metadata table (Key, Shard, LeaseCounter): under 100 bytes. */
const TOKEN_ITEM_BYTES = 100;

type Status = 'running' | 'stopping' | 'stopped' | 'crashed';

class ScaleClient {
  readonly sending$ = new BehaviorSubject(true);
  readonly clock: ClientClock;
  readonly kinsumer: Kinsumer;
  status: Status = 'running';
  heartbeatBytes = 0;

  constructor(readonly clientId: string, world: ScaleWorld) {
    this.clock = new ClientClock(world.scheduler);
    const clock = this.clock;
    const common = { clientId, leaseTtlMs: TIMINGS.leaseTtlMs, now: () => clock.now() };
    const meter = (op: string, args: readonly unknown[]) => world.metered(this, op, args);
    const answered = (op: string, _args: readonly unknown[], answer: unknown) => world.answered(op, answer);
    const port = <T extends object>(inner: T): T => faultyPort(metered(inner, meter), this, undefined, () => 0, answered);
    // As the Kinsumer wires its stores: a lease lives by its owner's clients row (docs/liveness.md).
    const rawMembership = new MemoryMembershipStore({ ...common, tables: world.coordination });
    const store = port(new MemoryLeaseStore({ ...common, table: world.checkpoints, members: rawMembership, clients: world.coordination }));
    const membership = port(rawMembership);
    const metadata = port(new MemoryMetadataStore({ ...common, tables: world.coordination }));
    const stream = port(world.stream);
    const random = seededRandom(Math.floor(world.random() * 2 ** 32));
    this.kinsumer = new Kinsumer({
      streamName: 'scale', applicationName: 'scale', clientId, logger: QUIET, ...TIMINGS, scheduler: clock,
      kinesis: { send: () => Promise.reject(new Error('unused')) } as never,
      dynamodb: { send: () => Promise.reject(new Error('unused')) } as never,
    }, () => ({ store, membership, metadata, stream, prepare: () => Promise.resolve(), random }));
    this.kinsumer.records$.subscribe({
      next: (record) => {
        world.delivered += 1;
        record.ack();
      },
      error: (error: unknown) => world.errors.push(`${clientId}: ${describeError(error)}`),
    });
  }

  get crashed(): boolean {
    return this.status === 'crashed';
  }

  stop(): void {
    this.status = 'stopping';
    void this.kinsumer.stop().catch(() => undefined).then(() => { this.status = 'stopped'; });
  }

  crash(): void {
    this.status = 'crashed';
    this.clock.kill();
    this.sending$.next(false);
  }
}

/** Counts each request as it is sent (at subscription; a retry is another request). */
function metered<T extends object>(port: T, onCall: (operation: string, args: readonly unknown[]) => void): T {
  return new Proxy(port, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (typeof result !== 'object' || result === null || !('subscribe' in result)) return result;
        return defer(() => {
          onCall(String(property), args);
          return result as Observable<unknown>;
        });
      };
    },
  });
}

class ScaleWorld {
  readonly scheduler = new SimScheduler(START_MS);
  readonly checkpoints = new MemoryCheckpointTable({ now: () => Math.floor(this.scheduler.now() / 1000) * 1000 });
  readonly coordination = new MemoryCoordinationTables();
  readonly stream: ScaleStream;
  readonly random: () => number;
  readonly meter = new DynamoMeter();
  readonly sizes = new ItemSizes();
  readonly clients: ScaleClient[] = [];
  readonly errors: string[] = [];
  readonly largest = { clientsRow: 0, shardCache: 0 };
  kinesis = { getRecords: 0, getShardIterator: 0, listShards: 0 };
  delivered = 0;
  #checkpointRowBytes = 0;
  #cacheBytes: { readonly shards: readonly CachedShard[] | undefined; readonly bytes: number } = { shards: undefined, bytes: 0 };
  #leaderBytes = 0;

  constructor(readonly settings: ScaleSettings) {
    this.random = seededRandom(settings.seed);
    this.stream = new ScaleStream(settings.shards, settings.recordsPerSecond, START_MS, () => this.scheduler.now());
  }

  async prepareSizes(): Promise<void> {
    const longest = this.stream.shardIds().at(-1) ?? 'shardId-000000000000';
    this.#checkpointRowBytes = await this.sizes.checkpointRowBytes(longest);
    this.#leaderBytes = this.sizes.leaderItemBytes();
  }

  get checkpointRowBytes(): number {
    return this.#checkpointRowBytes;
  }

  get leaderBytes(): number {
    return this.#leaderBytes;
  }

  /** One request of `client`, priced as the real adapter would send it. */
  metered(client: ScaleClient, operation: string, args: readonly unknown[]): void {
    const meter = this.meter;
    const row = this.#checkpointRowBytes;
    switch (operation) {
      // Kinesis (not billed here; counted for the report).
      case 'getRecords': this.kinesis.getRecords += 1; return;
      case 'getShardIterator': this.kinesis.getShardIterator += 1; return;
      case 'listShards': this.kinesis.listShards += 1; return;
      // <app>_checkpoints
      case 'read': meter.read('checkpoints GetItem', readUnits(row)); return;
      case 'readMany': {
        const n = new Set(args[0] as readonly string[]).size;
        meter.read('checkpoints BatchGetItem', n * readUnits(row), Math.ceil(n / 100));
        return;
      }
      // The adapter's conditional writes of a capture (its token's, then the row's) are counted
      // by the answer (answered(), below): only a capture that found the lease available sends them.
      case 'capture': meter.read('checkpoints GetItem', readUnits(row)); return;
      case 'commit': case 'renew': case 'release':
        meter.write(`checkpoints UpdateItem (${operation})`, writeUnits(row));
        return;
      // <app>_clients: a heartbeat is one conditional UpdateItem (the first, a GetItem of the row before it)
      case 'heartbeat': {
        const bytes = this.sizes.clientsRowBytes(args[0] as readonly string[]);
        this.largest.clientsRow = Math.max(this.largest.clientsRow, bytes);
        if (client.heartbeatBytes === 0) meter.read('clients GetItem (registration)', readUnits(bytes));
        meter.write('clients UpdateItem (heartbeat)', writeUnits(Math.max(bytes, client.heartbeatBytes)));
        client.heartbeatBytes = bytes;
        return;
      }
      case 'liveClients': meter.read('clients Scan', readUnits(this.#clientsTableBytes())); return;
      // One conditional UpdateItem per life it ends: counted by the answer.
      case 'endExpired': return;
      case 'deregister': meter.write('clients DeleteItem', writeUnits(client.heartbeatBytes)); return;
      case 'reapStale': meter.read('clients Scan', readUnits(this.#clientsTableBytes())); return;
      // <app>_metadata
      case 'acquireLeadership': meter.write('metadata PutItem (leader)', writeUnits(this.#leaderBytes)); return;
      case 'stepDown': meter.write('metadata UpdateItem (leader)', writeUnits(this.#leaderBytes)); return;
      case 'leader': meter.read('metadata GetItem (leader)', readUnits(this.#leaderBytes)); return;
      case 'readShardCache': meter.read('metadata GetItem (shard cache)', readUnits(this.#shardCacheBytes(this.coordination.shardCache()?.shards))); return;
      // Polled eventually consistent: half a read unit per 4 KB (the item is a few dozen bytes).
      case 'groupEpoch': meter.read('metadata GetItem (group epoch, eventually consistent)', readUnits(GROUP_EPOCH_BYTES) / 2); return;
      case 'bumpGroupEpoch': meter.write('metadata UpdateItem (group epoch)', writeUnits(GROUP_EPOCH_BYTES)); return;
      case 'writeShardCache': {
        const bytes = this.sizes.shardCacheBytes(args[0] as readonly CachedShard[]);
        this.largest.shardCache = Math.max(this.largest.shardCache, bytes);
        meter.write('metadata PutItem (shard cache)', writeUnits(Math.max(bytes, this.#shardCacheBytes(this.coordination.shardCache()?.shards))));
        return;
      }
      default: throw new Error(`scale: no DynamoDB mapping for ${operation}`);
    }
  }

  /** What a request's answer tells of the writes the adapter sent for it. */
  answered(operation: string, answer: unknown): void {
    const row = this.#checkpointRowBytes;
    if (operation === 'capture' && answer !== undefined) {
      // The fencing token first (metadata item LeaseCounter:<shard>), then the row.
      this.meter.write('metadata UpdateItem (capture token)', writeUnits(TOKEN_ITEM_BYTES));
      this.meter.write('checkpoints UpdateItem (capture)', writeUnits(row));
    }
    if (operation === 'endExpired') {
      for (const _ of answer as readonly string[]) this.meter.write('clients UpdateItem (end a life)', writeUnits(this.sizes.clientsRowBytes([])));
    }
  }

  #clientsTableBytes(): number {
    return this.coordination.clients().reduce((sum, row) => sum + this.sizes.clientsRowBytes(row.shardIds ?? []), 0);
  }

  #shardCacheBytes(shards: readonly CachedShard[] | undefined): number {
    if (shards === undefined) return 0;
    if (this.#cacheBytes.shards !== shards) this.#cacheBytes = { shards, bytes: this.sizes.shardCacheBytes(shards) };
    return this.#cacheBytes.bytes;
  }

  /** Every shard held by a running client, and per-client counts within one of each other. */
  balanced(): boolean {
    const live = this.clients.filter((c) => c.status === 'running');
    const counts = new Map(live.map((c) => [c.clientId, 0]));
    let held = 0;
    for (const row of this.checkpoints.rows()) {
      const count = row.ownerId === undefined ? undefined : counts.get(row.ownerId);
      if (count === undefined) return false;
      counts.set(row.ownerId as string, count + 1);
      held += 1;
    }
    if (held !== this.settings.shards) return false;
    const values = [...counts.values()];
    return Math.max(...values) - Math.min(...values) <= 1;
  }
}

/** Per second over a window, by request kind. */
interface Rates {
  readonly readUnitsPerSecond: number;
  readonly writeUnitsPerSecond: number;
  readonly requestsPerSecond: Record<string, number>;
  /** Capacity units per second by request kind (read units for reads, write units for writes). */
  readonly unitsPerSecond: Record<string, number>;
  readonly dollarsPerMonth: number;
}

function rates(from: MeterSnapshot, to: MeterSnapshot, ms: number): Rates {
  const seconds = ms / 1000;
  const requestsPerSecond: Record<string, number> = {};
  const unitsPerSecond: Record<string, number> = {};
  for (const [what, n] of to.requests) {
    const per = (n - (from.requests.get(what) ?? 0)) / seconds;
    if (per > 0) requestsPerSecond[what] = round(per, 2);
    const units = ((to.units.get(what) ?? 0) - (from.units.get(what) ?? 0)) / seconds;
    if (units > 0) unitsPerSecond[what] = round(units, 1);
  }
  const readUnitsPerSecond = (to.readUnits - from.readUnits) / seconds;
  const writeUnitsPerSecond = (to.writeUnits - from.writeUnits) / seconds;
  const dollarsPerMonth = (SECONDS_PER_MONTH * (readUnitsPerSecond * PRICES.readPerMillion + writeUnitsPerSecond * PRICES.writePerMillion)) / 1e6;
  return {
    readUnitsPerSecond: round(readUnitsPerSecond, 1), writeUnitsPerSecond: round(writeUnitsPerSecond, 1),
    requestsPerSecond, unitsPerSecond, dollarsPerMonth: round(dollarsPerMonth, 2),
  };
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export interface ScaleResult {
  readonly settings: ScaleSettings;
  readonly balancedAfterColdStartMs: number | undefined;
  readonly balancedAfterLeaveMs: number | undefined;
  readonly balancedAfterCrashMs: number | undefined;
  /** Steady state: from 5 minutes after the start to the leave. */
  readonly steady: Rates;
  /** Steady again: from 5 minutes after the crash (49 → 48 clients) to the end. */
  readonly afterCrash: Rates;
  readonly wholeRun: Rates;
  readonly largestItemBytes: { readonly checkpointRow: number; readonly clientsRow: number; readonly shardCache: number; readonly leader: number };
  readonly kinesisCallsPerSecond: number;
  readonly delivered: number;
  readonly errors: readonly string[];
  readonly steps: number;
  readonly wallSeconds: number;
  readonly simulatedHoursPerWallSecond: number;
}

/** Runs the scale scenario. */
export async function runScale(settings: ScaleSettings, progress: (line: string) => void = () => undefined): Promise<ScaleResult> {
  const started = performance.now();
  const world = new ScaleWorld(settings);
  await world.prepareSizes();
  const randomBefore = Math.random;
  const unhandledBefore = rxjsConfig.onUnhandledError;
  Math.random = seededRandom(settings.seed ^ 0x5eed);
  rxjsConfig.onUnhandledError = (error: unknown) => world.errors.push(`unhandled: ${describeError(error)}`);
  const { scheduler } = world;
  const marks: { event: string; atMs: number; balancedAtMs?: number }[] = [];
  try {
    for (let i = 0; i < settings.clients; i += 1) world.clients.push(new ScaleClient(`client-${String(i).padStart(2, '0')}`, world));
    marks.push({ event: 'cold start', atMs: START_MS });
    scheduler.schedule(function () {
      const mark = marks.at(-1);
      if (mark !== undefined && mark.balancedAtMs === undefined && world.balanced()) mark.balancedAtMs = scheduler.now();
      this.schedule(undefined, settings.probeMs);
    }, settings.probeMs);
    const steadyStartMs = Math.min(5 * 60_000, settings.leaveAtMs / 2);
    const at = async (offsetMs: number) => {
      while (scheduler.now() < START_MS + offsetMs) {
        const step = Math.min(START_MS + offsetMs, scheduler.now() + 60_000);
        await scheduler.runUntil(step);
        progress(`${((scheduler.now() - START_MS) / 60_000).toFixed(0)} simulated min, ${((performance.now() - started) / 1000).toFixed(0)} s wall`);
      }
    };
    await at(steadyStartMs);
    const steadyFrom = world.meter.snapshot();
    await at(settings.leaveAtMs);
    const steadyTo = world.meter.snapshot();
    world.clients[0]?.stop();
    marks.push({ event: 'leave', atMs: scheduler.now() });
    await at(settings.crashAtMs);
    world.clients[1]?.crash();
    marks.push({ event: 'crash', atMs: scheduler.now() });
    const afterCrashStartMs = Math.min(settings.crashAtMs + 5 * 60_000, (settings.crashAtMs + settings.durationMs) / 2);
    await at(afterCrashStartMs);
    const afterCrashFrom = world.meter.snapshot();
    await at(settings.durationMs);
    const whole = rates({ requests: new Map(), units: new Map(), readUnits: 0, writeUnits: 0 }, world.meter.snapshot(), settings.durationMs);
    const wallSeconds = (performance.now() - started) / 1000;
    const after = (event: string) => {
      const mark = marks.find((m) => m.event === event);
      return mark?.balancedAtMs === undefined ? undefined : mark.balancedAtMs - mark.atMs;
    };
    return {
      settings,
      balancedAfterColdStartMs: after('cold start'),
      balancedAfterLeaveMs: after('leave'),
      balancedAfterCrashMs: after('crash'),
      steady: rates(steadyFrom, steadyTo, settings.leaveAtMs - steadyStartMs),
      afterCrash: rates(afterCrashFrom, world.meter.snapshot(), settings.durationMs - afterCrashStartMs),
      wholeRun: whole,
      largestItemBytes: { checkpointRow: world.checkpointRowBytes, clientsRow: world.largest.clientsRow, shardCache: world.largest.shardCache, leader: world.leaderBytes },
      kinesisCallsPerSecond: round((world.kinesis.getRecords + world.kinesis.getShardIterator + world.kinesis.listShards) / (settings.durationMs / 1000), 1),
      delivered: world.delivered,
      errors: world.errors.slice(0, 10),
      steps: scheduler.steps,
      wallSeconds: round(wallSeconds, 1),
      simulatedHoursPerWallSecond: round(settings.durationMs / 3_600_000 / wallSeconds, 5),
    };
  } finally {
    Math.random = randomBefore;
    rxjsConfig.onUnhandledError = unhandledBefore;
  }
}

function resultLines(r: ScaleResult): string[] {
  const s = r.settings;
  const ms = (v: number | undefined) => (v === undefined ? 'not within the run' : `${(v / 1000).toFixed(1)} s`);
  const rateLines = (name: string, rate: Rates) => [
    `${name}: ${rate.readUnitsPerSecond} read units/s, ${rate.writeUnitsPerSecond} write units/s → $${rate.dollarsPerMonth}/month on demand`,
    ...Object.entries(rate.requestsPerSecond).sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([what, n]) => `    ${what}: ${n}/s (${rate.unitsPerSecond[what] ?? 0} units/s)`),
  ];
  return [
    `scale: ${s.shards} shards, ${s.clients} clients, ${s.durationMs / 60_000} simulated minutes, ${s.recordsPerSecond} records/s per shard, default timings`,
    `balanced after a cold start: ${ms(r.balancedAfterColdStartMs)}; after one client leaves: ${ms(r.balancedAfterLeaveMs)}; after one crashes: ${ms(r.balancedAfterCrashMs)}`,
    ...rateLines('steady state', r.steady),
    ...rateLines('after the crash', r.afterCrash),
    ...rateLines('whole run', r.wholeRun),
    `largest items written: checkpoints row ${r.largestItemBytes.checkpointRow} B, clients row ${r.largestItemBytes.clientsRow} B, shard cache ${r.largestItemBytes.shardCache} B, leader ${r.largestItemBytes.leader} B`,
    `Kinesis calls: ${r.kinesisCallsPerSecond}/s; records delivered: ${r.delivered}; errors: ${r.errors.length === 0 ? 'none' : r.errors.join('; ')}`,
    `${r.steps} steps in ${r.wallSeconds} s wall (${r.simulatedHoursPerWallSecond} simulated hours per wall-clock second)`,
  ];
}

/** `npm run simulate -- --scale [...]`. */
export async function scaleMain(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      shards: { type: 'string' }, clients: { type: 'string' }, minutes: { type: 'string' }, 'records-per-second': { type: 'string' },
      seed: { type: 'string' }, json: { type: 'boolean' }, quiet: { type: 'boolean' },
    },
  });
  const minutes = Number(values.minutes ?? 60);
  const settings: ScaleSettings = {
    shards: Number(values.shards ?? 2000),
    clients: Number(values.clients ?? 50),
    durationMs: minutes * 60_000,
    recordsPerSecond: Number(values['records-per-second'] ?? 0),
    leaveAtMs: (minutes * 60_000) / 3,
    crashAtMs: (2 * minutes * 60_000) / 3,
    probeMs: 250,
    seed: Number(values.seed ?? 1),
  };
  const result = await runScale(settings, values.quiet === true ? undefined : (line) => process.stderr.write(`${line}\n`));
  if (values.json === true) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else for (const line of resultLines(result)) process.stdout.write(`${line}\n`);
  return result.errors.length > 0 ? 1 : 0;
}
