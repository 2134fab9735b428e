// One simulation: build the world of a schedule, run its commands on virtual time, calm down,
// check. Deterministic: every random choice comes from the schedule's rngSeed (Math.random
// included, which the library's retry backoff uses), no wall clock is read.
import { config as rxjsConfig } from 'rxjs';
import { seededRandom } from '../support/seeded-random.js';
import type { CheckerStats, InvariantName, Violation } from './checker.js';
import type { CallFate } from './faults.js';
import { describeError } from './process.js';
import type { FaultKind, Schedule } from './schedule.js';
import { START_MS, type Sabotage, World } from './world.js';

/** What one run found and did. */
export interface RunResult {
  readonly violations: readonly Violation[];
  /** Violations by invariant, all of them (the list above keeps the first few of each). */
  readonly counts: ReadonlyMap<InvariantName, number>;
  /** Distinct moments of virtual time run. */
  readonly steps: number;
  /** Rule evaluations. */
  readonly checks: number;
  readonly simulatedMs: number;
  readonly stats: CheckerStats;
  readonly faults: Readonly<Record<CallFate, number>>;
  /** Calls that never answered, in order. */
  readonly hung: readonly string[];
  readonly processes: number;
  /** SubscribeToShard events handed out (fan-out groups). */
  readonly fanOutEvents: number;
  /** With effects: the records whose writes were applied, and the transactions that applied (effects-once checked them). */
  readonly effects?: { readonly records: number; readonly transactions: number } | undefined;
  readonly refusedResets: number;
  /** What the commands did, resolved against the world. */
  readonly log: readonly string[];
}

export interface RunOptions {
  readonly kinds: ReadonlySet<FaultKind>;
  readonly sabotage?: Sabotage;
}

/** Runs one schedule to the end and returns what the checker found. */
export async function runSchedule(schedule: Schedule, options: RunOptions): Promise<RunResult> {
  const { config } = schedule;
  const world = new World(config, options.sabotage === undefined ? { kinds: options.kinds } : { kinds: options.kinds, sabotage: options.sabotage });
  const ttl = config.timings.leaseTtlMs;
  const randomBefore = Math.random;
  const unhandledBefore = rxjsConfig.onUnhandledError;
  const onRejection = (reason: unknown) => world.checker.libraryError(world.scheduler.now(), `unhandled rejection: ${describeError(reason)}`);
  Math.random = seededRandom(config.rngSeed ^ 0x5eed);
  rxjsConfig.onUnhandledError = (error: unknown) => world.checker.libraryError(world.scheduler.now(), `unhandled error in an RxJS subscription: ${describeError(error)}`);
  process.on('unhandledRejection', onRejection);
  try {
    await world.start();
    for (const command of schedule.commands) {
      await world.advance((command.waitTenths * ttl) / 10);
      await world.apply(command);
    }
    // The last command's fault window, pause or hand-off gets its time before the calm; a quiet
    // shard its whole quiet time (its hand-off comes halfway), and records after it.
    await world.advance(2 * ttl + (world.quietLeftMs() > 0 ? world.quietLeftMs() + 2 * ttl : 0));
    await world.measure();
    await world.calm();
  } catch (error) {
    world.checker.libraryError(world.scheduler.now(), `the run stopped: ${describeError(error)}`);
  } finally {
    Math.random = randomBefore;
    rxjsConfig.onUnhandledError = unhandledBefore;
    process.off('unhandledRejection', onRejection);
  }
  const { checker } = world;
  return {
    violations: checker.violations,
    counts: checker.counts,
    steps: world.scheduler.steps,
    checks: checker.checks,
    simulatedMs: world.scheduler.now() - START_MS,
    stats: checker.stats,
    faults: world.faults.counts,
    hung: world.faults.hung,
    processes: world.processes.length,
    fanOutEvents: world.fanOut?.events ?? 0,
    effects: world.effects === undefined ? undefined : { records: world.effects.applied().size, transactions: world.effects.items.transactions },
    refusedResets: world.refusedResets,
    log: world.log,
  };
}
