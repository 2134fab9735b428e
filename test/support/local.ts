import { startLocalAws, type LocalAws, type LocalAwsOptions } from '../../src/testing/index.js';

let counter = 0;

/** A name no other test of this run uses (streams and applications share one server per suite). */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}`;
}

/**
 * Starts the local servers once for a `describe` block and stops them after it.
 * Returns a getter, since mocha hooks run after the block body.
 */
export function useLocalAws(options: LocalAwsOptions = {}): () => LocalAws {
  let local: LocalAws | undefined;
  before(async function () {
    this.timeout(120_000);
    local = await startLocalAws(options);
  });
  after(async () => {
    await local?.stop();
  });
  return () => {
    if (local === undefined) throw new Error('local AWS servers are not running (used outside a test?)');
    return local;
  };
}

/** Polls `check` until it returns a value other than `undefined`/`false`, or fails after the deadline. */
export async function eventually<T>(check: () => T | Promise<T>, what: string, timeoutMs = 20_000, intervalMs = 25): Promise<Exclude<T, undefined | false>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as Exclude<T, undefined | false>;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last instanceof Error ? last.message : String(last)})`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
