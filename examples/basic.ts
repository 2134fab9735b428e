// Basic: every record through an async handler, one at a time, acked when done.
// Run: node --import tsx examples/basic.ts
import { concatMap, take } from 'rxjs';
import { Kinsumer, type KinsumerRecord } from 'kinsumer';
import { exampleStream } from './local-stream.js';

const stream = await exampleStream({ shards: 2, records: 200 });

const consumer = new Kinsumer({
  streamName: stream.streamName,
  applicationName: 'example-basic',
  kinesis: stream.kinesis,
  dynamodb: stream.dynamodb,
  createTables: true, // in production, create the tables once: `kinsumer create-tables --app example-basic`
});

let sum = 0;
async function handle(record: KinsumerRecord): Promise<void> {
  const { n } = JSON.parse(new TextDecoder().decode(record.data)) as { n: number };
  await Promise.resolve(); // your I/O here
  sum += n;
}

// concatMap: one record at a time, in order per shard. The ack lets the checkpoint pass the record.
await new Promise<void>((resolve, reject) => {
  consumer.records$
    .pipe(
      concatMap(async (record) => {
        await handle(record);
        record.ack();
      }),
      take(stream.records), // the example stops once it has seen everything; a service runs until stop()
    )
    .subscribe({ complete: resolve, error: reject });
});

await consumer.stop(); // final commit of every shard, leases released
console.log(`basic: ${stream.records} records handled, sum of n = ${sum}`);
await stream.close();
