// The link from a delivered record to the lease it was read under. The processing operators need
// it to stop working on a shard the moment this client no longer holds it (lost, or given up after
// the drain): the next owner gets those records again, so going on would only duplicate work and
// ack into a checkpointer that can no longer write. The record class tags each record with its
// lease session's signal; records built elsewhere (tests, hand-made records) carry none.
import type { KinsumerRecord } from '../types.js';

/**
 * Where the signal is kept on a record: a symbol, so it shows in neither `Object.keys` nor JSON.
 * The record class sets it in its constructor (one object shape for every record).
 */
export const LEASE_SIGNAL: unique symbol = Symbol('kinsumer.leaseSignal');

type Tagged = { readonly [LEASE_SIGNAL]?: AbortSignal };

/**
 * The signal of the lease `record` was read under: aborted when the lease is lost to another
 * client or given up (after the drain of a stop or a rebalance). `undefined` for records that
 * were not delivered by a lease session.
 */
export function leaseSignalOf(record: KinsumerRecord): AbortSignal | undefined {
  return (record as Tagged)[LEASE_SIGNAL];
}

/** Tags `record` with its lease session's signal (one signal per lease session). Returns the record. */
export function setLeaseSignal<T extends object>(record: T, signal: AbortSignal): T {
  // A plain assignment: it keeps the object's shape transition cached (defineProperty costs ~300 ns per record).
  (record as { [LEASE_SIGNAL]?: AbortSignal })[LEASE_SIGNAL] = signal;
  return record;
}
