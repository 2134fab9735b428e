// Two processes configured with one clientId must not both run: the one whose heartbeat finds the
// other's row (another instance id) in its place watches that row instead of overwriting it. Pure,
// shared by the DynamoDB clients store and the in-memory one, so both follow one rule.
import { RowObserver, observedExpired } from '../lease/row-observer.js';

/** What the watcher concludes from one read of the other process's row. */
export interface RivalVerdict {
  /** Seen unchanged for the lease TTL: its writer is gone, the row may be taken over (as read). */
  readonly gone: boolean;
  /** Seen changing since the watch began: another live process heartbeats with this clientId. */
  readonly heartbeating: boolean;
}

/** Watches the row of another process with this clientId, from the first refused heartbeat on. */
export class RivalRow {
  #watch: { readonly observer: RowObserver; readonly firstVersion: string } | undefined;

  constructor(private readonly leaseTtlMs: number) {}

  /** Records a read that answered `version` at `nowMs` (this client's clock, when the answer arrived). */
  see(version: string, nowMs: number): RivalVerdict {
    this.#watch ??= { observer: new RowObserver(), firstVersion: version };
    const unchangedForMs = this.#watch.observer.see('rival', version, nowMs);
    return { gone: observedExpired(unchangedForMs, this.leaseTtlMs), heartbeating: version !== this.#watch.firstVersion };
  }

  /** This process's own row is written: the watch is over (a later rival starts a new one). */
  clear(): void {
    this.#watch = undefined;
  }
}
