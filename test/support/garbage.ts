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
