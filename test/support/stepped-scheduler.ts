import { VirtualTimeScheduler, VirtualAction } from 'rxjs';

/** Lets promise continuations (async functions inside the code under test) run between timer steps. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Virtual time for code that mixes RxJS timers with promises. TestScheduler.flush() runs every
 * timer synchronously, so an `await` in between never gets its turn; this scheduler instead
 * advances from one due timer to the next and lets the event loop settle after each, so
 * `await`-based code and scheduler-based code interleave as they would in real time — only
 * without waiting.
 */
export class SteppedScheduler extends VirtualTimeScheduler {
  constructor(startMs = 1_764_000_000_000) {
    super(VirtualAction, 0);
    this.frame = startMs;
    this.maxFrames = startMs;
  }

  /** Runs every timer due up to `targetMs`, in order, settling promises between them. */
  async advanceTo(targetMs: number): Promise<void> {
    for (;;) {
      await settle();
      const next = this.actions[0];
      if (next === undefined || next.delay > targetMs) break;
      this.maxFrames = next.delay;
      this.flush();
    }
    if (targetMs > this.frame) this.frame = targetMs;
    this.maxFrames = this.frame;
    await settle();
  }

  advanceBy(ms: number): Promise<void> {
    return this.advanceTo(this.frame + ms);
  }

  /**
   * Advances in `stepMs` steps until `condition` holds; fails after `limitMs` of virtual time.
   * Returns the virtual time it took.
   */
  async until(condition: () => boolean, what: string, limitMs: number, stepMs = 50): Promise<number> {
    const start = this.frame;
    while (!condition()) {
      if (this.frame - start > limitMs) throw new Error(`after ${limitMs} ms of virtual time, still waiting for ${what}`);
      await this.advanceBy(stepMs);
    }
    return this.frame - start;
  }
}
