// What record a checkpoint's sequence number names: a KPL aggregate (and of how many user records)
// or a plain record. The KCL and kinsumer say "after this record" differently, and only the record
// tells which of kinsumer's two forms a KCL checkpoint is:
// - The KCL stores (sequenceNumber, subSequenceNumber), resumes AT the sequence number and drops
//   every user record whose (sequence, sub) is at or before it; a plain record's sub is 0. So
//   (s, 0) means "after s" for a plain record, and "after user record 0 of s" for an aggregate.
// - kinsumer stores {s} for "after the whole record s" and {s, n} for "after user record n of
//   aggregate s" (resumed AT s, skipping through n). {s, 0} on a plain record would deliver s again.
import { type Observable, catchError, concatMap, of, throwError } from 'rxjs';
import { StreamNotFoundError } from '../errors/kinsumer-errors.js';
import type { StreamPort } from '../ports/stream.js';
import { deaggregate } from '../reading/kpl.js';

/** What the stream holds at a checkpoint's sequence number. */
export type RecordAtCheckpoint =
  /** A KPL aggregate of `count` user records, and when Kinesis accepted it. */
  | { readonly kind: 'aggregate'; readonly count: number; readonly arrivedAt?: Date }
  /** A plain record (or one that only starts like an aggregate: kinsumer delivers it whole), and when Kinesis accepted it. */
  | { readonly kind: 'plain'; readonly arrivedAt?: Date }
  /** No such record any more (trimmed by retention): the first record the shard keeps comes after it. */
  | { readonly kind: 'gone' }
  /** The shard answered no record in a few pages: kinsumer cannot tell (the plan takes the form that loses nothing). */
  | { readonly kind: 'unknown' }
  /** Kinesis refuses the sequence number for this shard. */
  | { readonly kind: 'invalid'; readonly problem: string };

/** Empty pages tolerated before giving up: Kinesis may answer a page with no records even where some follow. */
const MAX_EMPTY_PAGES = 5;

/** Reads the record at `sequenceNumber` of a shard (one GetShardIterator, usually one GetRecords of one record). */
export function recordAt(stream: StreamPort, shardId: string, sequenceNumber: string): Observable<RecordAtCheckpoint> {
  const page = (iterator: string, empties: number): Observable<RecordAtCheckpoint> => stream.getRecords(iterator, 1).pipe(
    concatMap((answer): Observable<RecordAtCheckpoint> => {
      const [first] = answer.records;
      if (first !== undefined) {
        if (BigInt(first.sequenceNumber) !== BigInt(sequenceNumber)) return of({ kind: 'gone' });
        const found = deaggregate(first.data);
        const arrivedAt = first.approximateArrivalTimestamp;
        return of(found.kind === 'aggregate' ? { kind: 'aggregate', count: found.records.length, arrivedAt } : { kind: 'plain', arrivedAt });
      }
      if (answer.nextShardIterator === undefined) return of({ kind: 'gone' });
      if (empties + 1 >= MAX_EMPTY_PAGES) return of({ kind: 'unknown' });
      return page(answer.nextShardIterator, empties + 1);
    }),
  );
  return stream.getShardIterator(shardId, { type: 'AT_SEQUENCE_NUMBER', sequenceNumber }).pipe(
    concatMap((issued) => page(issued.shardIterator, 0)),
    catchError((error: unknown) => {
      // InvalidArgumentException (Kinesis, kinesalite) or ResourceNotFoundException for the record (kinesis-mock).
      if (error instanceof StreamNotFoundError || (error as { name?: unknown }).name === 'InvalidArgumentException') {
        const cause = error instanceof StreamNotFoundError ? error.cause : error;
        return of<RecordAtCheckpoint>({ kind: 'invalid', problem: cause instanceof Error ? cause.message : String(cause) });
      }
      return throwError(() => error);
    }),
  );
}
