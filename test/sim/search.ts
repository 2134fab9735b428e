// One seed: fast-check generates the schedule from the seed, the simulation runs it, and if an
// invariant breaks fast-check shrinks the schedule while that same invariant still breaks. The
// same seed (and the same kinds and steps) always gives the same schedule, run and shrink.
import fc from 'fast-check';
import type { InvariantName } from './checker.js';
import { type RunResult, runSchedule } from './run.js';
import { type FaultKind, type Schedule, scheduleArb } from './schedule.js';
import type { Sabotage } from './world.js';

export interface SeedOptions {
  readonly kinds: ReadonlySet<FaultKind>;
  /** Most commands in a schedule. */
  readonly maxCommands: number;
  /** Shrink a failure (default true). */
  readonly shrink?: boolean;
  /** Wall-clock budget of the shrinking, milliseconds. */
  readonly shrinkBudgetMs?: number;
  /** Replay the case at this fast-check path (a shrunk counterexample) instead of the seed's first case. */
  readonly path?: string;
  readonly sabotage?: Sabotage;
  /** Shrink toward this invariant (when the seed breaks it) instead of the first one broken. */
  readonly target?: InvariantName;
}

export interface SeedOutcome {
  readonly seed: number;
  /** The seed's own schedule and run (the one the statistics count). */
  readonly schedule: Schedule;
  readonly result: RunResult;
  /** The invariant the seed broke first, if any. */
  readonly invariant: InvariantName | undefined;
  /** The smallest failing schedule the shrinking found, and its run. */
  readonly shrunk: { readonly schedule: Schedule; readonly result: RunResult; readonly shrinks: number; readonly path: string } | undefined;
  /** Wall-clock milliseconds, shrinking included. */
  readonly wallMs: number;
}

/** Runs one seed, shrinking its failure if it has one. */
export async function simulateSeed(seed: number, options: SeedOptions): Promise<SeedOutcome> {
  const started = performance.now();
  let target: InvariantName | undefined = options.target;
  let first: { schedule: Schedule; result: RunResult } | undefined;
  let lastFailure: { schedule: Schedule; result: RunResult } | undefined;
  const shrink = options.shrink ?? true;
  const property = fc.asyncProperty(scheduleArb(options.kinds, options.maxCommands), async (schedule) => {
    // Replaying a path without shrinking: fast-check runs the case at the path first, then goes on
    // through its neighbours (a hundred runs for seed 1164's path); only the first one is wanted.
    if (options.path !== undefined && !shrink && first !== undefined) return true;
    // The shrinking's budget: once spent, every further candidate passes at once, so fast-check
    // settles on the smallest failure found so far. (fast-check's own interruptAfterTimeLimit gave
    // up on a run in flight — a seed whose first run outlasted the budget under load then had no
    // result at all, "fast-check ran nothing" — and left that run going.)
    if (first !== undefined && shrink && options.shrinkBudgetMs !== undefined && performance.now() - started > options.shrinkBudgetMs) return true;
    const result = await runSchedule(schedule, options.sabotage === undefined ? { kinds: options.kinds } : { kinds: options.kinds, sabotage: options.sabotage });
    first ??= { schedule, result };
    // While shrinking, only the invariant the seed broke first counts: a smaller schedule that
    // breaks something else is another finding, not a reproduction of this one.
    const hit = target === undefined ? result.violations[0]?.invariant : result.counts.has(target) ? target : undefined;
    // A seed that does not break the target invariant passes, and is reported by its own findings.
    if (hit === undefined) return true;
    target ??= hit;
    lastFailure = { schedule, result };
    return false;
  });
  const details: fc.RunDetails<[Schedule]> = await fc.check(property, {
    seed,
    numRuns: 1,
    endOnFailure: !shrink,
    ...(options.path === undefined ? {} : { path: options.path }),
  });
  if (first === undefined) throw new Error(`seed ${seed}: fast-check ran nothing`);
  const shrunk = details.failed && lastFailure !== undefined && shrink
    ? { ...lastFailure, shrinks: details.numShrinks, path: details.counterexamplePath ?? '' }
    : undefined;
  const invariant = target !== undefined && first.result.counts.has(target) ? target : first.result.violations[0]?.invariant;
  return { seed, schedule: first.schedule, result: first.result, invariant, shrunk, wallMs: performance.now() - started };
}
