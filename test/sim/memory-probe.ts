// The retained-memory invariant (design §8.3, §7.2): per shard, a process keeps at most
// 2 × maxInFlightRecords of the records it was delivered reachable, whatever the operator and its
// concurrency. Every delivered record is watched through a WeakRef; at a measure the garbage
// collector runs and the records still reachable are counted per process and shard, less those
// the application's handler holds at that moment (what a handler keeps is its own business). A full
// collection costs milliseconds, so the simulation measures at its `measure` commands and once
// before it calms down, not after every step.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Delivery, ProcessView } from './checker-state.js';

/** What the probe reports to. */
export interface MemoryHost {
  checks: number;
  readonly stats: { memoryChecks: number; peakRetainedPercent: number };
  fail(invariant: 'retained-memory', atMs: number, message: string): void;
}

interface Watched {
  readonly process: ProcessView;
  readonly shardId: string;
  refs: { readonly ref: WeakRef<object>; readonly delivery: Delivery | undefined }[];
}

/** The garbage collector, exposed at run time (as `node --expose-gc` would); `undefined` if V8 refuses. */
function exposeGc(): (() => void) | undefined {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (typeof existing === 'function') return existing;
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}

let collect: (() => void) | undefined | null = null;

/** Runs a full garbage collection; `false` when the collector cannot be called. */
export function collectGarbage(): boolean {
  if (collect === null) collect = exposeGc();
  if (collect === undefined) return false;
  collect();
  return true;
}

/** Counts the delivered records a process still keeps reachable, per shard. */
export class MemoryProbe {
  readonly #watched = new Map<string, Watched>();

  constructor(private readonly host: MemoryHost, private readonly maxInFlightRecords: number) {}

  /** `record` was delivered to `process` for `shardId`. */
  watch(process: ProcessView, shardId: string, record: object, delivery?: Delivery): void {
    const key = `${process.label} ${shardId}`;
    let watched = this.#watched.get(key);
    if (watched === undefined) {
      watched = { process, shardId, refs: [] };
      this.#watched.set(key, watched);
    }
    watched.refs.push({ ref: new WeakRef(record), delivery });
  }

  /**
   * Collects garbage once the current job is over (a WeakRef keeps its target alive until then)
   * and fails every process and shard above the bound.
   */
  async measure(atMs: number): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    if (!collectGarbage()) return;
    this.host.stats.memoryChecks += 1;
    const bound = 2 * this.maxInFlightRecords;
    for (const [key, watched] of this.#watched) {
      watched.refs = watched.refs.filter(({ ref }) => ref.deref() !== undefined);
      if (watched.refs.length === 0) {
        this.#watched.delete(key);
        continue;
      }
      // What the handler holds (a slow handler's queue, a call still running) is the application's.
      const kept = watched.refs.filter(({ delivery }) => delivery?.heldByHandler !== true);
      this.host.checks += 1;
      this.host.stats.peakRetainedPercent = Math.max(this.host.stats.peakRetainedPercent, Math.round((100 * kept.length) / bound));
      if (kept.length > bound) {
        const acked = kept.filter(({ delivery }) => delivery?.acked === true).length;
        const settled = kept.filter(({ delivery }) => delivery?.record?.settledBy !== undefined).length;
        const leases = new Map<string, number>();
        for (const { delivery } of kept) {
          const counter = String(delivery?.session.token?.counter ?? '?');
          leases.set(counter, (leases.get(counter) ?? 0) + 1);
        }
        this.host.fail('retained-memory', atMs, `${watched.process.label} keeps ${kept.length} records of ${watched.shardId} reachable after a garbage collection, its handler none of them `
          + `(${acked} of them acked, ${settled} settled by an operator; by lease counter: ${[...leases].map(([c, n]) => `${c}: ${n}`).join(', ')}; `
          + `${watched.process.status()}; bound 2 × maxInFlightRecords = ${bound})`);
      }
    }
  }
}
