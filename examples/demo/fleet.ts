// The parent side of a fleet: starts worker processes, signals them (crash, pause, resume,
// graceful stop), and collects what they report.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SerializedEvent, WorkerConfig, WorkerReport } from './worker.js';

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));

/**
 * The workers' timings in the demo and the chaos run: small, so a crash is noticed within a short
 * run — a dead worker's leases expire after 3 s (the library's default is 15 s) and the leader
 * lists shards every second.
 */
export const FLEET_TIMINGS = {
  throttleDelayMs: 200,
  commitFrequencyMs: 500,
  shardCheckFrequencyMs: 500,
  leaderActionFrequencyMs: 1000,
  leaseTtlMs: 3000,
  shutdownTimeoutMs: 5000,
} as const;

/** How a worker process ended. */
export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly at: number;
}

/** A running worker process. */
export class WorkerProcess {
  readonly events: Array<SerializedEvent & { readonly at: number }> = [];
  readonly failures: string[] = [];
  /** Records acked so far, as last reported (every 250 ms). */
  acked = 0;
  readonly startedAt = Date.now();
  readonly exited: Promise<Exit>;
  private readonly child: ChildProcess;
  private exit: Exit | undefined;

  /**
   * `detached`: the worker gets its own process group, so a Ctrl-C at the terminal (sent to the
   * whole foreground group) reaches only the parent, which then stops the worker in order.
   */
  constructor(readonly config: WorkerConfig, spawnOptions: { readonly detached?: boolean } = {}) {
    this.child = fork(WORKER, [JSON.stringify(config)], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      ...(spawnOptions.detached === true ? { detached: true } : {}),
    });
    this.child.on('message', (report: WorkerReport) => {
      if (report.type === 'event') this.events.push({ ...report.event, at: report.at });
      else if (report.type === 'acked') this.acked = report.count;
      else if (report.type === 'failed') this.failures.push(report.error);
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => {
      this.exit = { code, signal, at: Date.now() };
      resolve(this.exit);
    }));
  }

  get id(): string {
    return this.config.id;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  /** The shards it holds, from its lease events. */
  held(): string[] {
    const held = new Set<string>();
    for (const event of this.events) {
      if (event.shardId === undefined) continue;
      if (event.type === 'lease-acquired') held.add(event.shardId);
      if (event.type === 'lease-released' || event.type === 'lease-lost') held.delete(event.shardId);
    }
    return this.running ? [...held].sort() : [];
  }

  /** A crash: SIGKILL, no release, no final commit. */
  kill(): Promise<Exit> {
    if (this.running) this.child.kill('SIGKILL');
    return this.exited;
  }

  /** Freezes the process (SIGSTOP): it holds its leases but renews nothing — a zombie when resumed late. */
  pause(): void {
    if (this.running) this.child.kill('SIGSTOP');
  }

  resume(): void {
    if (this.running) this.child.kill('SIGCONT');
  }

  /** Graceful stop: drain, final commits, releases; resolves when the process has exited. */
  stop(): Promise<Exit> {
    if (this.running && this.child.connected) this.child.send('stop');
    else if (this.running) this.child.kill('SIGTERM');
    return this.exited;
  }
}
