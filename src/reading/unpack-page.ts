// From the raw records of a GetRecords page to the user records a reader emits: KPL aggregates
// are split, sub-records already consumed are skipped, and a corrupt aggregate stays one raw
// record (reported, never dropped). Pure: each user record is made once here, as the object the
// application will receive (see delivered-record.ts).
import type { Position } from '../ports/position.js';
import type { RawRecord } from '../ports/stream.js';
import { type RecordOrigin, StreamRecord } from './delivered-record.js';
import { type AggregateDecodeError, deaggregate, mayBeAggregateBase64 } from './kpl.js';
import { isSkipped } from './start-position.js';

/** An aggregate delivered raw because it did not decode. */
export interface UndecodableRecord {
  readonly sequenceNumber: string;
  readonly error: AggregateDecodeError;
}

/** What {@link unpackRecords} made of a page. */
export interface UnpackedRecords {
  readonly records: StreamRecord[];
  readonly undecodable: UndecodableRecord[];
  /** What is still to skip on the next page: `undefined` once a record beyond it was seen. */
  readonly skipThrough: Position | undefined;
}

const NO_ORIGIN: RecordOrigin = { shardId: '', leaseSignal: undefined };

/**
 * Unpacks a page's records in sequence order, skipping records at or before `skipThrough`. A
 * record the adapter left in base64 (`dataBase64`) whose payload cannot be an aggregate is taken over undecoded.
 */
export function unpackRecords(raw: readonly RawRecord[], skipThrough: Position | undefined, origin: RecordOrigin = NO_ORIGIN): UnpackedRecords {
  const records: StreamRecord[] = [];
  const undecodable: UndecodableRecord[] = [];
  let skip = skipThrough;
  const keep = (record: StreamRecord): boolean => {
    if (skip !== undefined) {
      if (isSkipped(record, skip)) return false;
      skip = undefined;
    }
    records.push(record);
    return true;
  };
  for (const record of raw) {
    const { sequenceNumber, partitionKey } = record;
    const { dataBase64, arrivalMs } = record;
    if (dataBase64 !== undefined && arrivalMs !== undefined && !mayBeAggregateBase64(dataBase64)) {
      keep(new StreamRecord(origin, sequenceNumber, undefined, partitionKey, undefined, dataBase64, arrivalMs, true));
      continue;
    }
    const data = record.data;
    const arrival = record.approximateArrivalTimestamp;
    const found = deaggregate(data);
    if (found.kind === 'aggregate') {
      const last = found.records.length - 1;
      found.records.forEach((user, index) => keep(
        new StreamRecord(origin, sequenceNumber, index, user.partitionKey, user.explicitHashKey, user.data, arrival, index === last),
      ));
      continue;
    }
    const kept = keep(new StreamRecord(origin, sequenceNumber, undefined, partitionKey, undefined, data, arrival, true));
    if (kept && found.kind === 'corrupt') undecodable.push({ sequenceNumber, error: found.error });
  }
  return { records, undecodable, skipThrough: skip };
}
