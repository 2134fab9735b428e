// A run of transient failures, as the log tells it: every retried call of an outage is a `retrying`
// event (1.5 a second per process while DynamoDB was down, newcomer trial 4), and a line each is a
// flood nobody reads. The first failure of a run is a warning; the rest are counted and summed up
// every FAILURE_SUMMARY_MS; the run ends when no failure came by the time every announced retry
// was due and had time to fail (requestTimeoutMs), which is said too. Each failure is still
// logged at debug (event-log.ts), for whoever wants them all.
import { type SchedulerLike, type Subscription, timer } from 'rxjs';
import { describeError, rootCause } from '../errors/kinsumer-errors.js';
import type { Clock } from '../ports/clock.js';
import type { KinsumerEvent, Logger } from '../types.js';
import { wholeMs } from './whole-ms.js';

/** How often a run of failures is summed up: often enough to see it goes on, rare enough to read. */
export const FAILURE_SUMMARY_MS = 30_000;

/** Operations named in a summary; the rest are counted as `and N more`. */
const OPERATIONS_SHOWN = 4;

type Retrying = Extract<KinsumerEvent, { type: 'retrying' }>;

/** What {@link FailureRuns} needs. */
export interface FailureRunsOptions {
  readonly logger: Logger;
  /** The client's scheduler: the summaries' and the end's timers. */
  readonly scheduler: SchedulerLike;
  /** The client's clocks: how long a run lasted and was quiet is a difference of `elapsedNow`. */
  readonly clock: Clock;
  /** How long a retried call may take to fail in its turn (requestTimeoutMs). */
  readonly attemptMs: number;
}

interface Run {
  readonly startedAtMs: number;
  failures: number;
  /** Failures per operation since the last summary. */
  recent: Map<string, number>;
  /** Failures per operation, the whole run. */
  readonly all: Map<string, number>;
  last: Retrying;
  lastAtMs: number;
  /** By then every retry announced so far was due and had time to fail. */
  dueMs: number;
}

/** The runs of failures of one client (see the file comment). */
export class FailureRuns {
  #run: Run | undefined;
  #summaries: Subscription | undefined;
  #end: Subscription | undefined;
  #closed = false;

  constructor(private readonly options: FailureRunsOptions) {}

  /** A retried call failed. */
  failed(event: Retrying): void {
    const { logger, scheduler, clock, attemptMs } = this.options;
    const nowMs = clock.elapsedNow();
    const dueMs = nowMs + event.delayMs + attemptMs;
    const { operation } = event;
    let run = this.#run;
    if (run === undefined || this.#closed) {
      const obj = { operation, attempt: event.attempt, delayMs: wholeMs(event.delayMs), shardId: event.shardId, err: event.error };
      const further = this.#closed ? '' : `; further failures are summed up every ${FAILURE_SUMMARY_MS / 1000} s until they stop`;
      logger.warn(obj, `kinsumer: ${callOf(event)} failed, retrying in ${wholeMs(event.delayMs)} ms: ${causeOf(event)}${further}`);
      if (this.#closed) return;
      run = { startedAtMs: nowMs, failures: 0, recent: new Map(), all: new Map(), last: event, lastAtMs: nowMs, dueMs };
      this.#run = run;
      this.#summaries = timer(FAILURE_SUMMARY_MS, FAILURE_SUMMARY_MS, scheduler).subscribe(() => this.summarize());
    }
    run.failures += 1;
    run.recent.set(operation, (run.recent.get(operation) ?? 0) + 1);
    run.all.set(operation, (run.all.get(operation) ?? 0) + 1);
    run.last = event;
    run.lastAtMs = nowMs;
    run.dueMs = Math.max(run.dueMs, dueMs);
    this.#end?.unsubscribe();
    this.#end = timer(run.dueMs - nowMs, scheduler).subscribe(() => this.ended());
  }

  /** No more lines about runs (the client stopped); a failure after this is a warning of its own. */
  close(): void {
    this.#closed = true;
    this.#summaries?.unsubscribe();
    this.#end?.unsubscribe();
    this.#run = undefined;
  }

  private summarize(): void {
    const run = this.#run;
    if (run === undefined || run.recent.size === 0) return;
    const failures = [...run.recent.values()].reduce((sum, n) => sum + n, 0);
    const operations = Object.fromEntries(run.recent);
    run.recent = new Map();
    this.options.logger.warn({ failures, operations, err: run.last.error },
      `kinsumer: still failing: ${failures} failure${failures === 1 ? '' : 's'} in the last ${FAILURE_SUMMARY_MS / 1000} s (${operationList(operations)}), the last: ${causeOf(run.last)}`);
  }

  // Said at warn, as the run's start was: whoever saw that it failed sees that it stopped.
  private ended(): void {
    const run = this.#run;
    if (run === undefined) return;
    this.#summaries?.unsubscribe();
    this.#run = undefined;
    const quietMs = wholeMs(this.options.clock.elapsedNow() - run.lastAtMs);
    const lastedMs = wholeMs(run.lastAtMs - run.startedAtMs);
    const operations = Object.fromEntries(run.all);
    this.options.logger.warn({ failures: run.failures, operations, lastedMs, quietMs },
      `kinsumer: recovered: no failure for ${quietMs} ms, past when the retries were due (${run.failures} failure${run.failures === 1 ? '' : 's'} over ${lastedMs} ms: ${operationList(operations)})`);
  }
}

/** `commit on shardId-000000000001`, `shard check`. */
function callOf(event: Retrying): string {
  return event.shardId === undefined ? event.operation : `${event.operation} on ${event.shardId}`;
}

/** The failure in words, by its root cause (`cannot reach DynamoDB at ...: connection refused`). */
function causeOf(event: Retrying): string {
  return describeError(rootCause(event.error) ?? event.error);
}

/** `commit ×20, shard check ×12`: the most frequent first, at most a few. */
function operationList(operations: Readonly<Record<string, number>>): string {
  const sorted = Object.entries(operations).sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1));
  const shown = sorted.slice(0, OPERATIONS_SHOWN).map(([operation, n]) => `${operation} ×${n}`);
  return sorted.length > OPERATIONS_SHOWN ? `${shown.join(', ')} and ${sorted.length - OPERATIONS_SHOWN} more` : shown.join(', ');
}
