// A stream of many shards for the scale simulation. MemoryStream keeps every record (an hour of
// 2,000 busy shards would not fit) and holds at most 1,024 shards; this one keeps none: record i of
// shard s arrives at a fixed rate and is made when read, so memory stays flat for any duration.
import { type Observable, defer, map, of, throwError } from 'rxjs';
import type { IssuedIterator, IteratorStart, RawRecord, RecordsPage, ShardInfo, StreamPort } from '../../src/ports/stream.js';
import { awsError } from '../../src/testing/memory-stream.js';

const MAX_HASH_KEY = 2n ** 128n - 1n;
// 56 digits like Kinesis's: "4959", 5 digits of shard index, 47 digits of record index.
const PREFIX = '4959';
const INDEX_DIGITS = 47;
const ZEROS = '0'.repeat(INDEX_DIGITS);
const payload = new TextEncoder().encode('x'.repeat(100));

/** Open shards whose records arrive at `recordsPerSecond` each, from `startMs` on. */
export class ScaleStream implements StreamPort {
  readonly streamLabel = 'scale';
  readonly calls = { getShardIterator: 0, getRecords: 0, listShards: 0 };
  readonly #ids: string[];
  readonly #index = new Map<string, number>();
  readonly #shards: ShardInfo[];

  constructor(private readonly shardCount: number, private readonly recordsPerSecond: number, private readonly startMs: number, private readonly now: () => number) {
    this.#ids = Array.from({ length: shardCount }, (_, i) => `shardId-${String(i).padStart(12, '0')}`);
    this.#ids.forEach((id, i) => this.#index.set(id, i));
    const width = (MAX_HASH_KEY + 1n) / BigInt(shardCount);
    this.#shards = this.#ids.map((shardId, i) => ({
      shardId, parentShardIds: [], open: true,
      startingHashKey: (width * BigInt(i)).toString(),
      endingHashKey: (i === shardCount - 1 ? MAX_HASH_KEY : width * BigInt(i + 1) - 1n).toString(),
    }));
  }

  shardIds(): string[] {
    return [...this.#ids];
  }

  /** Records of a shard that have arrived by now. */
  arrived(atMs = this.now()): number {
    return this.recordsPerSecond <= 0 ? 0 : Math.max(0, Math.floor(((atMs - this.startMs) * this.recordsPerSecond) / 1000));
  }

  getShardIterator(shardId: string, start: IteratorStart): Observable<IssuedIterator> {
    return this.iteratorAt(shardId, start).pipe(map((shardIterator) => ({ shardIterator })));
  }

  private iteratorAt(shardId: string, start: IteratorStart): Observable<string> {
    return defer(() => {
      this.calls.getShardIterator += 1;
      const shard = this.#index.get(shardId);
      if (shard === undefined) return throwError(() => awsError('ResourceNotFoundException'));
      switch (start.type) {
        case 'TRIM_HORIZON': return of(`${shard}:0`);
        case 'LATEST': return of(`${shard}:${this.arrived()}`);
        case 'AT_TIMESTAMP': return of(`${shard}:${this.arrived(start.timestamp.getTime())}`);
        case 'AT_SEQUENCE_NUMBER': return of(`${shard}:${indexOf(start.sequenceNumber)}`);
        case 'AFTER_SEQUENCE_NUMBER': return of(`${shard}:${indexOf(start.sequenceNumber) + 1}`);
      }
    });
  }

  getRecords(shardIterator: string, limit: number): Observable<RecordsPage> {
    return defer(() => {
      this.calls.getRecords += 1;
      const [shardText, indexText] = shardIterator.split(':');
      const shard = Number(shardText);
      const from = Number(indexText);
      const arrived = this.arrived();
      const count = Math.max(0, Math.min(limit, arrived - from));
      const records: RawRecord[] = new Array<RawRecord>(count);
      const shardDigits = String(shard).padStart(5, '0');
      for (let i = 0; i < count; i += 1) {
        const index = from + i;
        const digits = String(index);
        records[i] = {
          sequenceNumber: PREFIX + shardDigits + ZEROS.slice(digits.length) + digits,
          partitionKey: `pk-${shard}`,
          data: payload,
          approximateArrivalTimestamp: new Date(this.startMs + (index * 1000) / this.recordsPerSecond),
        };
      }
      const next = from + count;
      return of({ records, nextShardIterator: `${shard}:${next}`, millisBehindLatest: next < arrived ? 1 : 0, childShardIds: undefined });
    });
  }

  listShards(): Observable<ShardInfo[]> {
    return defer(() => {
      this.calls.listShards += 1;
      return of(this.#shards);
    });
  }
}

function indexOf(sequenceNumber: string): number {
  return Number(sequenceNumber.slice(PREFIX.length + 5));
}
