// What the operators do before a record's first handler call under its lease (design §9.3): wait
// until its delivery is recorded in the checkpoint row — a process that dies on it then has that
// delivery counted — and send a record delivered more than `maxDeliveries` times to onFailure
// without calling the handler, so a record that kills its process stops looping.
import { merge } from 'rxjs';
import { KinsumerError } from '../errors/kinsumer-errors.js';
import { StreamRecord } from '../reading/delivered-record.js';
import type { KinsumerRecord } from '../types.js';

/**
 * Handler calls on a record that ended with its process (or its lease) before they settled it,
 * in sessions the checkpoint row counted, before it goes to `onFailure` untried: Kafka share
 * groups' `group.share.delivery.count.limit`.
 */
export const DEFAULT_MAX_DELIVERIES = 5;

/**
 * A record was delivered more than `maxDeliveries` times (`record.deliveryCount`): earlier
 * deliveries ended without settling it — most often, its handler killed the process. It goes to
 * `onFailure` without another handler call (`attempts` 0); without `onFailure`, the operator's
 * output errors with it.
 */
export class TooManyDeliveriesError extends KinsumerError {
  /** The record's `deliveryCount`. */
  readonly deliveryCount: number;
  /** The `maxDeliveries` option it exceeded. */
  readonly maxDeliveries: number;

  constructor(deliveryCount: number, maxDeliveries: number) {
    super(`record delivered ${deliveryCount} times, more than maxDeliveries (${maxDeliveries}): its earlier deliveries ended without settling it (a process that died on it?); the handler is not called again`, { retriable: false });
    this.deliveryCount = deliveryCount;
    this.maxDeliveries = maxDeliveries;
  }
}

/** The error to give up with when `record` was delivered more than `maxDeliveries` times, else `undefined`. */
export function deliveredTooOften(record: KinsumerRecord, maxDeliveries: number): TooManyDeliveriesError | undefined {
  const count = record.deliveryCount;
  return count > maxDeliveries ? new TooManyDeliveriesError(count, maxDeliveries) : undefined;
}

/**
 * Calls `then` once the deliveries of `records` are recorded — at once, synchronously, when there
 * is nothing to wait for (the usual case) — or `aborted` instead as soon as `signal` aborts.
 * Returns the teardown that cancels both. With `maxDeliveries` `Infinity` no count is ever held
 * against a record: nothing waits, and no write is owed for it.
 */
export function whenRecorded(records: readonly KinsumerRecord[], maxDeliveries: number, signal: AbortSignal, then: () => void, aborted: () => void): () => void {
  const waits = [];
  for (const record of maxDeliveries === Number.POSITIVE_INFINITY ? [] : records) {
    const recording = StreamRecord.recording$(record);
    if (recording !== undefined) waits.push(recording);
  }
  if (waits.length === 0) {
    then();
    return () => undefined;
  }
  if (signal.aborted) {
    aborted();
    return () => undefined;
  }
  const onAbort = (): void => {
    subscription.unsubscribe();
    aborted();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  const subscription = merge(...waits).subscribe({
    complete: () => {
      signal.removeEventListener('abort', onAbort);
      then();
    },
  });
  return () => {
    subscription.unsubscribe();
    signal.removeEventListener('abort', onAbort);
  };
}
