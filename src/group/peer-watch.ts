// What a client learns of its peers from the clients rows at each check: who holds each shard (to
// name holders in `waiting` events and the log), and which peers went silent (said once each).
import type { ResolvedOptions } from '../options.js';
import type { LiveClient } from '../ports/coordination.js';
import { logSilentPeer } from '../telemetry/event-log.js';
import { clientLabel } from './client-label.js';
import { renewIntervalMs } from './heartbeat.js';

/** The clients rows as one client read them, check after check. */
export class PeerWatch {
  /** Who holds each shard, as the clients rows said last, by name and short id. */
  #holders: ReadonlyMap<string, string> = new Map();
  /** Peers told of as silent, until their row changes again. */
  #silentTold = new Set<string>();

  constructor(private readonly options: Pick<ResolvedOptions, 'clientId' | 'leaseTtlMs' | 'shardCheckFrequencyMs' | 'logger'>) {}

  /** The holder of a shard, as the rows said last (a holder whose row expired still names its leases until someone takes them). */
  holderOf(shardId: string): string | undefined {
    return this.#holders.get(shardId);
  }

  /** A check read the rows. */
  seen(clients: readonly LiveClient[]): void {
    this.#holders = new Map([...this.#holders, ...holdings(clients)]);
    this.#tellSilent(clients);
  }

  // A peer that holds shards and has not renewed its row for longer than a heartbeat and a check is
  // either slow or gone without stop() (a crash): this client may be about to take its shards over,
  // at their expiry. A live peer's row changes at each heartbeat (renewIntervalMs) and this client
  // reads the rows at least once a check, so a row seen unchanged for less than both together is
  // ordinary. Said once per silence, at warn; a live peer's next heartbeat ends it.
  #tellSilent(clients: readonly LiveClient[]): void {
    const { options } = this;
    const silentAfterMs = renewIntervalMs(options) + options.shardCheckFrequencyMs;
    const silent = clients.filter((c) => c.id !== options.clientId && (c.shardIds?.length ?? 0) > 0 && c.unchangedForMs >= silentAfterMs);
    const ids = new Set(silent.map((c) => c.id));
    this.#silentTold = new Set([...this.#silentTold].filter((id) => ids.has(id)));
    for (const peer of silent) {
      if (this.#silentTold.has(peer.id)) continue;
      this.#silentTold.add(peer.id);
      logSilentPeer(options.logger, {
        holder: clientLabel(peer.id, peer.name),
        shardIds: peer.shardIds ?? [],
        silentMs: peer.unchangedForMs,
        expiresInMs: Math.max(0, peer.expiresInMs),
      });
    }
  }
}

/** Shard id → the client whose row says it holds it (the lowest id, when two rows say so), by name and short id. */
function holdings(clients: readonly LiveClient[]): Map<string, string> {
  const holders = new Map<string, string>();
  for (const client of [...clients].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    for (const shardId of client.shardIds ?? []) if (!holders.has(shardId)) holders.set(shardId, clientLabel(client.id, client.name));
  }
  return holders;
}
