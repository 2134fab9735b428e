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

// Where each shard's checkpoint ended when its lease was released.
const released = new Map<string, string | undefined>();
consumer.events$.subscribe((event) => { if (event.type === 'lease-released') released.set(event.shardId, event.checkpoint?.sequenceNumber); });

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
// Every record was acked, so despite the disorder each checkpoint reached its shard's last record.
const complete = [...seen].filter(([shardId, last]) => released.get(shardId) === last.toString()).length;
console.log(`out-of-order: ${stream.records} records, ${overtaken} finished after a later one, ${complete} of ${seen.size} shards checkpointed at their last record`);
await stream.close();
