// Running totals per shard over every lease of it this client held, for the delivered and acked
// counters. The per-record cost is one integer increment (delivered); acked is derived when read
// (delivered minus what is still unacked), so the ack path carries nothing for it.

/** The totals of one shard. */
export class ShardTally {
  /** Records emitted to the application by this client's leases of the shard. */
  delivered = 0;
  /** Records emitted by leases that have ended and that were not acked while those leases lasted. */
  unackedAtEnd = 0;
  /** The live lease's count of emitted, unacked records (0 while no lease of this client holds the shard). */
  inFlight: () => number = none;

  /** Records acked while the lease that emitted them lasted. */
  get acked(): number {
    return this.delivered - this.unackedAtEnd - this.inFlight();
  }

  /** A lease of the shard starts: its unacked records count from now on. */
  attach(inFlight: () => number): void {
    this.inFlight = inFlight;
  }

  /** That lease ended: what it left unacked will never count as acked. Idempotent per lease. */
  detach(inFlight: () => number): void {
    if (this.inFlight !== inFlight) return;
    this.unackedAtEnd += inFlight();
    this.inFlight = none;
  }
}

const none = (): number => 0;

/** One {@link ShardTally} per shard this client has held, kept for the client's whole life. */
export class ShardTallies {
  readonly #byShard = new Map<string, ShardTally>();

  /** The tally of `shardId` (created at its first lease). */
  of(shardId: string): ShardTally {
    let tally = this.#byShard.get(shardId);
    if (tally === undefined) {
      tally = new ShardTally();
      this.#byShard.set(shardId, tally);
    }
    return tally;
  }

  /** Every shard's totals now, by shard id. */
  counts(): ShardCount[] {
    return [...this.#byShard].map(([shardId, tally]) => ({ shardId, delivered: tally.delivered, acked: tally.acked }))
      .sort((a, b) => (a.shardId < b.shardId ? -1 : a.shardId > b.shardId ? 1 : 0));
  }
}

/** One shard's totals, as the metrics report them. */
export interface ShardCount {
  readonly shardId: string;
  readonly delivered: number;
  readonly acked: number;
}
