// An endless in-memory stream behind the StreamPort seam, for the library-overhead figure: every
// GetRecords makes a fresh page (new record objects, a fresh copy of the payload, a new arrival
// Date per record, as the SDK would hand them over), so memory stays flat however long it runs,
// and the baseline and the library pay exactly the same price for the page.
import { type Observable, defer, map, of, throwError } from 'rxjs';
import type { IssuedIterator, IteratorStart, RawRecord, RecordsPage, ShardInfo, StreamPort } from '../../src/ports/stream.js';

/** Options of {@link SyntheticStream}. */
export interface SyntheticStreamOptions {
  readonly shardCount: number;
  readonly recordBytes: number;
  /** `MillisBehindLatest` of every page: > 0 tells a reader there is more to read at once. Default 1. */
  readonly millisBehindLatest?: number;
}

const MAX_HASH_KEY = 2n ** 128n - 1n;
// 56 digits, like Kinesis: "4959", 4 digits of shard index, 48 digits of record index.
const PREFIX = '4959';
const INDEX_DIGITS = 48;
const ZEROS = '0'.repeat(INDEX_DIGITS);

/** A stream whose shards never end: record `i` of shard `s` exists for every `i`. */
export class SyntheticStream implements StreamPort {
  readonly streamLabel = 'synthetic';
  /** GetRecords calls answered. */
  getRecordsCalls = 0;
  private readonly template: Uint8Array;
  private readonly behind: number;

  constructor(private readonly options: SyntheticStreamOptions) {
    this.template = new Uint8Array(options.recordBytes).fill(120);
    this.behind = options.millisBehindLatest ?? 1;
  }

  /** The ids of the shards (all open). */
  shardIds(): string[] {
    return Array.from({ length: this.options.shardCount }, (_, i) => shardName(i));
  }

  /** A page of `limit` records from `index` on (the work both the baseline and the library pay). */
  page(shard: number, index: number, limit: number): RecordsPage {
    const records: RawRecord[] = new Array<RawRecord>(limit);
    const shardDigits = String(shard).padStart(4, '0');
    const partitionKey = `pk-${shard}`;
    const now = Date.now();
    for (let i = 0; i < limit; i += 1) {
      const digits = String(index + i);
      const sequenceNumber = PREFIX + shardDigits + ZEROS.slice(digits.length) + digits;
      // A flat string, as the SDK's JSON.parse makes them: a concatenation left as a rope would
      // charge whoever reads it first (the library, not the baseline) for flattening it.
      sequenceNumber.charCodeAt(0);
      records[i] = {
        sequenceNumber,
        partitionKey,
        // Small buffers come from Node's shared pool, as the SDK's base64 decoder makes them.
        data: Buffer.from(this.template),
        approximateArrivalTimestamp: new Date(now),
      };
    }
    return { records, nextShardIterator: `${shard}:${index + limit}`, millisBehindLatest: this.behind, childShardIds: undefined };
  }

  getShardIterator(shardId: string, start: IteratorStart): Observable<IssuedIterator> {
    return this.iteratorAt(shardId, start).pipe(map((shardIterator) => ({ shardIterator })));
  }

  private iteratorAt(shardId: string, start: IteratorStart): Observable<string> {
    return defer(() => {
      const shard = this.shardIds().indexOf(shardId);
      if (shard < 0) return throwError(() => new Error(`no shard ${shardId}`));
      switch (start.type) {
        case 'TRIM_HORIZON': return of(`${shard}:0`);
        case 'AT_SEQUENCE_NUMBER': return of(`${shard}:${indexOf(start.sequenceNumber)}`);
        case 'AFTER_SEQUENCE_NUMBER': return of(`${shard}:${indexOf(start.sequenceNumber) + 1}`);
        default: return throwError(() => new Error(`SyntheticStream does not start at ${start.type}`));
      }
    });
  }

  getRecords(shardIterator: string, limit: number): Observable<RecordsPage> {
    return defer(() => {
      this.getRecordsCalls += 1;
      const [shard, index] = shardIterator.split(':').map(Number);
      return of(this.page(shard ?? 0, index ?? 0, limit));
    });
  }

  listShards(): Observable<ShardInfo[]> {
    const count = BigInt(this.options.shardCount);
    const width = (MAX_HASH_KEY + 1n) / count;
    return of(this.shardIds().map((shardId, i) => ({
      shardId,
      parentShardIds: [],
      open: true,
      startingHashKey: (width * BigInt(i)).toString(),
      endingHashKey: (i === this.options.shardCount - 1 ? MAX_HASH_KEY : width * BigInt(i + 1) - 1n).toString(),
    })));
  }
}

function shardName(index: number): string {
  return `shardId-${String(index).padStart(12, '0')}`;
}

function indexOf(sequenceNumber: string): number {
  return Number(sequenceNumber.slice(PREFIX.length + 4));
}
