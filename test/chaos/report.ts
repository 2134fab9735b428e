// The chaos run's verdict and report: a JSON document (chaos-report.json) and the same figures as
// text for the terminal.
import { cpus } from 'node:os';
import type { Violation } from '../support/tally.js';
import type { FaultProxyCounts } from '../support/fault-proxy.js';
import { summary } from './metrics.js';
import type { ChaosResult } from './runner.js';
import { ACTION_KINDS, type ChaosActionKind } from './schedule.js';

export interface ChaosReport {
  readonly passed: boolean;
  /** Why it failed, besides the checker's violations (records lost, drain incomplete, nothing produced). */
  readonly failures: readonly string[];
  readonly date: string;
  readonly machine: { readonly node: string; readonly platform: string; readonly cpus: number };
  readonly command: string;
  readonly options: ChaosResult['options'];
  readonly wallMs: number;
  readonly counts: {
    readonly produced: number; readonly consumedUnique: number; readonly acks: number;
    readonly duplicates: number; readonly lost: number;
  };
  readonly actionsDone: Readonly<Record<ChaosActionKind, number>>;
  readonly actionsSkipped: number;
  readonly duplicatesByShard: Readonly<Record<string, number>>;
  readonly duplicatesByDisruption: ReadonlyArray<{ readonly kind: string; readonly worker: string; readonly atS: number; readonly shardId: string; readonly records: number; readonly exposureMs: number }>;
  readonly failovers: ChaosResult['failovers'];
  readonly recoveryMs: Readonly<Record<ChaosActionKind, ReturnType<typeof summary>>>;
  readonly faults: {
    readonly kinesis: FaultProxyCounts & { readonly totalCalls: number; readonly totalFaults: number };
    readonly dynamodb: FaultProxyCounts & { readonly totalCalls: number; readonly totalFaults: number };
  };
  /** Faults that reached kinsumer's own retries (`retrying` events). */
  readonly retries: number;
  readonly eventCounts: Readonly<Record<string, number>>;
  readonly producerErrors: number;
  readonly violations: readonly Violation[];
  readonly lostSample: readonly string[];
  /** Action timeline, times in seconds from the start of the run. */
  readonly timeline: ReadonlyArray<Record<string, unknown>>;
  readonly runDir: string;
  /** An effects run (`--effects`): every key's total against the sum produced for it. */
  readonly effects?: ChaosResult['effects'];
  /** A poison run (`--poison`): each poison record's dead letter, written once. */
  readonly deadLetters?: ChaosResult['deadLetters'];
}

const sum = (values: Readonly<Record<string, number>>) => Object.values(values).reduce((a, b) => a + b, 0);

export function buildReport(result: ChaosResult, command: string): ChaosReport {
  const { tally } = result;
  const failures: string[] = [];
  if (tally.produced === 0) failures.push('nothing was produced');
  if (tally.lost.length > 0) failures.push(`${tally.lost.length} produced records were never acked`);
  if (!result.drained) failures.push(`not every record was acked within ${result.options.drainTimeoutMs} ms after the window`);
  const effects = result.effects;
  if (effects !== undefined && effects.mismatches.length > 0) {
    failures.push(`${effects.mismatches.length} of ${effects.keys} totals differ from the sum produced (writes applied ${effects.actualSum > effects.expectedSum ? 'twice' : 'not at all'})`);
  }
  const { deadLetters } = result;
  if (deadLetters !== undefined && deadLetters.wrong.length > 0) {
    failures.push(`${deadLetters.wrong.length} records' dead letters wrong (a poison record's missing, or written twice): ${deadLetters.wrong.slice(0, 5).map((w) => `${w.record} ×${w.written}`).join(', ')}`);
  }
  const done = result.actions.filter((a) => a.skipped === undefined);
  const actionsDone = Object.fromEntries(ACTION_KINDS.map((kind) => [kind, done.filter((a) => a.kind === kind).length])) as Record<ChaosActionKind, number>;
  const recoveryMs = Object.fromEntries(ACTION_KINDS.map((kind) => [kind, summary(result.recoveries.filter((r) => r.kind === kind).map((r) => r.ms))])) as Record<ChaosActionKind, ReturnType<typeof summary>>;
  const seconds = (at: number) => Math.round((at - result.startedAt) / 100) / 10;
  const disruptionActions = result.actions.filter((a) => a.skipped === undefined && (a.kind === 'kill' || a.kind === 'zombie'));
  return {
    passed: failures.length === 0 && tally.violations.length === 0,
    failures,
    date: new Date(result.startedAt).toISOString(),
    machine: { node: process.version, platform: `${process.platform} ${process.arch}`, cpus: cpus().length },
    command,
    options: result.options,
    wallMs: result.finishedAt - result.startedAt,
    counts: { produced: tally.produced, consumedUnique: tally.consumedUnique, acks: tally.acks, duplicates: tally.duplicates, lost: tally.lost.length },
    actionsDone,
    actionsSkipped: result.actions.length - done.length,
    duplicatesByShard: Object.fromEntries(tally.duplicatesByShard),
    duplicatesByDisruption: tally.duplicatesByDisruption.map((d) => {
      const action = disruptionActions[d.disruption];
      return { kind: action?.kind ?? '?', worker: action?.worker ?? '?', atS: action === undefined ? 0 : seconds(action.at), shardId: d.shardId, records: d.records, exposureMs: d.exposureMs };
    }),
    failovers: result.failovers,
    recoveryMs,
    faults: {
      kinesis: { ...result.faults.kinesis, totalCalls: sum(result.faults.kinesis.calls), totalFaults: sum(result.faults.kinesis.faults) },
      dynamodb: { ...result.faults.dynamodb, totalCalls: sum(result.faults.dynamodb.calls), totalFaults: sum(result.faults.dynamodb.faults) },
    },
    retries: result.eventCounts.retrying ?? 0,
    eventCounts: result.eventCounts,
    producerErrors: result.producerErrors,
    violations: tally.violations,
    lostSample: tally.lost.slice(0, 20),
    timeline: result.actions.map((a) => ({
      kind: a.kind, atS: seconds(a.at), endedS: seconds(a.endedAt),
      ...(a.worker === undefined ? {} : { worker: a.worker }),
      shards: a.shards,
      ...(a.children === undefined ? {} : { children: a.children }),
      ...(a.skipped === undefined ? {} : { skipped: a.skipped }),
    })),
    runDir: result.runDir,
    ...(effects === undefined ? {} : { effects }),
    ...(deadLetters === undefined ? {} : { deadLetters }),
  };
}

export function formatReport(report: ChaosReport): string {
  const { counts, faults } = report;
  const kinds = (r: FaultProxyCounts) => Object.entries(r.byFault).map(([k, v]) => `${k} ${v}`).join(', ');
  const pct = (part: number, whole: number) => (whole === 0 ? '0' : ((100 * part) / whole).toFixed(1));
  const lines = [
    `kinsumer chaos run: ${report.passed ? 'PASSED' : 'FAILED'}`,
    `  ${report.options.workers} workers from ${report.options.initialPosition}, seed ${report.options.seed}, ${report.options.durationMs / 1000} s window, ${(report.wallMs / 1000).toFixed(0)} s wall, faults ${report.options.faultRate * 100} % of every AWS call`,
    `  actions: ${ACTION_KINDS.map((k) => `${report.actionsDone[k]} ${k}`).join(', ')}${report.actionsSkipped > 0 ? ` (${report.actionsSkipped} skipped)` : ''}`,
    `  records: produced ${counts.produced}, acked ${counts.consumedUnique} distinct (${counts.acks} acks), duplicates ${counts.duplicates}, lost ${counts.lost}`,
    `  duplicates per disruption and shard: ${report.duplicatesByDisruption.length === 0 ? 'none' : report.duplicatesByDisruption.map((d) => `${d.kind} ${d.worker}@${d.atS}s ${d.shardId.slice(-4)}: ${d.records} (${d.exposureMs} ms)`).join('; ')}`,
    `  failovers: ${report.failovers.total} handoffs of ${report.failovers.captures} captures, ${report.failovers.leasesLost} leases lost`,
    `  time to recover (median / p95 / max ms, per shard): ${ACTION_KINDS.filter((k) => report.recoveryMs[k].count > 0).map((k) => `${k} ${report.recoveryMs[k].medianMs} / ${report.recoveryMs[k].p95Ms} / ${report.recoveryMs[k].maxMs} (n=${report.recoveryMs[k].count})`).join('; ')}`,
    `  faults injected: Kinesis ${faults.kinesis.totalFaults} of ${faults.kinesis.totalCalls} calls (${pct(faults.kinesis.totalFaults, faults.kinesis.totalCalls)} %: ${kinds(faults.kinesis)}); DynamoDB ${faults.dynamodb.totalFaults} of ${faults.dynamodb.totalCalls} (${pct(faults.dynamodb.totalFaults, faults.dynamodb.totalCalls)} %: ${kinds(faults.dynamodb)})`,
    `  kinsumer retries: ${report.retries}; error events: ${report.eventCounts.error ?? 0}; producer errors: ${report.producerErrors}`,
  ];
  const { effects } = report;
  if (effects !== undefined) {
    lines.push(`  effects: ${effects.keys} totals in ${effects.table}, sum ${effects.actualSum} of ${effects.expectedSum} produced, ${effects.mismatches.length === 0 ? 'every total exact' : `${effects.mismatches.length} wrong: ${effects.mismatches.slice(0, 5).map((m) => `${m.key} ${m.actual}/${m.expected}`).join(', ')}`}; ${effects.redeliveries} duplicate-rule findings, informational here (records delivered again before their writes committed)`);
  }
  const { deadLetters } = report;
  if (deadLetters !== undefined) {
    lines.push(`  dead letters: ${deadLetters.poison} poison records produced, ${deadLetters.poisoned} processes they killed, ${deadLetters.items} dead letters in ${deadLetters.table} written ${deadLetters.written} times, ${deadLetters.wrong.length === 0 ? 'each exactly once' : `${deadLetters.wrong.length} wrong`}; ${deadLetters.healthy.length} healthy records among them (their owners killed maxDeliveries times in a row before a commit passed them${deadLetters.healthy.length === 0 ? '' : `: ${deadLetters.healthy.slice(0, 5).join(', ')}`})`);
  }
  for (const failure of report.failures) lines.push(`  FAILURE: ${failure}`);
  for (const violation of report.violations.slice(0, 30)) lines.push(`  VIOLATION ${violation.kind}: ${violation.detail}`);
  if (report.violations.length > 30) lines.push(`  ... and ${report.violations.length - 30} more violations (see the JSON report)`);
  if (report.lostSample.length > 0) lines.push(`  lost (first ${report.lostSample.length}): ${report.lostSample.join(' ')}`);
  lines.push(`  logs: ${report.runDir}`);
  return lines.join('\n');
}
