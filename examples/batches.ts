// Per-shard batches: each lease's records collected with bufferTime, written as one batch, and the
// whole batch acked at once. Batching per lease keeps a batch inside one shard, so its order holds.
// Run: npx tsx examples/batches.ts
import { bufferTime, concatMap, filter, mergeMap, scan, takeWhile } from 'rxjs';
import { Kinsumer, type KinsumerRecord } from 'kinsumer';
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
  consumer.leases$
    .pipe(
      // One pipeline per lease: a batch never mixes shards. Up to 100 records or 500 ms per batch.
      mergeMap((lease) => lease.records$.pipe(
        bufferTime(500, null, 100),
        filter((batch) => batch.length > 0),
        concatMap(async (batch) => {
          await writeBatch(batch);
          for (const record of batch) record.ack();
          return batch.length;
        }),
      )),
      scan((total, size) => total + size, 0),
      takeWhile((total) => total < stream.records),
    )
    .subscribe({ complete: resolve, error: reject });
});

await consumer.stop();
console.log(`batches: ${batchSizes.reduce((a, b) => a + b, 0)} records in ${batchSizes.length} batches (largest ${Math.max(...batchSizes)})`);
await stream.close();
