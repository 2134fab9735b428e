import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// The garbage collector, for retention tests, without starting mocha with --expose-gc: the flag
// set at run time applies to contexts made after it, and a new context's global `gc` collects the
// whole heap.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/**
 * Collects garbage after the current job ended (a WeakRef created or dereferenced in a job keeps
 * its target alive until that job is over), so the WeakRefs a test holds show what is reachable.
 */
export async function collectGarbage(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
}

/** How many of `refs` still point at a live object. */
export function alive(refs: readonly WeakRef<object>[]): number {
  return refs.filter((ref) => ref.deref() !== undefined).length;
}

/**
 * How many of `refs` are still alive after up to `rounds` collections, each after the event loop
 * turned (stopping as soon as none is): what is still pending for a turn or two — the last
 * callbacks of a finished stop, a promise's continuation — may hold an object that nothing keeps.
 */
export async function aliveAfterCollections(refs: readonly WeakRef<object>[], rounds = 5): Promise<number> {
  for (let round = 0; round < rounds; round += 1) {
    await collectGarbage();
    if (alive(refs) === 0) return 0;
  }
  return alive(refs);
}
