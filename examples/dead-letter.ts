// Dead letters: a record that fails every attempt goes to a second Kinesis stream, and the
// consumer goes on. processRecords retries each failing record (3 calls here, 50 ms then 100 ms
// apart, with jitter), then hands it to onFailure; once onFailure resolves the record is acked,
// so the checkpoint moves past it. Without onFailure the error would end the stream instead.
// An error that says `retriable: false` goes there after one call: record.json() on data that is
// not JSON throws such a RecordDecodeError (the bytes will not change on a retry).
// Run: node --import tsx examples/dead-letter.ts
import { PutRecordCommand } from '@aws-sdk/client-kinesis';
import { firstValueFrom, take, toArray } from 'rxjs';
import { Kinsumer, processRecords, type FailedRecord } from 'kinsumer';
import { createStream, putRecords } from 'kinsumer/testing';
import { exampleStream } from './local-stream.js';

const stream = await exampleStream({ shards: 2, records: 200 });
// One poison record among them: its n is not a number, so its handler throws on every attempt.
await putRecords(stream.kinesis, stream.streamName, [{ partitionKey: 'key-3', data: '{"n":"three"}' }]);
const total = stream.records + 1;
const deadLetterStream = 'example-dead-letters';
await createStream(stream.kinesis, deadLetterStream, 1);

const consumer = new Kinsumer({
  streamName: stream.streamName,
  applicationName: 'example-dead-letter',
  kinesis: stream.kinesis,
  dynamodb: stream.dynamodb,
  createTables: true,
});
const released = new Map<string, string | undefined>();
consumer.events$.subscribe((event) => { if (event.type === 'lease-released') released.set(event.shardId, event.checkpoint?.sequenceNumber); });

let sum = 0;
// What a dead letter says: where the record came from, why it failed, and its bytes.
async function deadLetter({ record, error, attempts }: FailedRecord): Promise<void> {
  const letter = {
    shardId: record.shardId, sequenceNumber: record.sequenceNumber, partitionKey: record.partitionKey, attempts,
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    data: Buffer.from(record.data).toString('base64'),
  };
  await stream.kinesis.send(new PutRecordCommand({ StreamName: deadLetterStream, PartitionKey: record.partitionKey, Data: Buffer.from(JSON.stringify(letter)) }));
}

const outcomes = await firstValueFrom(consumer.records$.pipe(
  processRecords((record) => {
    const { n } = record.json<{ n: unknown }>();
    if (typeof n !== 'number') throw new TypeError(`n is ${JSON.stringify(n)}, not a number`);
    sum += n;
  }, {
    ordering: 'partitionKey',
    concurrency: 10,
    retry: { maxAttempts: 3, initialDelayMs: 50 },
    onFailure: deadLetter,
  }),
  take(total), // one ProcessedRecord per record: 'processed', or 'failed' once onFailure resolved
  toArray(),
));
await consumer.stop(); // every record was acked, the poison one too: each checkpoint is at its shard's last record

const lastByShard = new Map<string, bigint>();
for (const { record } of outcomes) {
  const sequence = BigInt(record.sequenceNumber);
  if (sequence > (lastByShard.get(record.shardId) ?? -1n)) lastByShard.set(record.shardId, sequence);
}
const complete = [...lastByShard].filter(([shardId, last]) => released.get(shardId) === last.toString()).length;
const failed = outcomes.filter((p) => p.outcome === 'failed');

// The dead letters are a stream like any other: read them back with another consumer.
const reader = new Kinsumer({
  streamName: deadLetterStream, applicationName: 'example-dead-letter-reader', kinesis: stream.kinesis, dynamodb: stream.dynamodb, createTables: true,
});
const letter = await firstValueFrom(reader.records$);
letter.ack();
await reader.stop();
const { error, attempts } = letter.json<{ error: string; attempts: number }>();
console.log(`dead-letter: ${total} records, ${outcomes.length - failed.length} processed (sum of n = ${sum}), ${failed.length} dead-lettered; `
  + `dead-letter stream holds: ${error} after ${attempts} attempts; ${complete} of ${lastByShard.size} shards checkpointed at their last record`);
await stream.close();
