// How a handler waits for its record's delivery to be recorded in the checkpoint row (design §9.3)
// before it is called: the RxJS side of the DeliveryLedger, for the checkpointer.
import { type SchedulerLike, type Subscription, Observable } from 'rxjs';
import type { DeliveryLedger, LedgerRecord } from './delivery-ledger.js';

/** What the recording needs of the lease's lane. */
export interface RecordingLane {
  readonly ledger: DeliveryLedger;
  readonly scheduler: SchedulerLike;
  /** The first record beyond the watermark, as the ledger names it. */
  readonly next: () => LedgerRecord | undefined;
  /** The lease is open: a recording may still be written. */
  readonly open: () => boolean;
  /** A turn of the lane at once (not throttled). */
  readonly writeNow: () => void;
  /** The lane's next commit (throttled by commitFrequencyMs, leading edge first). */
  readonly commitSoon: () => void;
}

/**
 * `recordIfOwed` asks the lane for the write a waiting handler needs; `recording$` is what a
 * handler waits for (`undefined`: nothing to wait for).
 *
 * The write is the lane's next commit, which records every record tracked by then: a quiet shard's
 * record is recorded at once, and while records flow the recordings ride the checkpoint's own
 * writes, at most one a commitFrequencyMs (one per page read cost a DynamoDB write per poll: 50
 * writes in 10 s against 10 at 40 records a second, delivery-recording-cost.test.ts). It is asked
 * after the synchronous burst that emitted the record, so one write records the whole burst. A
 * paced record (delivered before, by a session that died) is recorded alone and at once: after a
 * crash the records it had in flight go one write each, not one a commitFrequencyMs.
 */
export function deliveryRecording(lane: RecordingLane): { readonly recordIfOwed: () => void; readonly recording$: (ticket: number) => Observable<void> | undefined } {
  const { ledger, scheduler } = lane;
  let recordScheduled = false;
  const recordIfOwed = (): void => {
    if (recordScheduled || ledger.idle) return;
    recordScheduled = true;
    scheduler.schedule(() => {
      recordScheduled = false;
      const next = lane.next();
      if (!ledger.owes(next)) return;
      if (next !== undefined && ledger.paced(next.ticket)) lane.writeNow();
      else lane.commitSoon();
    });
  };
  const recording$ = (ticket: number): Observable<void> | undefined => (ledger.recorded(ticket) ? undefined : new Observable<void>((subscriber) => {
    let waiting = true;
    // Told on a turn of its own, not inside the write that recorded it: a handler that acks at
    // once would otherwise ask for the next commit while the commit throttle is still emitting
    // this one, and be given it at once (five writes a second instead of one, with a store that
    // answers synchronously; delivery-recording-cost.test.ts).
    let told: Subscription | undefined;
    const done = (): void => {
      if (!waiting) return;
      waiting = false;
      told = scheduler.schedule(() => {
        subscriber.next();
        subscriber.complete();
      });
    };
    if (lane.open() && ledger.whenRecorded(ticket, done)) recordIfOwed();
    return () => {
      waiting = false;
      told?.unsubscribe();
    };
  }));
  return { recordIfOwed, recording$ };
}
