// A record as a Kinesis GetRecords answer carries it in JSON: the payload still base64, the
// arrival time as epoch milliseconds. The lean GetRecords path (kinesis/get-records.ts) makes
// these instead of letting the SDK decode every payload and make a Date per record; what reads
// them as RawRecords gets both, decoded when read. A reader takes the base64 over as it is
// (`dataBase64`, reading/unpack-page.ts): a payload is decoded once, when the application reads `data`.
import type { RawRecord } from '../ports/stream.js';
import { mayBeAggregateBase64 } from '../reading/kpl.js';
import { decodeBase64 } from '../reading/payload-decoding.js';

/** One record of a GetRecords answer, its payload and arrival time as the wire had them. */
export class WireRecord implements RawRecord {
  declare readonly encryptionType?: string;

  /**
   * @param dataBase64 the payload as the answer's `Data` (base64).
   * @param arrivalMs `ApproximateArrivalTimestamp` in epoch milliseconds (the SDK's rounding).
   */
  constructor(
    readonly sequenceNumber: string,
    readonly partitionKey: string,
    readonly dataBase64: string,
    readonly arrivalMs: number,
    encryptionType: string | undefined,
  ) {
    if (encryptionType !== undefined) this.encryptionType = encryptionType;
  }

  /** The payload, decoded (a new array at each read). */
  get data(): Uint8Array {
    return decodeBase64(this.dataBase64);
  }

  /** When Kinesis accepted the record (a new Date at each read). */
  get approximateArrivalTimestamp(): Date {
    return new Date(this.arrivalMs);
  }

  /** `false` when the payload cannot be a KPL aggregate (it does not start with the magic bytes). */
  get mayBeAggregate(): boolean {
    return mayBeAggregateBase64(this.dataBase64);
  }
}
