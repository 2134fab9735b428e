// Out-of-order processing: up to 8 records at once with mergeMap; they finish and are acked in any
// order. The checkpoint only passes a record once every record before it in its shard is acked, so
// a crash re-delivers what was unfinished and never skips it.
// Run: npx tsx examples/out-of-order.ts
import { mergeMap, take } from 'rxjs';
import { setTimeout as delay } from 'node:timers/promises';
import { Kinsumer } from 'kinsumer';
import { exampleStream } from './local-stream.js';

const stream = await exampleStream({ shards: 2, records: 300 });
const consumer = new Kinsumer({
  streamName: stream.streamName,
  applicationName: 'example-out-of-order',
  kinesis: stream.kinesis,
  dynamodb: stream.dynamodb,
  createTables: true,
});

let checkpoints = 0;
consumer.events$.subscribe((event) => { if (event.type === 'checkpoint') checkpoints += 1; });

let overtaken = 0;
const seen = new Map<string, bigint>();
await new Promise<void>((resolve, reject) => {
  consumer.records$
    .pipe(
      mergeMap(async (record) => {
        await delay(Math.random() * 20); // uneven work: later records often finish first
        const last = seen.get(record.shardId) ?? -1n;
        if (BigInt(record.sequenceNumber) < last) overtaken += 1;
        else seen.set(record.shardId, BigInt(record.sequenceNumber));
        record.ack();
      }, 8),
      take(stream.records),
    )
    .subscribe({ complete: resolve, error: reject });
});

await consumer.stop();
console.log(`out-of-order: ${stream.records} records, ${overtaken} finished after a later one, ${checkpoints} checkpoints written`);
await stream.close();
