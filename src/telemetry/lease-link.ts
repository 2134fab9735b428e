// The link from a record to what its handler spans need: the stream's name and the tracer provider
// of the client that read it. Keyed by the lease's signal (one per lease session, already on every
// record, see reading/lease-signal.ts), so linking costs one WeakMap entry per lease and nothing per record.
import { leaseSignalOf } from '../reading/lease-signal.js';
import type { KinsumerRecord } from '../types.js';
import type { TracerProviderLike } from './providers.js';

/** What a handler span needs from the client that delivered the record. */
export interface LeaseTracing {
  /** The stream's name (span name `process <stream>`, `messaging.destination.name`). */
  readonly stream: string;
  /** The client's `tracerProvider` option; `undefined`: the global provider. */
  readonly tracerProvider: TracerProviderLike | undefined;
}

const links = new WeakMap<AbortSignal, LeaseTracing>();

/** Records read under the lease of `signal` are traced with `tracing`. */
export function linkLease(signal: AbortSignal, tracing: LeaseTracing): void {
  links.set(signal, tracing);
}

/** The tracing of the client that delivered `record`; `undefined` for a record no lease session delivered. */
export function leaseTracingOf(record: KinsumerRecord | undefined): LeaseTracing | undefined {
  const signal = record === undefined ? undefined : leaseSignalOf(record);
  return signal === undefined ? undefined : links.get(signal);
}
