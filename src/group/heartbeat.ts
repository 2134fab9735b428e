// The member's renewal: its clients-row heartbeat, every renewal interval (a third of the lease TTL)
// after the last one, and at once (one at a time) whenever what the row says changes — the shards
// it holds or wants, its draining. A member with a life keeps every lease it captured in that life
// alive by this heartbeat alone (docs/architecture.md, "Liveness"), so each lease counts as
// confirmed while the last accepted heartbeat is younger than two renewal intervals: a member
// whose heartbeats stop being accepted (a partition, a pause, the row taken by a newer life)
// stops emitting then, a renewal interval before any other member may take its leases.
import {
  type Observable, BehaviorSubject, Subject, defer, endWith, filter, ignoreElements, interval, map, merge,
  startWith, switchMap, tap, throttle, throwError, timeout,
} from 'rxjs';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { RequestTimeoutError } from '../errors/kinsumer-errors.js';
import { retryTransient } from '../errors/retry-backoff.js';
import type { ResolvedOptions } from '../options.js';
import type { Heartbeat, MembershipStore, Registration } from '../ports/coordination.js';
import type { ClientLiveness } from '../ports/liveness.js';
import type { KinsumerEvent } from '../types.js';

/** How often a member heartbeats: a third of the lease TTL (two missed ones still leave a third). */
export function renewIntervalMs(options: Pick<ResolvedOptions, 'leaseTtlMs'>): number {
  return Math.max(1, Math.floor(options.leaseTtlMs / 3));
}

/** An accepted heartbeat, and when it was sent (monotonic ms). */
export interface Accepted {
  readonly registration: Extract<Registration, { registered: true }>;
  readonly sentAtMs: number;
}

/** What the heartbeat loop needs. */
export interface HeartbeatDeps {
  readonly membership: MembershipStore;
  readonly options: ResolvedOptions;
  readonly emit: (event: KinsumerEvent) => void;
  /** What the row says now. */
  readonly beat: () => Heartbeat;
  /** Emits when {@link beat} may have changed: a heartbeat follows at once if it did. */
  readonly changed$: Observable<void>;
  /** Each accepted heartbeat. */
  readonly accepted: (accepted: Accepted) => void;
  /** Another process took the clientId's place: the loop ends (without error); the member must end. */
  readonly replaced: (by: string | undefined) => void;
}

/** The client's heartbeat as its leases see it (ports/liveness.ts), fed by the loop and the checks. */
export class HeartbeatLiveness implements ClientLiveness {
  readonly #confirmed = new Subject<void>();
  readonly #perLease = new BehaviorSubject(false);
  #confirmedAtMs: number | undefined;
  #confirmedAtWallMs: number | undefined;
  readonly confirmed$ = this.#confirmed.asObservable();
  readonly perLeaseRenewalChanged$: Observable<void> = this.#perLease.pipe(
    filter((value, index) => index > 0 || value),
    map(() => undefined),
  );

  confirmedAtMs(): number | undefined {
    return this.#confirmedAtMs;
  }

  /** When (wall clock) the last accepted heartbeat was sent: `status().lastHeartbeatAt`. */
  confirmedAtWallMs(): number | undefined {
    return this.#confirmedAtWallMs;
  }

  perLeaseRenewal(): boolean {
    return this.#perLease.value;
  }

  /** A heartbeat sent at `sentAtMs` (monotonic; `wallMs` on the wall clock) was accepted. */
  confirm(sentAtMs: number, wallMs: number): void {
    if (this.#confirmedAtMs !== undefined && sentAtMs <= this.#confirmedAtMs) return;
    this.#confirmedAtMs = sentAtMs;
    this.#confirmedAtWallMs = wallMs;
    this.#confirmed.next();
  }

  /** Whether a live member judges leases by their own rows (a check's finding). */
  setPerLeaseRenewal(perLease: boolean): void {
    if (perLease !== this.#perLease.value) this.#perLease.next(perLease);
  }
}

/**
 * The heartbeat loop, while subscribed: the first heartbeat registers (static membership: it takes
 * the place of another process of the clientId at once), then one every renewal interval after
 * the last one sent, and one whenever the row's content changed (never two at once: a change
 * during a heartbeat brings one more right after it). A heartbeat that fails for a transient
 * reason, or gets no answer within a renewal interval, is sent again with backoff (each attempt
 * `retrying`). Never emits; errors only on a fault that stops the client.
 */
export function heartbeats(deps: HeartbeatDeps): Observable<never> {
  const { options, emit, membership } = deps;
  const everyMs = renewIntervalMs(options);
  let written = '';
  let sentAtMs = 0;
  const done = new Subject<void>();
  const send$ = defer(() => {
    const beat = deps.beat();
    const key = JSON.stringify(beat);
    return defer(() => {
      sentAtMs = options.clock.elapsedNow();
      const wallMs = options.clock.wallNow();
      // Bounded by a renewal interval, not the request bound: a heartbeat late by more is worth nothing.
      return membership.heartbeat(beat.held, { ...(beat.wants === undefined ? {} : { wants: beat.wants }), ...(beat.draining === undefined ? {} : { draining: beat.draining }) }).pipe(
        timeout({ first: everyMs, with: () => throwError(() => new RequestTimeoutError('heartbeat', everyMs)), scheduler: options.scheduler }),
        map((registration) => ({ registration, sentAtMs, wallMs })),
      );
    }).pipe(
      retryTransient({
        operation: 'heartbeat', scheduler: options.scheduler, emit, policy: { baseMs: 100, maxMs: everyMs },
        isRetriable: (error) => error instanceof RequestTimeoutError || classifyAwsError(error) === 'transient',
      }),
      tap(({ registration, sentAtMs: sent }) => {
        if (!registration.registered) {
          deps.replaced(registration.replacedBy);
          return;
        }
        written = key;
        deps.accepted({ registration, sentAtMs: sent });
      }),
      ignoreElements(),
      endWith(null),
      tap({ complete: () => done.next() }),
    );
  });
  const ticks$ = done.pipe(startWith(undefined), switchMap(() => interval(everyMs, options.scheduler)));
  const changes$ = deps.changed$.pipe(filter(() => JSON.stringify(deps.beat()) !== written));
  return merge(ticks$, changes$).pipe(
    startWith(undefined),
    throttle(() => send$, { leading: true, trailing: true }),
    ignoreElements(),
  );
}
