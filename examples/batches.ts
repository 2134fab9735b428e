// Per-shard batches: processBatches collects each shard's records (up to 100, waiting at most
// 500 ms for a batch to fill), hands them to one call in sequence order, and acks them when it
// resolves. A batch never mixes shards. Return { failed } to retry only those records.
// Run: node --import tsx examples/batches.ts
import { scan, takeWhile } from 'rxjs';
import { Kinsumer, processBatches, type KinsumerRecord } from 'kinsumer';
import { exampleStream } from './local-stream.js';

const stream = await exampleStream({ shards: 4, records: 1000 });
const consumer = new Kinsumer({
  streamName: stream.streamName,
  applicationName: 'example-batches',
  kinesis: stream.kinesis,
  dynamodb: stream.dynamodb,
  createTables: true,
});

const batchSizes: number[] = [];
async function writeBatch(records: readonly KinsumerRecord[]): Promise<void> {
  await Promise.resolve(); // e.g. one bulk insert into your database
  batchSizes.push(records.length);
}

await new Promise<void>((resolve, reject) => {
  consumer.records$
    .pipe(
      processBatches(async (records) => { await writeBatch(records); }, { maxSize: 100, maxWaitMs: 500 }),
      scan((total, batch) => total + batch.records.length, 0),
      takeWhile((total) => total < stream.records, true),
    )
    .subscribe({ complete: resolve, error: reject });
});

await consumer.stop();
console.log(`batches: ${batchSizes.reduce((a, b) => a + b, 0)} records in ${batchSizes.length} batches (largest ${Math.max(...batchSizes)})`);
await stream.close();
