import { recordJson, recordText } from '../../src/reading/payload-decoding.js';
import { setLeaseSignal } from '../../src/reading/lease-signal.js';
import type { AckOptions, KinsumerRecord } from '../../src/types.js';

/** A hand-made record that counts its acks (and when they came, by `clock`). */
export interface TestRecord extends KinsumerRecord {
  /** A short name for assertions, such as `a1`. */
  readonly name: string;
  /** Clock readings of every ack() call. */
  readonly acks: number[];
  /** The options of every ack() call (`undefined` for a plain ack()), in order. */
  readonly ackOptions: Array<AckOptions | undefined>;
}

/** Options of {@link testRecord}. */
export interface TestRecordOptions {
  readonly shardId?: string;
  readonly partitionKey?: string;
  readonly arrivedAtMs?: number;
  readonly lease?: AbortSignal;
  readonly clock?: () => number;
}

let nextSequence = 1000;

/** A record of `shardId` (default `s0`) with a growing sequence number. */
export function testRecord(name: string, options: TestRecordOptions = {}): TestRecord {
  const acks: number[] = [];
  const ackOptions: Array<AckOptions | undefined> = [];
  const clock = options.clock ?? (() => 0);
  const shardId = options.shardId ?? 's0';
  const sequenceNumber = String(nextSequence++);
  const record: TestRecord = {
    name,
    acks,
    ackOptions,
    id: `${shardId}/${sequenceNumber}`,
    fencingToken: 1,
    shardId,
    streamName: 'test-stream',
    sequenceNumber,
    subSequenceNumber: undefined,
    partitionKey: options.partitionKey ?? name,
    data: new TextEncoder().encode(name),
    approximateArrivalTimestamp: new Date(options.arrivedAtMs ?? 0),
    ack: (ackWith?: AckOptions) => {
      acks.push(clock());
      ackOptions.push(ackWith);
    },
    text() { return recordText(this); },
    json<T = unknown>(): T { return recordJson<T>(this); },
  };
  return options.lease === undefined ? record : setLeaseSignal(record, options.lease);
}

/** Several records of one shard, by name: `const { a, b } = testRecords(['a', 'b'])`. */
export function testRecords<N extends string>(names: readonly N[], options: TestRecordOptions = {}): Record<N, TestRecord> {
  return Object.fromEntries(names.map((n) => [n, testRecord(n, options)])) as Record<N, TestRecord>;
}
