// The runner's hold on the worker processes: one slot per worker id, restarts into the same slot
// (same client id: a restarted process keeps its place), and the record of which exits the run
// caused — any other exit, or a worker reporting a failure, is a death the checker reports. A
// worker a poison record killed (POISON_EXIT) is started again at once, as a supervisor would.
import { type Exit, WorkerProcess } from '../../examples/demo/fleet.js';
import { POISON_EXIT } from '../../examples/demo/poison.js';
import type { WorkerConfig } from '../../examples/demo/worker.js';
import type { WorkerEventRecord } from './timeline.js';

export class FleetControl {
  /** Every process started, restarts included, in start order. */
  readonly incarnations: WorkerProcess[] = [];
  private readonly current = new Map<string, WorkerProcess>();
  private readonly caused = new Set<WorkerProcess>();
  private readonly exits = new Map<WorkerProcess, Exit>();
  private closing = false;
  /** Processes a poison record killed (each started again in its slot). */
  poisoned = 0;

  constructor(private readonly configFor: (id: string) => WorkerConfig) {}

  start(id: string): WorkerProcess {
    const incarnation = this.incarnations.filter((w) => w.id === id).length + 1;
    // A new ack log per incarnation: a process killed mid-write may leave half a line behind.
    const worker = new WorkerProcess({ ...this.configFor(id), logFile: `${id}.${incarnation}.acks.jsonl` });
    this.incarnations.push(worker);
    void worker.exited.then((exit) => {
      this.exits.set(worker, exit);
      if (exit.code !== POISON_EXIT) return;
      this.caused.add(worker);
      this.poisoned += 1;
      if (!this.closing && this.current.get(id) === worker) this.start(id);
    });
    this.current.set(id, worker);
    return worker;
  }

  get(id: string): WorkerProcess | undefined {
    return this.current.get(id);
  }

  ids(): string[] {
    return [...this.current.keys()];
  }

  running(): WorkerProcess[] {
    return [...this.current.values()].filter((w) => w.running);
  }

  /** SIGKILL, which the run caused; resolves when the process is gone. */
  async kill(worker: WorkerProcess): Promise<number> {
    this.caused.add(worker);
    await worker.kill();
    return Date.now();
  }

  /** Graceful stop, which the run caused; resolves when the process has exited. */
  async stop(worker: WorkerProcess): Promise<number> {
    this.caused.add(worker);
    await worker.stop();
    return Date.now();
  }

  async stopAll(): Promise<void> {
    this.closing = true;
    await Promise.all(this.running().map((w) => this.stop(w)));
  }

  /** Failures reported by any incarnation, and exits the run did not cause (or graceful stops that did not exit 0). */
  deaths(): { w: string; detail: string }[] {
    const deaths: { w: string; detail: string }[] = [];
    for (const worker of this.incarnations) {
      for (const failure of worker.failures) deaths.push({ w: worker.id, detail: `failed: ${failure}` });
      const exit = this.exits.get(worker);
      if (exit === undefined) continue;
      const killed = exit.signal === 'SIGKILL' && this.caused.has(worker);
      const stopped = (exit.code === 0 || exit.code === POISON_EXIT) && this.caused.has(worker);
      if (!killed && !stopped && worker.failures.length === 0) {
        deaths.push({ w: worker.id, detail: `exited (code ${String(exit.code)}, signal ${String(exit.signal)}) without being told to` });
      }
    }
    return deaths;
  }

  /** Every event of every incarnation, with the worker id. */
  events(): WorkerEventRecord[] {
    return this.incarnations.flatMap((worker) => worker.events.map((event) => ({ ...event, w: worker.id })));
  }
}
