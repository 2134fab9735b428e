// The schedule a simulation runs: the group's configuration and a list of commands, each after a
// wait. Plain data, so fast-check can generate it from a seed and shrink it, and a failing one can
// be printed and replayed. Indices (which client, which shard) are resolved against the world at
// the moment the command runs, so any sublist of a schedule is still a valid schedule.
import fc from 'fast-check';

/** The kinds of trouble a run may contain; each can be switched on and off from the command line. */
export const FAULT_KINDS = {
  membership: 'clients join and leave gracefully (stop()) beyond the initial group',
  crash: 'a client freezes for good (every call hangs, no timer runs) and may be restarted with its clientId',
  pause: 'a client freezes for 0.5-4 lease TTLs, then resumes (a zombie)',
  skew: "a client's wall clock is off by up to ±5 minutes (timers stay on the shared timeline)",
  reset: "operator resets through the lease store, as the CLI does (forced or not, one shard or all)",
  reshard: 'splits and merges of open shards',
  fault: 'windows of transient faults on store and stream calls (before or after the call took effect)',
  hang: 'windows of calls that never answer (before or after the call took effect)',
  slow: 'handlers that ack each record only after a delay, one at a time per shard',
  'ooo-ack': 'handlers that ack out of order (random delays)',
  'never-ack': 'handlers that never ack one record (until the schedule calms)',
  fail: "handlers whose pipeline errors (that Kinsumer stops; a new one with the same clientId starts later)",
  latest: "groups that start at 'LATEST'",
  timestamp: 'groups that start at a timestamp in the past',
  'dup-id': 'two live Kinsumers with one clientId',
  'process-records': "handlers behind processRecords: ordering 'shard', 'partitionKey' or 'none', failing attempts, retries, onFailure",
  'process-batches': 'handlers behind processBatches: partial failures ({ failed }), whole batches failing, retries, onFailure',
  kpl: 'the producer puts KPL aggregates (sub-records checkpointed across hand-offs and crashes)',
  'fan-out': "groups that read with readMode 'fan-out' (SubscribeToShard on an in-memory fan-out port)",
  step: "a client's wall clock jumps by ±1-300 s while its timers run on the true timeline",
  quiet: 'a shard gets no record for 10-400 s; its owner hands it off gracefully halfway; then records come again',
  memory: 'records reachable after a garbage collection are counted per process and shard (at commands and before the calm)',
  effects: "records are acked with writes of their own (ack({ writes }), the operators' { writes }), committed with their checkpoint in one transaction; with every kind, in half the runs",
  'reset-finished': 'a shard splits, is read to its end, and the operator resets it to LATEST as soon as it is Finished, while its children wait for their first owner; then records come to the children',
  restart: 'a process started with the clientId of a running one (static membership): the old one still running, or killed just before',
  drain: "a member drains: drain() (then stop()), or kinsumer drain's row request (then --undo)",
  failover: 'once calm, the member holding the most leases crashes and its failover is timed (crash-failover)',
  poison: 'handlers behind the operators kill their process on poison records (0.5-2 % of records, the same in every process); a supervisor starts it again with its clientId and handler; maxDeliveries 2-5, then onFailure dead-letters the record (with effects, its writes committed with the checkpoint)',
} as const;

export type FaultKind = keyof typeof FAULT_KINDS;
export const ALL_KINDS = Object.keys(FAULT_KINDS) as FaultKind[];

/**
 * The kinds a run has without `--only`: every kind but `poison`, which is asked for by name while
 * its findings are open (issue 32: processes poison kills after the calm, restarted with their
 * clientId, wait out their own leases: unowned-shard, read-stall, unbalanced — static membership,
 * item 1, is on another branch). Its seeds are in docs/simulation.md.
 */
export const DEFAULT_KINDS: readonly FaultKind[] = ALL_KINDS.filter((kind) => kind !== 'poison');

/** Whether `kinds` holds exactly `list`. */
export function sameKinds(kinds: ReadonlySet<FaultKind>, list: readonly FaultKind[]): boolean {
  return kinds.size === list.length && list.every((kind) => kinds.has(kind));
}

/**
 * Every kind there was after issue 24: a seed (and a shrunk path) found with every kind then
 * replays its schedule with these (`reset-finished`, of issue 30, draws commands of its own).
 */
export const KINDS_OF_ISSUE_24: readonly FaultKind[] = [
  'membership', 'crash', 'pause', 'skew', 'reset', 'reshard', 'fault', 'hang', 'slow', 'ooo-ack', 'never-ack', 'fail', 'latest', 'timestamp',
  'dup-id', 'process-records', 'process-batches', 'kpl', 'fan-out', 'step', 'quiet', 'memory', 'effects',
];

/** Every kind there was after issue 30 (a seed found with every kind then replays with these; issue 32's kinds draw commands of their own). */
export const KINDS_OF_ISSUE_30: readonly FaultKind[] = [...KINDS_OF_ISSUE_24, 'reset-finished'];

/** Every kind there was after issue 32 (static membership, drain, timed failover). */
export const KINDS_OF_ISSUE_32: readonly FaultKind[] = [...KINDS_OF_ISSUE_30, 'restart', 'drain', 'failover'];

/** How a client's handler treats the records it receives. */
export type HandlerSpec =
  | { readonly mode: 'sync' }
  | { readonly mode: 'slow'; readonly delayMs: number }
  | { readonly mode: 'ooo'; readonly maxDelayMs: number }
  | { readonly mode: 'never'; readonly nth: number }
  | { readonly mode: 'fail'; readonly nth: number; readonly restartTenths: number }
  | RecordsHandler
  | BatchesHandler;

/** How a handler call behaves: how long it takes, how often it fails, how retries and failures end. */
export interface OperatorCalls {
  /** Each call takes 0 to this many milliseconds (on the client's clock). */
  readonly maxDelayMs: number;
  /** The chance, in percent, that one attempt on one record fails. */
  readonly failPercent: number;
  readonly maxAttempts: number;
  /** First retry delay (the operator's `retry.initialDelayMs`). */
  readonly retryDelayMs: number;
  /** With `onFailure`: records that fail every attempt are dead-lettered and acked; without, the pipeline errors. */
  readonly onFailure: boolean;
  /** The handler stops early when its `signal` aborts (a real handler may or may not). */
  readonly honoursSignal: boolean;
  /** Poison records, in a thousand (see `isPoison`, examples/demo/poison.ts): a call on one kills the process. 0 without the `poison` kind. */
  readonly poisonPermille: number;
  /** The operator's `maxDeliveries` (5, its default, without the `poison` kind). */
  readonly maxDeliveries: number;
}

/** A handler behind processRecords. */
export interface RecordsHandler extends OperatorCalls {
  readonly mode: 'records';
  readonly ordering: 'shard' | 'partitionKey' | 'none';
  readonly concurrency: number;
}

/** A handler behind processBatches; `failPercent` is per record of a batch (reported as `{ failed }`). */
export interface BatchesHandler extends OperatorCalls {
  readonly mode: 'batches';
  readonly maxSize: number;
  readonly maxWaitMs: number;
  /** The chance, in percent, that a whole batch call throws. */
  readonly throwPercent: number;
}

/** The group's timings (the same for every client, as in a real fleet). */
export interface SimTimings {
  readonly throttleDelayMs: number;
  readonly commitFrequencyMs: number;
  readonly shardCheckFrequencyMs: number;
  readonly leaderActionFrequencyMs: number;
  readonly leaseTtlMs: number;
  readonly shutdownTimeoutMs: number;
  readonly maxInFlightRecords: number;
}

export type StartKind = 'TRIM_HORIZON' | 'LATEST' | 'AT_TIMESTAMP';

/** What the group looks like at the start. */
export interface SimConfig {
  /** Seeds every random choice inside the run (faults, jitter, producer keys). */
  readonly rngSeed: number;
  /** Clients started at time 0 (ids c0, c1, ...). */
  readonly clients: number;
  /** Open shards at the start. */
  readonly shards: number;
  readonly start: StartKind;
  /** For AT_TIMESTAMP: how long before the start the timestamp lies. */
  readonly startAgoMs: number;
  /** Records in the stream before the start (half of them before the timestamp of an AT_TIMESTAMP group). */
  readonly preRecords: number;
  /** The steady producer's rate. */
  readonly recordsPerSecond: number;
  readonly timings: SimTimings;
  /** Latency of every store call (the capture's read and write are that far apart). */
  readonly storeLatencyMs: number;
  /** Clock skew of the host of each client id c0..c9. */
  readonly skewsMs: readonly number[];
  /** Handlers of the initial clients. */
  readonly handlers: readonly HandlerSpec[];
  /** How every client reads. */
  readonly readMode: 'polling' | 'fan-out';
  /** The share of the producer's puts, in percent, that are KPL aggregates of 2-12 user records. */
  readonly aggregatePercent: number;
  /** Partition keys are drawn from this many (few keys: long runs of one key, for 'partitionKey' ordering). */
  readonly partitionKeys: number;
}

export type Command = { readonly waitTenths: number } & (
  | { readonly type: 'produce'; readonly count: number }
  | { readonly type: 'join'; readonly client: number; readonly handler: HandlerSpec }
  | { readonly type: 'leave'; readonly client: number }
  | { readonly type: 'crash'; readonly client: number }
  | { readonly type: 'pause'; readonly client: number; readonly tenths: number }
  | { readonly type: 'reset'; readonly shard: number | 'all'; readonly to: StartKind; readonly agoTenths: number; readonly force: boolean }
  | { readonly type: 'reset-finished'; readonly shard: number; readonly force: boolean }
  | { readonly type: 'split'; readonly shard: number }
  | { readonly type: 'merge'; readonly shard: number }
  | { readonly type: 'faults'; readonly client: number | 'all'; readonly percent: number; readonly tenths: number }
  | { readonly type: 'hangs'; readonly client: number | 'all'; readonly percent: number; readonly tenths: number }
  | { readonly type: 'step'; readonly client: number; readonly stepMs: number }
  | { readonly type: 'quiet'; readonly shard: number; readonly seconds: number; readonly handoff: boolean }
  | { readonly type: 'measure' }
  | { readonly type: 'restart'; readonly client: number; readonly alive: boolean }
  | { readonly type: 'drain'; readonly client: number; readonly via: 'api' | 'cli'; readonly tenths: number }
);

/** A whole run: configuration, then the commands in order. */
export interface Schedule {
  readonly config: SimConfig;
  readonly commands: readonly Command[];
}

/** Client ids are c0..c9: a small pool, so joins meet restarts and duplicates. */
export const CLIENT_POOL = 10;

const SKEWS_MS = [1000, 5000, 20_000, 90_000, 300_000];
const STEPS_MS = [1000, 5000, 20_000, 60_000, 300_000];

/** The kinds of trouble of the second round: with only these, a seed generates the schedule it always did. */
export const CLASSIC_KINDS: readonly FaultKind[] = [
  'membership', 'crash', 'pause', 'skew', 'reset', 'reshard', 'fault', 'hang', 'slow', 'ooo-ack', 'never-ack', 'fail', 'latest', 'timestamp', 'dup-id',
];

/** How operator handler calls behave, for the enabled kinds. */
function operatorCallsArb(kinds: ReadonlySet<FaultKind>) {
  return {
    maxDelayMs: kinds.has('slow') ? fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 20, max: 3000 })) : fc.integer({ min: 0, max: 20 }),
    failPercent: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 30 })),
    maxAttempts: fc.integer({ min: 1, max: 5 }),
    retryDelayMs: fc.integer({ min: 10, max: 500 }),
    // Without onFailure, a record that fails every attempt errors the pipeline: that is the 'fail' kind.
    onFailure: kinds.has('fail') ? fc.boolean() : fc.constant(true),
    honoursSignal: fc.boolean(),
    // Last, and constant without the kind: the schedules of the other kinds are what they were.
    poisonPermille: kinds.has('poison') ? fc.oneof(fc.constant(0), fc.integer({ min: 5, max: 20 })) : fc.constant(0),
    maxDeliveries: kinds.has('poison') ? fc.integer({ min: 2, max: 5 }) : fc.constant(5),
  };
}

function handlerArb(kinds: ReadonlySet<FaultKind>): fc.Arbitrary<HandlerSpec> {
  const options: fc.WeightedArbitrary<HandlerSpec>[] = [{ arbitrary: fc.constant({ mode: 'sync' as const }), weight: 4 }];
  if (kinds.has('slow')) options.push({ arbitrary: fc.record({ mode: fc.constant('slow' as const), delayMs: fc.integer({ min: 10, max: 3000 }) }), weight: 1 });
  if (kinds.has('ooo-ack')) options.push({ arbitrary: fc.record({ mode: fc.constant('ooo' as const), maxDelayMs: fc.integer({ min: 10, max: 2000 }) }), weight: 1 });
  if (kinds.has('never-ack')) options.push({ arbitrary: fc.record({ mode: fc.constant('never' as const), nth: fc.integer({ min: 0, max: 60 }) }), weight: 1 });
  if (kinds.has('fail')) {
    options.push({
      arbitrary: fc.record({ mode: fc.constant('fail' as const), nth: fc.integer({ min: 0, max: 200 }), restartTenths: fc.integer({ min: 0, max: 30 }) }),
      weight: 1,
    });
  }
  // The poison kind's handlers are the operators'.
  if (kinds.has('process-records') || kinds.has('poison')) {
    const records: fc.Arbitrary<HandlerSpec> = fc.record({
      mode: fc.constant('records' as const),
      ordering: fc.constantFrom('shard' as const, 'partitionKey' as const, 'none' as const),
      concurrency: fc.integer({ min: 1, max: 32 }),
      ...operatorCallsArb(kinds),
    }).map((h) => (h.ordering === 'shard' ? { ...h, concurrency: 1 } : h));
    options.push({ arbitrary: records, weight: 4 });
  }
  // The poison kind's handlers are the operators'.
  if (kinds.has('process-batches') || kinds.has('poison')) {
    options.push({
      arbitrary: fc.record({
        mode: fc.constant('batches' as const),
        maxSize: fc.integer({ min: 1, max: 50 }),
        maxWaitMs: fc.constantFrom(0, 0, 50, 500, 5000),
        throwPercent: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 20 })),
        ...operatorCallsArb(kinds),
      }),
      weight: 3,
    });
  }
  return fc.oneof(...options);
}

function timingsArb(): fc.Arbitrary<SimTimings> {
  return fc.record({
    shardCheck: fc.constantFrom(500, 1000, 2000),
    ttlFactor: fc.integer({ min: 2, max: 6 }),
    leaderFactor: fc.integer({ min: 1, max: 3 }),
    commitFrequencyMs: fc.integer({ min: 50, max: 1000 }),
    throttleDelayMs: fc.integer({ min: 200, max: 400 }),
    shutdownTimeoutMs: fc.integer({ min: 2000, max: 10_000 }),
    maxInFlightRecords: fc.integer({ min: 3, max: 100 }),
  }).map((t) => {
    const leaseTtlMs = t.shardCheck * t.ttlFactor;
    return {
      throttleDelayMs: t.throttleDelayMs,
      commitFrequencyMs: Math.min(t.commitFrequencyMs, leaseTtlMs - 1),
      shardCheckFrequencyMs: t.shardCheck,
      leaderActionFrequencyMs: t.shardCheck * t.leaderFactor,
      leaseTtlMs,
      shutdownTimeoutMs: t.shutdownTimeoutMs,
      maxInFlightRecords: t.maxInFlightRecords,
    };
  });
}

function startArb(kinds: ReadonlySet<FaultKind>): fc.Arbitrary<StartKind> {
  const starts: StartKind[] = ['TRIM_HORIZON'];
  if (kinds.has('latest')) starts.push('LATEST');
  if (kinds.has('timestamp')) starts.push('AT_TIMESTAMP');
  return fc.constantFrom(...starts);
}

function skewArb(kinds: ReadonlySet<FaultKind>): fc.Arbitrary<number> {
  if (!kinds.has('skew')) return fc.constant(0);
  return fc.oneof(
    fc.constant(0),
    fc.record({ size: fc.constantFrom(...SKEWS_MS), ahead: fc.boolean() }).map(({ size, ahead }) => (ahead ? size : -size)),
  );
}

/** The group's configuration, for the enabled kinds. */
export function configArb(kinds: ReadonlySet<FaultKind>): fc.Arbitrary<SimConfig> {
  return fc.record({
    rngSeed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    clients: fc.integer({ min: 1, max: 8 }),
    shards: fc.integer({ min: 1, max: 32 }),
    start: startArb(kinds),
    startAgoMs: fc.integer({ min: 0, max: 60_000 }),
    preRecords: fc.integer({ min: 0, max: 100 }),
    recordsPerSecond: fc.integer({ min: 0, max: 50 }),
    timings: timingsArb(),
    storeLatencyMs: fc.integer({ min: 0, max: 20 }),
    skewsMs: fc.array(skewArb(kinds), { minLength: CLIENT_POOL, maxLength: CLIENT_POOL }),
    handlers: fc.array(handlerArb(kinds), { minLength: 8, maxLength: 8 }),
    // Last, and constant when their kinds are off: a seed of the classic kinds draws what it always did.
    readMode: kinds.has('fan-out') ? fc.constantFrom('polling' as const, 'fan-out' as const, 'fan-out' as const) : fc.constant('polling' as const),
    aggregatePercent: kinds.has('kpl') ? fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 60 })) : fc.constant(0),
    partitionKeys: kinds.has('process-records') || kinds.has('kpl') ? fc.constantFrom(1, 3, 10, 100, 1_000_000) : fc.constant(1_000_000),
  });
}

const clientArb = fc.integer({ min: 0, max: CLIENT_POOL - 1 });
const shardArb = fc.integer({ min: 0, max: 63 });
const waitArb = fc.integer({ min: 0, max: 20 });

/** One command, for the enabled kinds (producing records is always possible). */
export function commandArb(kinds: ReadonlySet<FaultKind>): fc.Arbitrary<Command> {
  const options: fc.WeightedArbitrary<Command>[] = [
    { arbitrary: fc.record({ waitTenths: waitArb, type: fc.constant('produce' as const), count: fc.integer({ min: 1, max: 200 }) }), weight: 2 },
  ];
  const add = (weight: number, arbitrary: fc.Arbitrary<Command>) => options.push({ arbitrary, weight });
  const joins = kinds.has('membership') || kinds.has('crash') || kinds.has('dup-id') || kinds.has('fail');
  if (joins) add(3, fc.record({ waitTenths: waitArb, type: fc.constant('join' as const), client: clientArb, handler: handlerArb(kinds) }));
  if (kinds.has('membership')) add(2, fc.record({ waitTenths: waitArb, type: fc.constant('leave' as const), client: clientArb }));
  if (kinds.has('crash')) add(1, fc.record({ waitTenths: waitArb, type: fc.constant('crash' as const), client: clientArb }));
  if (kinds.has('pause')) add(2, fc.record({ waitTenths: waitArb, type: fc.constant('pause' as const), client: clientArb, tenths: fc.integer({ min: 5, max: 40 }) }));
  if (kinds.has('reset')) {
    add(2, fc.record({
      waitTenths: waitArb,
      type: fc.constant('reset' as const),
      shard: fc.oneof(fc.constant('all' as const), shardArb),
      to: fc.constantFrom<StartKind>('TRIM_HORIZON', 'LATEST', 'AT_TIMESTAMP'),
      agoTenths: fc.integer({ min: 0, max: 100 }),
      force: fc.boolean(),
    }));
  }
  if (kinds.has('reshard')) {
    add(1, fc.record({ waitTenths: waitArb, type: fc.constant('split' as const), shard: shardArb }));
    add(1, fc.record({ waitTenths: waitArb, type: fc.constant('merge' as const), shard: shardArb }));
  }
  const target = fc.oneof(fc.constant('all' as const), clientArb);
  if (kinds.has('fault')) {
    add(2, fc.record({ waitTenths: waitArb, type: fc.constant('faults' as const), client: target, percent: fc.integer({ min: 1, max: 50 }), tenths: fc.integer({ min: 1, max: 40 }) }));
  }
  if (kinds.has('hang')) {
    add(1, fc.record({ waitTenths: waitArb, type: fc.constant('hangs' as const), client: target, percent: fc.integer({ min: 1, max: 10 }), tenths: fc.integer({ min: 1, max: 20 }) }));
  }
  if (kinds.has('step')) {
    const stepMs = fc.record({ size: fc.constantFrom(...STEPS_MS), ahead: fc.boolean() }).map(({ size, ahead }) => (ahead ? size : -size));
    add(2, fc.record({ waitTenths: waitArb, type: fc.constant('step' as const), client: clientArb, stepMs }));
  }
  if (kinds.has('quiet')) {
    const seconds = fc.oneof(fc.integer({ min: 10, max: 60 }), fc.integer({ min: 60, max: 400 }));
    add(2, fc.record({ waitTenths: waitArb, type: fc.constant('quiet' as const), shard: shardArb, seconds, handoff: fc.boolean() }));
  }
  if (kinds.has('memory')) add(1, fc.record({ waitTenths: waitArb, type: fc.constant('measure' as const) }));
  // Last: with these kinds off, every other kind's schedules are drawn as they always were.
  if (kinds.has('reset-finished')) add(1, fc.record({ waitTenths: waitArb, type: fc.constant('reset-finished' as const), shard: shardArb, force: fc.boolean() }));
  if (kinds.has('restart')) add(2, fc.record({ waitTenths: waitArb, type: fc.constant('restart' as const), client: clientArb, alive: fc.boolean() }));
  if (kinds.has('drain')) {
    add(2, fc.record({ waitTenths: waitArb, type: fc.constant('drain' as const), client: clientArb, via: fc.constantFrom('api' as const, 'cli' as const), tenths: fc.integer({ min: 5, max: 40 }) }));
  }
  return fc.oneof(...options);
}

/** A whole schedule of at most `maxCommands` commands. */
export function scheduleArb(kinds: ReadonlySet<FaultKind>, maxCommands: number): fc.Arbitrary<Schedule> {
  return fc.record({
    config: configArb(kinds),
    commands: fc.array(commandArb(kinds), { minLength: 0, maxLength: maxCommands }),
  });
}

function handlerText(handler: HandlerSpec): string {
  switch (handler.mode) {
    case 'sync': return 'acks at once';
    case 'slow': return `acks each after ${handler.delayMs} ms, one at a time per shard`;
    case 'ooo': return `acks out of order (0-${handler.maxDelayMs} ms)`;
    case 'never': return `never acks its record #${handler.nth}`;
    case 'fail': return `errors at its record #${handler.nth}, restarted ${handler.restartTenths / 10} TTL later`;
    case 'records': return `processRecords (ordering ${handler.ordering}, concurrency ${handler.concurrency}; ${callsText(handler)})`;
    case 'batches': return `processBatches (maxSize ${handler.maxSize}, maxWaitMs ${handler.maxWaitMs}, ${handler.throwPercent}% of batches throw; ${callsText(handler)})`;
  }
}

function callsText(calls: OperatorCalls): string {
  return `calls take 0-${calls.maxDelayMs} ms, ${calls.failPercent}% of attempts fail, ${calls.maxAttempts} attempts ${calls.retryDelayMs} ms apart, `
    + `${calls.onFailure ? 'then onFailure' : 'then the pipeline errors'}${calls.honoursSignal ? ', stops on abort' : ''}`
    + `${calls.poisonPermille === 0 ? '' : `; ${calls.poisonPermille}‰ poison records kill the process, maxDeliveries ${calls.maxDeliveries}, then onFailure`}`;
}

/** One line per command, with its time offset, for a human reading a failure. */
export function describeSchedule(schedule: Schedule): string[] {
  const { config } = schedule;
  const t = config.timings;
  const lines = [
    `group: ${config.clients} clients, ${config.shards} shards, start ${config.start}${config.start === 'AT_TIMESTAMP' ? ` (${config.startAgoMs} ms ago)` : ''}, `
    + `${config.preRecords} records before, ${config.recordsPerSecond} records/s, store latency ${config.storeLatencyMs} ms, rngSeed ${config.rngSeed}`,
    ...(config.readMode === 'polling' && config.aggregatePercent === 0 && config.partitionKeys === 1_000_000 ? [] : [
      `reading: ${config.readMode}; ${config.aggregatePercent}% of puts KPL aggregates; ${config.partitionKeys} partition keys`,
    ]),
    `timings: throttle ${t.throttleDelayMs}, commit ${t.commitFrequencyMs}, shard check ${t.shardCheckFrequencyMs}, leader ${t.leaderActionFrequencyMs}, `
    + `TTL ${t.leaseTtlMs}, shutdown ${t.shutdownTimeoutMs} ms; maxInFlightRecords ${t.maxInFlightRecords}`,
  ];
  // Only the ids that can run: the initial clients and the ones joins name.
  const used = new Set([...Array.from({ length: config.clients }, (_, i) => i), ...schedule.commands.flatMap((c) => (c.type === 'join' ? [c.client] : []))]);
  const skews = config.skewsMs.map((s, i) => (s === 0 || !used.has(i) ? '' : `c${i} ${s > 0 ? '+' : ''}${s / 1000} s`)).filter((s) => s !== '');
  if (skews.length > 0) lines.push(`clock skew: ${skews.join(', ')}`);
  for (let i = 0; i < config.clients; i += 1) {
    const handler = config.handlers[i] ?? { mode: 'sync' };
    if (handler.mode !== 'sync') lines.push(`c${i}: ${handlerText(handler)}`);
  }
  let tenths = 0;
  for (const command of schedule.commands) {
    tenths += command.waitTenths;
    lines.push(`+${(tenths / 10).toFixed(1)} TTL  ${commandText(command)}`);
  }
  return lines;
}

function clientText(client: number | 'all'): string {
  return client === 'all' ? 'every client' : `c${client}`;
}

function commandText(command: Command): string {
  switch (command.type) {
    case 'produce': return `produce ${command.count} records`;
    case 'join': return `join c${command.client} (${handlerText(command.handler)})`;
    case 'leave': return `c${command.client} leaves (stop())`;
    case 'crash': return `c${command.client} crashes`;
    case 'pause': return `c${command.client} freezes for ${command.tenths / 10} TTL`;
    case 'reset': {
      const to = command.to === 'AT_TIMESTAMP' ? `AT_TIMESTAMP ${command.agoTenths / 10} TTL ago` : command.to;
      return `operator resets ${command.shard === 'all' ? 'every shard' : `shard #${command.shard}`} to ${to}${command.force ? ' --force' : ''}`;
    }
    case 'split': return `split open shard #${command.shard}`;
    case 'reset-finished': return `split open shard #${command.shard}, reset it to LATEST${command.force ? ' --force' : ''} once Finished, before its children are captured`;
    case 'merge': return `merge open shard #${command.shard} with its neighbour`;
    case 'faults': return `${command.percent}% transient faults on ${clientText(command.client)} for ${command.tenths / 10} TTL`;
    case 'hangs': return `${command.percent}% hung calls on ${clientText(command.client)} for ${command.tenths / 10} TTL`;
    case 'step': return `c${command.client}'s wall clock jumps ${command.stepMs > 0 ? '+' : ''}${command.stepMs / 1000} s`;
    case 'quiet': return `shard #${command.shard} gets no record for ${command.seconds} s${command.handoff ? ', its owner restarted gracefully halfway' : ''}`;
    case 'measure': return 'count the records reachable after a garbage collection';
    case 'restart': return `running client #${command.client} ${command.alive ? 'replaced by a process with its clientId while it runs' : 'killed and restarted with its clientId'}`;
    case 'drain': return `running client #${command.client} drains (${command.via === 'api' ? 'drain(), then stop()' : 'kinsumer drain, then --undo'} ${command.tenths / 10} TTL later)`;
  }
}
