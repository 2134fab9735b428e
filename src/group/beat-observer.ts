// When did another member send its heartbeats, on THIS member's clock? Every heartbeat of this
// library writes `Uptime`: how long its process had run (its own monotonic clock) when it sent it.
// Uptimes are differences on one clock, so they are never compared with this host's clock: what
// this member learns is where the sender's origin lies on its own clock. A read whose answer
// arrived at `a` and first showed uptime `u` proves the heartbeat was sent by `a`: origin ≤ a − u
// (an upper bound, safe). A read sent at `p` that still showed the previous heartbeat says the next
// one (uptime `u'`) was not written yet: origin ≳ p − u' (a lower bound, for planning only: it
// assumes the write landed when it was sent). The row expires one TTL after the upper bound of its
// last heartbeat's send — never earlier than one TTL after the heartbeat really went out, and, once
// the bounds are tight, hardly later: a crash just after a heartbeat is taken over one TTL after it.
//
// Pure, in memory, per reader. A reader keeps bounds from the last WINDOW_MS only: two monotonic
// clocks drift apart by parts per million, which a ten-minute window keeps to well under a millisecond.

/** How long a bound on another member's origin is kept. */
const WINDOW_MS = 10 * 60_000;
/** Bounds kept per member at most (a reader sees at most one new heartbeat per read). */
const MAX_BOUNDS = 64;

/** What a reader knows of one member's heartbeats. */
export interface BeatEstimate {
  /** When (reader's clock) the member's row expires if it stays as read: one TTL after the latest send bound. */
  readonly expiresAtMs: number;
  /** The reader's best guess of when (its clock) the member sends its next heartbeat; `undefined` before two heartbeats were seen. */
  readonly nextBeatAtMs: number | undefined;
  /** How far apart the bounds on the member's origin are (∞ before a lower bound exists). */
  readonly uncertaintyMs: number;
}

interface Bound {
  readonly atMs: number;
  readonly value: number;
}

interface MemberBeats {
  readonly life: string;
  uptimeMs: number;
  /** The uptime seen before the current one (its successor's distance estimates the member's period). */
  previousUptimeMs: number | undefined;
  /** When the latest read that still showed `uptimeMs` was sent. */
  lastReadSentMs: number;
  readonly upper: Bound[];
  readonly lower: Bound[];
}

/** One reader's knowledge of the heartbeats of the members it reads. */
export class BeatObserver {
  readonly #members = new Map<string, MemberBeats>();

  /**
   * Records a read of `key` (sent at `sentAtMs`, answered at `answeredAtMs`, the reader's monotonic
   * clock) that showed the member's life `life` (its instance and incarnation) at `uptimeMs`.
   */
  see(key: string, life: string, uptimeMs: number, sentAtMs: number, answeredAtMs: number): void {
    let member = this.#members.get(key);
    if (member === undefined || member.life !== life) {
      member = { life, uptimeMs, previousUptimeMs: undefined, lastReadSentMs: sentAtMs, upper: [], lower: [] };
      this.#members.set(key, member);
      push(member.upper, { atMs: answeredAtMs, value: answeredAtMs - uptimeMs });
      return;
    }
    if (uptimeMs !== member.uptimeMs) {
      push(member.upper, { atMs: answeredAtMs, value: answeredAtMs - uptimeMs });
      const periodMs = member.previousUptimeMs === undefined ? undefined : member.uptimeMs - member.previousUptimeMs;
      // The read before did not show this heartbeat: it was sent after that read went out — if it
      // is the very next one (a heartbeat seen late, after others we missed, says nothing of this).
      if (periodMs !== undefined && uptimeMs - member.uptimeMs <= 1.5 * periodMs) push(member.lower, { atMs: answeredAtMs, value: member.lastReadSentMs - uptimeMs });
      member.previousUptimeMs = member.uptimeMs;
      member.uptimeMs = uptimeMs;
    }
    member.lastReadSentMs = sentAtMs;
  }

  /** Forgets every key but `keys` (a full read of the table: the rows not in it are gone). */
  keepOnly(keys: Iterable<string>): void {
    const kept = new Set(keys);
    for (const key of this.#members.keys()) if (!kept.has(key)) this.#members.delete(key);
  }

  /**
   * What this reader knows of `key`'s heartbeats at `nowMs`, for a row that lives `ttlMs` past its
   * last heartbeat; `periodMs`: how often members heartbeat (default: as the last two heartbeats seen).
   */
  estimate(key: string, ttlMs: number, nowMs: number, periodMs?: number): BeatEstimate | undefined {
    const member = this.#members.get(key);
    if (member === undefined) return undefined;
    const recent = (bounds: Bound[]) => bounds.filter((b) => nowMs - b.atMs <= WINDOW_MS);
    const uppers = recent(member.upper);
    // The latest upper bound is never out of the window's reach: it is what the row expires by.
    const hi = Math.min(...(uppers.length > 0 ? uppers : member.upper.slice(-1)).map((b) => b.value));
    const lowers = recent(member.lower);
    const lo = lowers.length > 0 ? Math.min(hi, Math.max(...lowers.map((b) => b.value))) : Number.NEGATIVE_INFINITY;
    const period = periodMs ?? (member.previousUptimeMs === undefined ? undefined : member.uptimeMs - member.previousUptimeMs);
    const origin = Number.isFinite(lo) ? (lo + hi) / 2 : period === undefined ? hi : hi - period / 2;
    return {
      expiresAtMs: hi + member.uptimeMs + ttlMs,
      nextBeatAtMs: period === undefined || period <= 0 ? undefined : origin + member.uptimeMs + period,
      uncertaintyMs: hi - lo,
    };
  }
}

function push(bounds: Bound[], bound: Bound): void {
  bounds.push(bound);
  if (bounds.length > MAX_BOUNDS) bounds.splice(0, bounds.length - MAX_BOUNDS);
}
