/**
 * Reports each unreadable row once: a row stays corrupt until someone repairs it, and the stores
 * read the same rows at every shard check. Reported again when its problem changes, or once it
 * was read clean in between.
 */
export class CorruptRowReporter<E extends Error> {
  readonly #reported = new Map<string, string>();

  constructor(private readonly report: ((error: E) => void) | undefined) {}

  /** The row `key` could not be read. */
  corrupt(key: string, error: E): void {
    if (this.#reported.get(key) === error.message) return;
    this.#reported.set(key, error.message);
    this.report?.(error);
  }

  /** The row `key` was read clean. */
  clean(key: string): void {
    this.#reported.delete(key);
  }
}
