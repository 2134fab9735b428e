// What a run of many seeds tells a human (text) or a tool (JSON): every failing seed with its
// broken invariant, its shrunk schedule and the command that replays it; then the totals.
import type { InvariantName } from './checker.js';
import { type FaultKind, DEFAULT_KINDS, describeSchedule, sameKinds } from './schedule.js';
import type { SeedOutcome } from './search.js';

/** Totals over the seeds of one invocation. */
export class Summary {
  seeds = 0;
  failed = 0;
  steps = 0;
  checks = 0;
  simulatedMs = 0;
  deliveries = 0;
  duplicates = 0;
  callsFaulted = 0;
  callsHung = 0;
  handlerCalls = 0;
  subRecordDeliveries = 0;
  fanOutEvents = 0;
  memoryChecks = 0;
  peakRetainedPercent = 0;
  effectsRuns = 0;
  effectsRecords = 0;
  effectsTransactions = 0;
  readonly byInvariant = new Map<InvariantName, { seeds: number; firstSeed: number }>();
  readonly #started = performance.now();

  add(outcome: SeedOutcome): void {
    const { result } = outcome;
    this.seeds += 1;
    this.steps += result.steps;
    this.checks += result.checks;
    this.simulatedMs += result.simulatedMs;
    this.deliveries += result.stats.deliveries;
    this.duplicates += result.stats.duplicates;
    this.callsFaulted += result.faults['fault-before'] + result.faults['fault-after'];
    this.callsHung += result.faults['hang-before'] + result.faults['hang-after'];
    this.handlerCalls += result.stats.handlerCalls;
    this.subRecordDeliveries += result.stats.subRecordDeliveries;
    this.fanOutEvents += result.fanOutEvents;
    this.memoryChecks += result.stats.memoryChecks;
    this.peakRetainedPercent = Math.max(this.peakRetainedPercent, result.stats.peakRetainedPercent);
    if (result.effects !== undefined) {
      this.effectsRuns += 1;
      this.effectsRecords += result.effects.records;
      this.effectsTransactions += result.effects.transactions;
    }
    if (outcome.invariant === undefined) return;
    this.failed += 1;
    for (const invariant of result.counts.keys()) {
      const seen = this.byInvariant.get(invariant);
      if (seen === undefined) this.byInvariant.set(invariant, { seeds: 1, firstSeed: outcome.seed });
      else seen.seeds += 1;
    }
  }

  get wallMs(): number {
    return performance.now() - this.#started;
  }

  toJSON(): Record<string, unknown> {
    const hours = this.simulatedMs / 3_600_000;
    return {
      seeds: this.seeds,
      passed: this.seeds - this.failed,
      failed: this.failed,
      steps: this.steps,
      invariantChecks: this.checks,
      simulatedHours: round(hours, 3),
      wallSeconds: round(this.wallMs / 1000, 1),
      simulatedHoursPerWallSecond: round(hours / (this.wallMs / 1000), 4),
      deliveries: this.deliveries,
      duplicates: this.duplicates,
      callsFaulted: this.callsFaulted,
      callsHung: this.callsHung,
      handlerCalls: this.handlerCalls,
      subRecordDeliveries: this.subRecordDeliveries,
      fanOutEvents: this.fanOutEvents,
      memoryChecks: this.memoryChecks,
      peakRetainedPercent: this.peakRetainedPercent,
      effects: { runs: this.effectsRuns, recordsApplied: this.effectsRecords, transactions: this.effectsTransactions },
      byInvariant: Object.fromEntries([...this.byInvariant].map(([name, v]) => [name, v])),
    };
  }

  lines(): string[] {
    const j = this.toJSON();
    const lines = [
      `${String(j.seeds)} seeds: ${String(j.passed)} passed, ${String(j.failed)} failed`,
      `${this.steps.toLocaleString('en-US')} steps, ${this.checks.toLocaleString('en-US')} invariant checks, ${String(j.simulatedHours)} simulated hours in ${String(j.wallSeconds)} s `
      + `(${String(j.simulatedHoursPerWallSecond)} simulated hours per wall-clock second)`,
      `${this.deliveries.toLocaleString('en-US')} deliveries (${this.duplicates.toLocaleString('en-US')} duplicates), ${this.callsFaulted.toLocaleString('en-US')} calls failed, ${this.callsHung.toLocaleString('en-US')} hung`,
      `record path: ${this.handlerCalls.toLocaleString('en-US')} handler calls, ${this.subRecordDeliveries.toLocaleString('en-US')} KPL sub-record deliveries, `
      + `${this.fanOutEvents.toLocaleString('en-US')} fan-out events, ${this.memoryChecks.toLocaleString('en-US')} memory checks `
      + `(at most ${this.peakRetainedPercent}% of the bound reachable)`,
      `effects: ${this.effectsRuns} runs acked with writes, ${this.effectsRecords.toLocaleString('en-US')} records' writes applied `
      + `in ${this.effectsTransactions.toLocaleString('en-US')} transactions (effects-once checked in each)`,
    ];
    for (const [name, v] of this.byInvariant) lines.push(`  ${name}: ${v.seeds} seeds (first: seed ${v.firstSeed})`);
    return lines;
  }
}

/** The command line that replays a seed with the same kinds and steps. */
export function replayCommand(seed: number, kinds: ReadonlySet<FaultKind>, maxCommands: number, path?: string, find?: string): string {
  const parts = ['npm run simulate --', `--seed ${seed}`];
  if (find !== undefined) parts.push(`--find ${find}`);
  if (!sameKinds(kinds, DEFAULT_KINDS)) parts.push(`--only ${[...kinds].join(',')}`);
  if (maxCommands !== DEFAULT_STEPS) parts.push(`--steps ${maxCommands}`);
  if (path !== undefined) parts.push(`--path ${path}`);
  return parts.join(' ');
}

export const DEFAULT_STEPS = 30;

/** A failing seed, for a human. */
export function failureLines(outcome: SeedOutcome, kinds: ReadonlySet<FaultKind>, maxCommands: number, find?: string): string[] {
  const { result, shrunk } = outcome;
  const shown = shrunk ?? { schedule: outcome.schedule, result };
  const lines = [`seed ${outcome.seed}: FAILED ${outcome.invariant ?? '?'}`];
  for (const v of shown.result.violations) lines.push(`  ${v.invariant} at ${(v.atMs / 1000).toFixed(3)} s: ${v.message}`);
  const others = [...shown.result.counts].filter(([, n]) => n > 0).map(([name, n]) => `${name} ×${n}`).join(', ');
  lines.push(`  violations in this run: ${others}`);
  if (shown.result.hung.length > 0) {
    const hung = shown.result.hung;
    lines.push(`  calls that never answered: ${hung.slice(0, 8).join(', ')}${hung.length > 8 ? ` and ${hung.length - 8} more` : ''}`);
  }
  lines.push(shrunk === undefined
    ? `  schedule (${outcome.schedule.commands.length} commands, not shrunk):`
    : `  shrunk schedule (${outcome.schedule.commands.length} → ${shrunk.schedule.commands.length} commands, ${shrunk.shrinks} shrinks):`);
  for (const line of describeSchedule(shown.schedule)) lines.push(`    ${line}`);
  lines.push('  what happened:');
  for (const line of shown.result.log.slice(0, 40)) lines.push(`    ${line}`);
  if (shown.result.log.length > 40) lines.push(`    … ${shown.result.log.length - 40} more`);
  lines.push(`  replay: ${replayCommand(outcome.seed, kinds, maxCommands, undefined, find)}`);
  if (shrunk !== undefined) lines.push(`  replay the shrunk schedule alone: ${replayCommand(outcome.seed, kinds, maxCommands, shrunk.path)} --no-shrink`);
  return lines;
}

/** A failing seed, for a tool. */
export function failureJson(outcome: SeedOutcome, kinds: ReadonlySet<FaultKind>, maxCommands: number, find?: string): Record<string, unknown> {
  const shown = outcome.shrunk ?? { schedule: outcome.schedule, result: outcome.result };
  return {
    seed: outcome.seed,
    invariant: outcome.invariant,
    violations: shown.result.violations,
    counts: Object.fromEntries(shown.result.counts),
    shrunk: outcome.shrunk === undefined ? undefined : { commands: outcome.shrunk.schedule.commands.length, shrinks: outcome.shrunk.shrinks, path: outcome.shrunk.path },
    schedule: shown.schedule,
    replay: replayCommand(outcome.seed, kinds, maxCommands, undefined, find),
  };
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
