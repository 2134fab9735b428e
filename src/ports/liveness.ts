// How a lease learns that it is still its holder's: a member with a life keeps every lease it
// captured in that life alive by its clients-row heartbeat alone (docs/architecture.md, "Liveness"),
// so a lease is confirmed by the client's heartbeat, not by writes of its own row — except while a
// member that judges leases by their own rows is live (a Go kinsumer, an older kinsumer-ts): then
// each lease renews its row too.
import type { Observable } from 'rxjs';

/** The client's heartbeat, as each of its leases sees it. */
export interface ClientLiveness {
  /** When (monotonic ms) the client's last accepted heartbeat was sent; `undefined` before the first. */
  confirmedAtMs(): number | undefined;
  /** Emits after each accepted heartbeat (a reader held back for want of a confirmation looks again). */
  readonly confirmed$: Observable<void>;
  /** `true` while a live member judges leases by their own rows: every lease then renews its row every renewal interval. */
  perLeaseRenewal(): boolean;
  /** Emits when {@link perLeaseRenewal} changes (each lease re-times its renewals). */
  readonly perLeaseRenewalChanged$: Observable<void>;
}
