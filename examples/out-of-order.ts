// Out of order, with per-key order kept: processRecords with ordering 'partitionKey' runs up to 8
// records of a shard at once, never two of one partition key, and acks each record when its
// handler resolves. Records of different keys finish (and are acked) in any order; the checkpoint
// only passes a record once every earlier record of its shard is acked, and what was acked beyond
// it is stored with it, so a hand-off delivers nothing acked again and a crash skips nothing.
// Run: node --import tsx examples/out-of-order.ts
import { setTimeout as delay } from 'node:timers/promises';
import { take } from 'rxjs';
import { Kinsumer, processRecords } from 'kinsumer';
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
let keyOrderBroken = 0;
const lastBySequence = new Map<string, bigint>(); // per shard: the highest sequence number finished
const lastByKey = new Map<string, bigint>(); // per shard and key: the last one finished
await new Promise<void>((resolve, reject) => {
  consumer.records$
    .pipe(
      processRecords(async (record) => {
        await delay(Math.random() * 20); // uneven work: later records often finish first
        const sequence = BigInt(record.sequenceNumber);
        if (sequence < (lastBySequence.get(record.shardId) ?? -1n)) overtaken += 1;
        else lastBySequence.set(record.shardId, sequence);
        const key = `${record.shardId}/${record.partitionKey}`;
        if (sequence < (lastByKey.get(key) ?? -1n)) keyOrderBroken += 1;
        lastByKey.set(key, sequence);
      }, { ordering: 'partitionKey', concurrency: 8 }),
      take(stream.records), // one ProcessedRecord per record, emitted once it is acked
    )
    .subscribe({ complete: resolve, error: reject });
});

await consumer.stop();
// Every record was acked, so despite the disorder each checkpoint reached its shard's last record.
const complete = [...lastBySequence].filter(([shardId, last]) => released.get(shardId) === last.toString()).length;
console.log(`out-of-order: ${stream.records} records, ${overtaken} finished after a later one, ${keyOrderBroken} out of order within their key, `
  + `${complete} of ${lastBySequence.size} shards checkpointed at their last record`);
await stream.close();
