// Expiry by local observation, the AWS KCL's rule: a row another process keeps alive (a lease, a
// client's heartbeat, the leader lock) is expired when THIS client has seen it unchanged for a full
// TTL on its own clock, counted from the first read that showed it so. Its LastUpdate is only one
// more opaque part of the value: no timestamp written by another host is ever compared with this
// host's clock, so clocks that are minutes apart change nothing.
//
// Pure and in memory only (never persisted): a client that has just started has seen nothing for
// long, so to it every row is live for one TTL. The DynamoDB stores and the in-memory ones each
// keep one RowObserver per client and feed it every read, so both judge by this one rule.

/**
 * What one client has seen of rows written by others: for each key, the value its last read
 * answered and since when (on this client's clock) that value has not changed.
 */
export class RowObserver {
  readonly #seen = new Map<string, { readonly version: string; readonly sinceMs: number }>();

  /**
   * Records that a read of `key` answered `version`, at `nowMs` on this client's clock (take it
   * when the answer arrived: the write it shows landed before then). Returns how long the row has
   * shown this version: 0 when it is new to this client or has changed since the last read.
   */
  see(key: string, version: string, nowMs: number): number {
    const seen = this.#seen.get(key);
    if (seen === undefined || seen.version !== version) {
      this.#seen.set(key, { version, sinceMs: nowMs });
      return 0;
    }
    // nowMs is on a monotonic clock (Clock.elapsedNow); an injected one that goes back only delays an expiry.
    return Math.max(0, nowMs - seen.sinceMs);
  }

  /** Forgets `key` (its row was deleted: if it comes back, it is new). */
  forget(key: string): void {
    this.#seen.delete(key);
  }

  /** Forgets every key but `keys` (a full read of a table: the rows not in it are gone). */
  keepOnly(keys: Iterable<string>): void {
    const kept = new Set(keys);
    for (const key of this.#seen.keys()) if (!kept.has(key)) this.#seen.delete(key);
  }
}

/** The rule: a row is expired once it was seen unchanged for at least `ttlMs`. */
export function observedExpired(unchangedForMs: number, ttlMs: number): boolean {
  return unchangedForMs >= ttlMs;
}
