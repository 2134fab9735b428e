// What a KCL worker would deliver from a lease, computed the way the KCL resumes (notes/kcl-facts.md
// §4, ProcessTask.filterAndGetMaxExtendedSequenceNumber): a sequence checkpoint is read from AT
// that sequence number, KPL aggregates are split with AWS's own deaggregator (aws-kinesis-agg, not
// kinsumer's), and every user record whose (sequence, sub) is at or before the checkpoint is
// dropped, a plain record's sub being 0. Sentinels become the iterator; SHARD_END delivers nothing.
// Independent of kinsumer's reading code on purpose: it checks what export-kcl writes.
import { createRequire } from 'node:module';
import { GetRecordsCommand, GetShardIteratorCommand, type GetShardIteratorCommandInput, type KinesisClient } from '@aws-sdk/client-kinesis';

interface AggUserRecord { readonly sequenceNumber: string; readonly subSequenceNumber?: number; readonly data: string }
const require = createRequire(import.meta.url);
const agg = require('aws-kinesis-agg') as {
  deaggregateSync: (record: { data: string; partitionKey: string; sequenceNumber: string }, checksums: boolean, done: (error: Error | null | undefined, records?: AggUserRecord[]) => void) => void;
};

/** A user record as the KCL hands it to processRecords. */
export interface KclUserRecord {
  readonly sequenceNumber: string;
  /** The index in its aggregate; 0 for a plain record, as the KCL's KinesisClientRecord has it. */
  readonly subSequenceNumber: number;
  readonly data: string;
}

/** A lease's checkpoint as the KCL reads it. */
export interface KclResumePoint {
  readonly shardId: string;
  readonly checkpoint: string;
  readonly subSequenceNumber: number;
}

function deaggregated(record: { Data?: Uint8Array | undefined; PartitionKey?: string | undefined; SequenceNumber?: string | undefined }): KclUserRecord[] {
  let out: KclUserRecord[] = [];
  agg.deaggregateSync({ data: Buffer.from(record.Data ?? new Uint8Array()).toString('base64'), partitionKey: record.PartitionKey ?? '', sequenceNumber: record.SequenceNumber ?? '' }, true, (error, records) => {
    if (error) throw error;
    out = (records ?? []).map((r) => ({ sequenceNumber: r.sequenceNumber, subSequenceNumber: r.subSequenceNumber ?? 0, data: Buffer.from(r.data, 'base64').toString('utf8') }));
  });
  return out;
}

/** `a` at or before `b` as the KCL's ExtendedSequenceNumber orders them (sequence, then sub). */
function atOrBefore(a: { sequenceNumber: string; subSequenceNumber: number }, b: { sequenceNumber: string; subSequenceNumber: number }): boolean {
  const [x, y] = [BigInt(a.sequenceNumber), BigInt(b.sequenceNumber)];
  return x < y || (x === y && a.subSequenceNumber <= b.subSequenceNumber);
}

/**
 * Every user record a KCL worker taking this lease would deliver, to the current end of the shard.
 * `configuredTimestamp`: the application's AT_TIMESTAMP time (the KCL takes it from its configuration).
 */
export async function kclWouldDeliver(kinesis: KinesisClient, streamName: string, lease: KclResumePoint, configuredTimestamp?: Date): Promise<KclUserRecord[]> {
  if (lease.checkpoint === 'SHARD_END') return [];
  const numeric = /^\d+$/.test(lease.checkpoint);
  const start: Partial<GetShardIteratorCommandInput> = numeric
    ? { ShardIteratorType: 'AT_SEQUENCE_NUMBER', StartingSequenceNumber: lease.checkpoint }
    : lease.checkpoint === 'AT_TIMESTAMP'
      ? { ShardIteratorType: 'AT_TIMESTAMP', Timestamp: configuredTimestamp }
      : { ShardIteratorType: lease.checkpoint as 'TRIM_HORIZON' | 'LATEST' };
  let iterator = (await kinesis.send(new GetShardIteratorCommand({ StreamName: streamName, ShardId: lease.shardId, ...start } as GetShardIteratorCommandInput))).ShardIterator;
  const delivered: KclUserRecord[] = [];
  while (iterator !== undefined) {
    const page = await kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
    for (const record of page.Records ?? []) {
      for (const user of deaggregated(record)) {
        if (numeric && atOrBefore(user, { sequenceNumber: lease.checkpoint, subSequenceNumber: lease.subSequenceNumber })) continue;
        delivered.push(user);
      }
    }
    if ((page.Records ?? []).length === 0 && (page.MillisBehindLatest ?? 0) === 0) break;
    iterator = page.NextShardIterator;
  }
  return delivered;
}
