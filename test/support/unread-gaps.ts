// How long a shard went unread, from what a producer sent and what consumers delivered.
//
// Definition: a shard is *unread* while at least one of its records is waiting (sent, not yet
// delivered to anyone) and none of its records gets delivered for the first time. Its longest
// unread time is the longest such interval: it starts when a record starts waiting on a shard
// with nothing waiting, or at a first delivery after which records still wait, and ends at the
// next first delivery. Redeliveries count for nothing (they show reading, not progress). A record
// never delivered leaves the interval open until `endMs`.

/** A record the producer sent: when (before the put call) and to which shard. */
export interface Sent {
  readonly key: string;
  readonly shardId: string;
  readonly atMs: number;
}

/** A delivery of a record to any consumer. */
export interface Delivered {
  readonly key: string;
  readonly atMs: number;
}

/** Per shard: the longest unread interval, and when it started. */
export interface UnreadGap {
  readonly shardId: string;
  readonly longestMs: number;
  readonly fromMs: number;
}

/** The longest unread interval of every shard that was sent a record, sorted by shard id. */
export function unreadGaps(sent: readonly Sent[], delivered: readonly Delivered[], endMs: number): UnreadGap[] {
  const firstDelivery = new Map<string, number>();
  for (const d of delivered) {
    const seen = firstDelivery.get(d.key);
    if (seen === undefined || d.atMs < seen) firstDelivery.set(d.key, d.atMs);
  }
  const byShard = new Map<string, Sent[]>();
  for (const s of sent) byShard.set(s.shardId, [...(byShard.get(s.shardId) ?? []), s]);
  const gaps: UnreadGap[] = [];
  for (const [shardId, records] of byShard) {
    // Events in time order; at equal times a send comes first (a record delivered the moment it is sent waited 0 ms).
    const events = records.flatMap((r) => {
      const at = firstDelivery.get(r.key);
      const send = { atMs: r.atMs, kind: 0 as const };
      return at === undefined ? [send] : [send, { atMs: Math.max(at, r.atMs), kind: 1 as const }];
    }).sort((a, b) => a.atMs - b.atMs || a.kind - b.kind);
    let waiting = 0;
    let since: number | undefined;
    let longest = { longestMs: 0, fromMs: records[0]?.atMs ?? 0 };
    for (const event of events) {
      if (event.kind === 0) {
        waiting += 1;
        since ??= event.atMs;
        continue;
      }
      if (since !== undefined && event.atMs - since > longest.longestMs) longest = { longestMs: event.atMs - since, fromMs: since };
      waiting -= 1;
      since = waiting > 0 ? event.atMs : undefined;
    }
    if (since !== undefined && endMs - since > longest.longestMs) longest = { longestMs: endMs - since, fromMs: since };
    gaps.push({ shardId, ...longest });
  }
  return gaps.sort((a, b) => (a.shardId < b.shardId ? -1 : a.shardId > b.shardId ? 1 : 0));
}
