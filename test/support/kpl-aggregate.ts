import { createRequire } from 'node:module';

/** A user record to aggregate. */
export interface UserRecordInput {
  readonly partitionKey: string;
  readonly data: Uint8Array | string;
  readonly explicitHashKey?: string;
}

interface Aggregator {
  addUserRecord(record: { partitionKey: string; data: Buffer; explicitHashKey?: string }): void;
  build(): { partitionKey: string; data: Buffer } | undefined;
}

// aws-kinesis-agg's typings describe only its callback API (and import the v2 SDK); its
// RecordAggregator is what encodes one aggregate synchronously.
const require = createRequire(import.meta.url);
const { RecordAggregator } = require('aws-kinesis-agg') as { RecordAggregator: new () => Aggregator };

/**
 * Encodes user records into one KPL aggregate with AWS's own encoder (aws-kinesis-agg): magic,
 * protobuf AggregatedRecord, MD5. Returns what a producer would put: the aggregate's partition key and bytes.
 */
export function aggregate(records: readonly UserRecordInput[]): { partitionKey: string; data: Uint8Array } {
  const aggregator = new RecordAggregator();
  for (const record of records) {
    aggregator.addUserRecord({
      partitionKey: record.partitionKey,
      data: Buffer.from(typeof record.data === 'string' ? Buffer.from(record.data) : record.data),
      ...(record.explicitHashKey === undefined ? {} : { explicitHashKey: record.explicitHashKey }),
    });
  }
  const built = aggregator.build();
  if (built === undefined) throw new Error('nothing to aggregate');
  return { partitionKey: built.partitionKey, data: new Uint8Array(built.data) };
}
