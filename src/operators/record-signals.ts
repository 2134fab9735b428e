// The signal a handler call gets: aborted when the record's lease ends (lost, or given up) or when
// the operator is unsubscribed (or errors). One combined signal per lease, made once and kept
// while the lease lives, instead of one per record.
import { setMaxListeners } from 'node:events';
import { leaseSignalOf } from '../reading/lease-signal.js';
import type { KinsumerRecord } from '../types.js';

/** Signals of one operator subscription. */
export class RecordSignals {
  private readonly own = new AbortController();
  private readonly combined = new WeakMap<AbortSignal, AbortSignal>();

  constructor() {
    // Every record waiting for a retry listens on its signal: many listeners are expected, not a leak.
    setMaxListeners(0, this.own.signal);
  }

  /** Aborts every signal handed out (the operator is unsubscribed, errored or done). */
  abort(reason: unknown): void {
    this.own.abort(reason);
  }

  /** The signal for a record's handler calls. */
  for(record: KinsumerRecord): AbortSignal {
    const lease = leaseSignalOf(record);
    if (lease === undefined) return this.own.signal;
    let signal = this.combined.get(lease);
    if (signal === undefined) {
      signal = either(lease, this.own.signal);
      this.combined.set(lease, signal);
    }
    return signal;
  }
}

/** A signal aborted by whichever of `lease` and `own` aborts first (AbortSignal.any needs Node 20.3). */
function either(lease: AbortSignal, own: AbortSignal): AbortSignal {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  if (lease.aborted || own.aborted) {
    controller.abort(lease.aborted ? lease.reason : own.reason);
    return controller.signal;
  }
  const fromLease = () => {
    own.removeEventListener('abort', fromOwn);
    controller.abort(lease.reason);
  };
  const fromOwn = () => {
    lease.removeEventListener('abort', fromLease);
    controller.abort(own.reason);
  };
  lease.addEventListener('abort', fromLease, { once: true });
  own.addEventListener('abort', fromOwn, { once: true });
  return controller.signal;
}
