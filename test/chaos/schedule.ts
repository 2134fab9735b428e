// The chaos schedule: which disruption happens when, as pure seeded logic (no I/O, no clock), so
// the same seed replays the same run and the rules below are unit-tested.
//
// Actions run one after another (the runner awaits each: a kill includes its restart, a zombie
// its SIGCONT); `atMs` is the earliest start, counted from the start of the chaos window. One
// disruption at a time keeps every duplicate attributable to one cause and at least
// `workers - 1` workers alive; the overlap that matters (faults during every action, resharding
// under load, zombies waking up into a reshard) still happens.
import { type Random, between, seededRandom, shuffled } from './random.js';

/** What the runner can do to the fleet or the stream. */
export type ChaosActionKind = 'kill' | 'zombie' | 'split' | 'merge' | 'restart';

/** Every kind; a run long enough does each at least once. */
export const ACTION_KINDS: readonly ChaosActionKind[] = ['kill', 'zombie', 'split', 'merge', 'restart'];

/** One planned action. */
export interface PlannedAction {
  /** Earliest start, ms after the chaos window opened. */
  readonly atMs: number;
  readonly kind: ChaosActionKind;
  /** Index of the victim worker (kill, zombie, restart); the runner moves on to the next one holding shards. */
  readonly worker: number;
  /** In [0, 1): which open shard to split, or which adjacent pair to merge, along the sorted list. */
  readonly pick: number;
  /**
   * kill: time down before the restart; zombie: time stopped (always beyond `leaseTtlMs`, so the
   * lease expires and another worker captures it); restart: time between graceful stop and start;
   * split, merge: 0.
   */
  readonly holdMs: number;
}

export interface ScheduleOptions {
  readonly durationMs: number;
  readonly workers: number;
  readonly seed: number;
  readonly leaseTtlMs: number;
  /** Open shards at the start; splits and merges keep the count within [minShards, maxShards]. */
  readonly initialShards: number;
  readonly minShards: number;
  readonly maxShards: number;
}

/** Relative weights of the kinds after each kind has had its turn. */
const WEIGHTS: Readonly<Record<ChaosActionKind, number>> = { kill: 3, zombie: 2, split: 2, merge: 2, restart: 2 };

/** A zombie sleeps 2–2.5 lease TTLs: its lease expires and another worker has time to capture it. */
export function zombieHoldRange(leaseTtlMs: number): readonly [number, number] {
  return [2 * leaseTtlMs, 2.5 * leaseTtlMs];
}

/**
 * How long an action keeps the runner busy, as far as planning goes: a graceful stop takes up to
 * about a lease TTL (drain, final commits, releases), a reshard about a second.
 */
export function busyMs(action: Pick<PlannedAction, 'kind' | 'holdMs'>, leaseTtlMs: number): number {
  switch (action.kind) {
    case 'kill':
    case 'zombie': return action.holdMs;
    case 'restart': return action.holdMs + leaseTtlMs;
    case 'split':
    case 'merge': return 1000;
  }
}

/**
 * The whole run's actions. Each kind comes once first (in a seeded order), then kinds are drawn by
 * weight. Between two actions the fleet gets 0.5–1 lease TTL to settle, and the last one ends at
 * least two lease TTLs before the window closes, so its failover completes while records still flow.
 */
export function planSchedule(options: ScheduleOptions): PlannedAction[] {
  const { durationMs, workers, leaseTtlMs } = options;
  if (!(workers >= 1)) throw new RangeError('workers must be >= 1');
  const random = seededRandom(options.seed);
  const endBy = durationMs - 2 * leaseTtlMs;
  const actions: PlannedAction[] = [];
  let shards = options.initialShards;
  let at = 0;
  const allowed = (kind: ChaosActionKind) =>
    (kind !== 'split' || shards < options.maxShards) && (kind !== 'merge' || shards > options.minShards);
  const firstRound = shuffled(random, ACTION_KINDS);
  for (;;) {
    const kind = firstRound.length > 0 ? firstRound.shift() : drawKind(random, allowed);
    if (kind === undefined) break;
    if (!allowed(kind)) continue;
    const action: PlannedAction = {
      atMs: Math.round(at),
      kind,
      worker: Math.floor(random() * workers),
      pick: random(),
      holdMs: Math.round(holdFor(kind, random, leaseTtlMs)),
    };
    const end = at + busyMs(action, leaseTtlMs);
    if (end > endBy) {
      // A first-round kind that does not fit may still leave room for a shorter one.
      if (firstRound.length > 0) continue;
      break;
    }
    actions.push(action);
    if (kind === 'split') shards += 1;
    if (kind === 'merge') shards -= 1;
    at = end + between(random, 0.5, 1) * leaseTtlMs;
  }
  return actions;
}

function holdFor(kind: ChaosActionKind, random: Random, leaseTtlMs: number): number {
  switch (kind) {
    case 'kill': return between(random, 0.5, 1.5) * leaseTtlMs;
    case 'zombie': return between(random, ...zombieHoldRange(leaseTtlMs));
    case 'restart': return between(random, 0.3, 1) * leaseTtlMs;
    case 'split':
    case 'merge': return 0;
  }
}

function drawKind(random: Random, allowed: (kind: ChaosActionKind) => boolean): ChaosActionKind | undefined {
  const candidates = ACTION_KINDS.filter(allowed);
  const total = candidates.reduce((sum, kind) => sum + WEIGHTS[kind], 0);
  let ticket = random() * total;
  for (const kind of candidates) {
    ticket -= WEIGHTS[kind];
    if (ticket < 0) return kind;
  }
  return candidates.at(-1);
}
