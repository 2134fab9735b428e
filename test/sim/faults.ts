// Faults injected from outside the library: every port a simulated process talks to is wrapped
// in a Proxy (as test/support/memory-group.ts gates its members), so the library runs unchanged.
// A call may fail with a transient AWS error or never answer, either before it reaches the table
// or stream or after it took effect (the ambiguous timeout); a frozen process sends nothing until
// it thaws, a crashed one nothing ever again. The wrapper also reports what the tables accepted.
import { type Observable, NEVER, concat, defer, filter, ignoreElements, map, switchMap, take, tap, throwError, type BehaviorSubject } from 'rxjs';
import type { FanOutPort, IteratorStart, ShardEventPull } from '../../src/ports/stream.js';
import { awsError } from '../../src/testing/memory-stream.js';
import { asDateHeader } from './date-header.js';

/** What happens to one call. */
export type CallFate = 'ok' | 'fault-before' | 'fault-after' | 'hang-before' | 'hang-after';

interface Window {
  /** A client id, or `all`. */
  readonly client: string;
  readonly kind: 'fault' | 'hang';
  readonly percent: number;
  readonly untilMs: number;
}

/** The fault windows in force, and the seeded draw that decides each call's fate. */
export class FaultPlan {
  readonly #windows: Window[] = [];
  /** Calls that failed or hung, by fate (for the report). */
  readonly counts: Record<CallFate, number> = { ok: 0, 'fault-before': 0, 'fault-after': 0, 'hang-before': 0, 'hang-after': 0 };
  /** The calls that never answered (`c0 renew (after it took effect)`), for a human reading a failure. */
  readonly hung: string[] = [];

  constructor(private readonly random: () => number, private readonly now: () => number) {}

  /** Opens a window for one client id (or `all`). */
  open(client: string, kind: 'fault' | 'hang', percent: number, durationMs: number): void {
    this.#windows.push({ client, kind, percent, untilMs: this.now() + durationMs });
  }

  /** Every window closes (the schedule calms). Calls already hung stay hung. */
  clear(): void {
    this.#windows.length = 0;
  }

  /** The fate of the next call of `client`. Draws only while a window is open, so a calm run draws nothing. */
  fate(client: string, operation: string): CallFate {
    const now = this.now();
    let fault = 0;
    let hang = 0;
    for (let i = this.#windows.length - 1; i >= 0; i -= 1) {
      const window = this.#windows[i] as Window;
      if (window.untilMs <= now) {
        this.#windows.splice(i, 1);
        continue;
      }
      if (window.client !== 'all' && window.client !== client) continue;
      if (window.kind === 'fault') fault = Math.max(fault, window.percent);
      else hang = Math.max(hang, window.percent);
    }
    if (fault === 0 && hang === 0) return 'ok';
    const draw = this.random() * 100;
    const after = this.random() < 0.5;
    const fate: CallFate = draw < hang ? (after ? 'hang-after' : 'hang-before') : draw < hang + fault ? (after ? 'fault-after' : 'fault-before') : 'ok';
    this.counts[fate] += 1;
    if (fate === 'hang-before' || fate === 'hang-after') this.hung.push(`${client} ${operation}${fate === 'hang-after' ? ' (after it took effect)' : ''}`);
    return fate;
  }
}

/** A transient AWS error for a call, as the SDK would raise it. */
function transientError(operation: string, random: () => number): Error {
  if (operation === 'getRecords' && random() < 0.3) return awsError('ExpiredIteratorException', { message: 'Iterator expired (simulated)' });
  return random() < 0.5
    ? awsError('ProvisionedThroughputExceededException', { message: `${operation}: throttled (simulated)` })
    : awsError('InternalServerError', { message: `${operation}: 500 (simulated)`, status: 500 });
}

/** The process a port belongs to, as the wrapper sees it. */
export interface CallerState {
  readonly clientId: string;
  /** `true` while the process may send calls; a crashed process never again. */
  readonly sending$: BehaviorSubject<boolean>;
  readonly crashed: boolean;
}

/**
 * Sees a call's answer before any injected fault: what the table or stream really did.
 * `calledAtMs` is when the library built the request (a write's snapshot is taken then).
 */
export type CallObserver = (operation: string, args: readonly unknown[], value: unknown, calledAtMs: number) => void;

/**
 * Wraps every method of `port` that returns an Observable: gated on the caller running, with the
 * fate drawn from `plan` at subscription, and `observe` told of each real answer.
 */
export function faultyPort<T extends object>(port: T, caller: CallerState, plan: FaultPlan | undefined, random: () => number, observe?: CallObserver, now: () => number = Date.now): T {
  return new Proxy(port, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      const operation = String(property);
      return (...args: unknown[]) => {
        // The ports are cold: calling builds the request, subscribing sends it (again at each retry).
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!isObservable(result)) return result;
        const calledAtMs = now();
        const answer$ = observe === undefined ? result : result.pipe(tap((answer) => observe(operation, args, answer, calledAtMs)));
        const send = (): Observable<unknown> => {
          const fate = plan?.fate(caller.clientId, operation) ?? 'ok';
          switch (fate) {
            case 'ok': return answer$;
            case 'hang-before': return NEVER;
            case 'fault-before': return throwError(() => transientError(operation, random));
            case 'fault-after': return concat(answer$.pipe(ignoreElements()), throwError(() => transientError(operation, random)));
            case 'hang-after': return concat(answer$.pipe(ignoreElements()), NEVER);
          }
        };
        return defer(() => {
          if (caller.crashed) return NEVER;
          if (caller.sending$.value) return send();
          return caller.sending$.pipe(filter(Boolean), take(1), switchMap(send));
        });
      };
    },
  });
}

function isObservable(value: unknown): value is Observable<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { subscribe?: unknown }).subscribe === 'function'
    && typeof (value as { pipe?: unknown }).pipe === 'function';
}


/** Sees the service accept a SubscribeToShard (what the checker takes for a first read). */
export type SubscribeObserver = (shardId: string, start: IteratorStart) => void;

/**
 * The fan-out port of one process, gated and faulted as {@link faultyPort} does the others, its
 * accepted subscriptions' `streamTime` as the adapter reads it (date-header.ts). A
 * SubscribeToShard may fail or hang before or after the service accepted it (after: it took over
 * the shard's previous subscription, and the client never learns it); a pull may fail (a dropped
 * connection) but never hangs — a silent connection is bounded by the subscription's renewal,
 * minutes, which the simulation leaves to the reader's own tests.
 */
export function faultyFanOut(port: FanOutPort, caller: CallerState, plan: FaultPlan, random: () => number, observe: SubscribeObserver): FanOutPort {
  const gate = <T>(send: () => Observable<T>): Observable<T> => defer(() => {
    if (caller.crashed) return NEVER;
    if (caller.sending$.value) return send();
    return caller.sending$.pipe(filter(Boolean), take(1), switchMap(send));
  });
  const pulls = (events: ShardEventPull): ShardEventPull => ({
    ...(events.streamTime === undefined ? {} : { streamTime: asDateHeader(events.streamTime) as Date }),
    next: () => gate(() => {
      const fate = plan.fate(caller.clientId, 'subscribeToShard event');
      if (fate === 'ok' || fate === 'hang-before' || fate === 'hang-after') return events.next();
      return throwError(() => transientError('subscribeToShard', random));
    }),
  });
  const plain = faultyPort(port, caller, plan, random);
  return {
    describeConsumer: (name) => plain.describeConsumer(name),
    registerConsumer: (name) => plain.registerConsumer(name),
    deregisterConsumer: (name) => plain.deregisterConsumer(name),
    subscribeToShard: (consumerArn, shardId, start) => gate(() => {
      const accepted$ = port.subscribeToShard(consumerArn, shardId, start).pipe(tap(() => observe(shardId, start)), map(pulls));
      switch (plan.fate(caller.clientId, 'subscribeToShard')) {
        case 'ok': return accepted$;
        case 'hang-before': return NEVER;
        case 'fault-before': return throwError(() => transientError('subscribeToShard', random));
        case 'fault-after': return concat(accepted$.pipe(take(1), ignoreElements()), throwError(() => transientError('subscribeToShard', random)));
        case 'hang-after': return concat(accepted$.pipe(take(1), ignoreElements()), NEVER);
      }
    }),
  };
}
