// From the raw records of a GetRecords page to the user records a reader emits: KPL aggregates
// are split, sub-records already consumed are skipped, and a corrupt aggregate stays one raw
// record (reported, never dropped). Pure.
import { type AggregateDecodeError, deaggregate } from './kpl.js';
import type { RawRecord } from './ports.js';
import type { Position } from './sequence-number.js';
import { isSkipped } from './start-position.js';

/** One record as the application will see it, before it is tracked and emitted. */
export interface UserRecord {
  readonly position: Position;
  readonly partitionKey: string;
  readonly explicitHashKey: string | undefined;
  readonly data: Uint8Array;
  readonly approximateArrivalTimestamp: Date;
  /** A plain record, or the last sub-record of its aggregate: resuming after it needs no skip. */
  readonly aggregateDone: boolean;
}

/** An aggregate delivered raw because it did not decode. */
export interface UndecodableRecord {
  readonly sequenceNumber: string;
  readonly error: AggregateDecodeError;
}

/** What {@link unpackRecords} made of a page. */
export interface UnpackedRecords {
  readonly records: UserRecord[];
  readonly undecodable: UndecodableRecord[];
  /** What is still to skip on the next page: `undefined` once a record beyond it was seen. */
  readonly skipThrough: Position | undefined;
}

/** Unpacks a page's records in sequence order, skipping records at or before `skipThrough`. */
export function unpackRecords(raw: readonly RawRecord[], skipThrough: Position | undefined): UnpackedRecords {
  const records: UserRecord[] = [];
  const undecodable: UndecodableRecord[] = [];
  let skip = skipThrough;
  const keep = (record: UserRecord): boolean => {
    if (skip !== undefined) {
      if (isSkipped(record.position, skip)) return false;
      skip = undefined;
    }
    records.push(record);
    return true;
  };
  for (const record of raw) {
    const found = deaggregate(record.data);
    if (found.kind === 'aggregate') {
      const last = found.records.length - 1;
      found.records.forEach((user, index) => keep({
        position: { sequenceNumber: record.sequenceNumber, subSequenceNumber: index },
        partitionKey: user.partitionKey,
        explicitHashKey: user.explicitHashKey,
        data: user.data,
        approximateArrivalTimestamp: record.approximateArrivalTimestamp,
        aggregateDone: index === last,
      }));
      continue;
    }
    const kept = keep({
      position: { sequenceNumber: record.sequenceNumber },
      partitionKey: record.partitionKey,
      explicitHashKey: undefined,
      data: record.data,
      approximateArrivalTimestamp: record.approximateArrivalTimestamp,
      aggregateDone: true,
    });
    if (kept && found.kind === 'corrupt') undecodable.push({ sequenceNumber: record.sequenceNumber, error: found.error });
  }
  return { records, undecodable, skipThrough: skip };
}
