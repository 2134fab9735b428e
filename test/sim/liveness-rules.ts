// What the checker knows of the members' lives (docs/liveness.md): each process's heartbeats the
// clients table accepted (when the library sent them, in which life), when another process of its
// clientId took its place, when it began to drain, and the calm-phase crashes whose failover is
// timed. A lease captured in a life is confirmed by that life's heartbeats; its own row's writes
// confirm it too (a legacy member's leases, and every lease's commits). The rules built on these:
// `twin-emission`, `drain-took` and `crash-failover` (checker.ts calls them where the observation
// arrives), and the notion of a live owner and of a fenced lease's last confirmation.
import type { ProcessView } from './checker-state.js';

interface Beat {
  readonly incarnation: number;
  /** When the library built the request (its guard counts from the send). */
  readonly sentAtMs: number;
  /** When the table applied it. */
  readonly acceptedAtMs: number;
}

/** A process's place in its clientId's lives. */
interface Life {
  readonly process: ProcessView;
  readonly incarnation: number;
  /** Its first accepted heartbeat in this life (a take-over, for a later life). */
  readonly registeredAtMs: number;
}

/** A calm-phase crash whose failover is timed. */
export interface TimedCrash {
  readonly process: ProcessView;
  readonly atMs: number;
  /** The shards it held as their current lease when it crashed. */
  readonly shardIds: readonly string[];
  reported: boolean;
}

/** Heartbeats, lives, drains and timed crashes, per process. */
export class Lives {
  readonly #beats = new Map<ProcessView, Beat[]>();
  readonly #lives = new Map<string, Life[]>();
  readonly #draining = new Map<ProcessView, number>();
  readonly crashes: TimedCrash[] = [];

  /** The clients table accepted a heartbeat of `process` in life `incarnation`. */
  heartbeat(process: ProcessView, incarnation: number, sentAtMs: number, acceptedAtMs: number): void {
    let beats = this.#beats.get(process);
    if (beats === undefined) {
      beats = [];
      this.#beats.set(process, beats);
    }
    beats.push({ incarnation, sentAtMs, acceptedAtMs });
    if (beats.length > 256) beats.splice(0, beats.length - 256);
    let lives = this.#lives.get(process.clientId);
    if (lives === undefined) {
      lives = [];
      this.#lives.set(process.clientId, lives);
    }
    if (!lives.some((l) => l.process === process && l.incarnation === incarnation)) lives.push({ process, incarnation, registeredAtMs: acceptedAtMs });
  }

  /**
   * When the last heartbeat of `process` in life `incarnation` that was accepted at or before
   * `beforeMs` (default: any) was sent; `undefined` when none was.
   */
  lastBeatSent(process: ProcessView, incarnation: number | undefined, beforeMs = Number.POSITIVE_INFINITY): number | undefined {
    const beats = this.#beats.get(process) ?? [];
    for (let i = beats.length - 1; i >= 0; i -= 1) {
      const beat = beats[i] as Beat;
      if (beat.acceptedAtMs <= beforeMs && (incarnation === undefined || beat.incarnation === incarnation)) return beat.sentAtMs;
    }
    return undefined;
  }

  /** The life `process` was last registered in. */
  lifeOf(process: ProcessView): number | undefined {
    return this.#beats.get(process)?.at(-1)?.incarnation;
  }

  /**
   * When another process of `process`'s clientId took its place (registered a later life) at or
   * before `atMs`, the earliest such moment; `undefined` when none did.
   */
  replacedAt(process: ProcessView, atMs: number): number | undefined {
    const mine = this.lifeOf(process);
    if (mine === undefined) return undefined;
    const later = (this.#lives.get(process.clientId) ?? []).filter((l) => l.process !== process && l.incarnation > mine && l.registeredAtMs <= atMs);
    return later.length === 0 ? undefined : Math.min(...later.map((l) => l.registeredAtMs));
  }

  /** `process` began to drain at `atMs` (drain(), the row's request, a stop handing over), or stopped draining (`undefined`). */
  draining(process: ProcessView, atMs: number | undefined): void {
    if (atMs === undefined) this.#draining.delete(process);
    else if (!this.#draining.has(process)) this.#draining.set(process, atMs);
  }

  /** Since when `process` drains, if it does. */
  drainingSince(process: ProcessView): number | undefined {
    return this.#draining.get(process);
  }
}
