// Metrics: kinsumer's events$ and StatReceiver callbacks into Prometheus counters, gauges and a
// histogram with prom-client. Serve `registry.metrics()` on /metrics in your service.
// Run: npx tsx examples/metrics.ts
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { concatMap, take } from 'rxjs';
import { Kinsumer, type StatReceiver } from 'kinsumer';
import { exampleStream } from './local-stream.js';

const registry = new Registry();
const recordsRead = new Counter({ name: 'kinsumer_records_read_total', help: 'records returned by GetRecords', labelNames: ['shard'], registers: [registry] });
const behind = new Gauge({ name: 'kinsumer_millis_behind_latest', help: 'MillisBehindLatest of the last GetRecords', labelNames: ['shard'], registers: [registry] });
const delivery = new Histogram({
  name: 'kinsumer_delivery_seconds', help: 'time from arrival in the stream to delivery', registers: [registry],
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
});
const checkpoints = new Counter({ name: 'kinsumer_checkpoints_total', help: 'checkpoints written', registers: [registry] });
const leases = new Gauge({ name: 'kinsumer_leases', help: 'shards held by this process', registers: [registry] });
const events = new Counter({ name: 'kinsumer_events_total', help: 'kinsumer events by type', labelNames: ['type'], registers: [registry] });

// Called synchronously on kinsumer's path: keep them cheap.
const stats: StatReceiver = {
  eventsFromKinesis: (count, shardId, millisBehindLatest) => {
    recordsRead.inc({ shard: shardId }, count);
    behind.set({ shard: shardId }, millisBehindLatest);
  },
  eventToClient: (inserted, retrieved) => delivery.observe(Math.max(0, retrieved.getTime() - inserted.getTime()) / 1000),
  checkpoint: () => checkpoints.inc(),
};

const stream = await exampleStream({ shards: 2, records: 200 });
const consumer = new Kinsumer({
  streamName: stream.streamName,
  applicationName: 'example-metrics',
  kinesis: stream.kinesis,
  dynamodb: stream.dynamodb,
  createTables: true,
  stats,
});

consumer.events$.subscribe((event) => {
  events.inc({ type: event.type });
  if (event.type === 'lease-acquired') leases.inc();
  if (event.type === 'lease-released' || event.type === 'lease-lost') leases.dec();
});

await new Promise<void>((resolve, reject) => {
  consumer.records$
    .pipe(concatMap(async (record) => { await Promise.resolve(); record.ack(); }), take(stream.records))
    .subscribe({ complete: resolve, error: reject });
});
await consumer.stop();

const text = await registry.metrics();
console.log(text.split('\n').filter((line) => line.startsWith('kinsumer_') && !line.includes('_bucket')).join('\n'));
await stream.close();
