// An error kept after the moment it was reported (status().lastError) must not keep what its
// frames saw. V8 records a thrown error's stack as call sites that hold each frame's function and
// receiver — and through their closures whatever those closed over (a batch of records, a lease's
// state) — until `stack` is first read, when it becomes a string and the call sites are let go.

/** Makes `error` (and the errors of its `cause` chain) hold its stack as text only; returns it. */
export function keepable<T>(error: T): T {
  const seen = new Set<unknown>();
  for (let e: unknown = error; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    // Reading the stack formats it: the structured call sites are released.
    void e.stack;
  }
  return error;
}
