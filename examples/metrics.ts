// Metrics: Prometheus with prom-client, fed by the numbers kinsumer's OpenTelemetry metrics use —
// gauges read from consumer.status() at each scrape, counters from events$, delivered and acked
// counted where the records are handled. Serve `registry.metrics()` on /metrics in your service.
// (With @opentelemetry/api installed, kinsumer records the same as kinsumer.* metrics itself: see
// docs/opentelemetry.md.)
// Run: node --import tsx examples/metrics.ts
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { concatMap, take } from 'rxjs';
import { Kinsumer } from 'kinsumer';
import { exampleStream } from './local-stream.js';

const stream = await exampleStream({ shards: 2, records: 200 });
const consumer = new Kinsumer({
  streamName: stream.streamName,
  applicationName: 'example-metrics',
  kinesis: stream.kinesis,
  dynamodb: stream.dynamodb,
  createTables: true,
});

const registry = new Registry();
const registers = [registry];
const delivered = new Counter({ name: 'kinsumer_records_delivered_total', help: 'records delivered to the application', labelNames: ['shard'], registers });
const acked = new Counter({ name: 'kinsumer_records_acked_total', help: 'records acked', labelNames: ['shard'], registers });
const checkpoints = new Counter({ name: 'kinsumer_checkpoints_written_total', help: 'checkpoints written (commits and releases that stored a position)', labelNames: ['shard'], registers });
const retries = new Counter({ name: 'kinsumer_aws_retries_total', help: 'AWS requests retried after a transient fault', labelNames: ['operation'], registers });
const events = new Counter({ name: 'kinsumer_events_total', help: 'kinsumer events by type', labelNames: ['type'], registers });
const delivery = new Histogram({
  name: 'kinsumer_delivery_seconds', help: 'time from arrival in the stream to delivery', registers,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
});
// Gauges from status(), read at each scrape: a shard given up disappears from the series.
new Gauge({
  name: 'kinsumer_shard_millis_behind_latest', help: 'MillisBehindLatest of the last read of each held shard', labelNames: ['shard'], registers,
  collect() {
    this.reset();
    for (const shard of consumer.status().shards) if (shard.millisBehindLatest !== undefined) this.set({ shard: shard.shardId }, shard.millisBehindLatest);
  },
});
new Gauge({
  name: 'kinsumer_shard_pending', help: 'records emitted and not yet under the checkpoint, per held shard', labelNames: ['shard'], registers,
  collect() {
    this.reset();
    for (const shard of consumer.status().shards) this.set({ shard: shard.shardId }, shard.pending);
  },
});
new Gauge({
  name: 'kinsumer_leases_held', help: 'shard leases this process holds', registers,
  collect() { this.set(consumer.status().shards.length); },
});

consumer.events$.subscribe((event) => {
  events.inc({ type: event.type });
  if ((event.type === 'checkpoint' || event.type === 'lease-released') && event.checkpoint !== undefined) checkpoints.inc({ shard: event.shardId });
  if (event.type === 'retrying') retries.inc({ operation: event.operation });
});

await new Promise<void>((resolve, reject) => {
  consumer.records$
    .pipe(
      concatMap(async (record) => {
        delivered.inc({ shard: record.shardId });
        delivery.observe(Math.max(0, Date.now() - record.approximateArrivalTimestamp.getTime()) / 1000);
        await Promise.resolve(); // your work
        record.ack();
        acked.inc({ shard: record.shardId });
      }),
      take(stream.records),
    )
    .subscribe({ complete: resolve, error: reject });
});
const running = await registry.metrics();
await consumer.stop();
const stopped = await registry.metrics();

const kinsumerLines = (text: string) => text.split('\n').filter((line) => line.startsWith('kinsumer_') && !line.includes('_bucket'));
console.log('# while running');
console.log(kinsumerLines(running).filter((line) => line.startsWith('kinsumer_shard_') || line.startsWith('kinsumer_leases')).join('\n'));
console.log('# after stop()');
console.log(kinsumerLines(stopped).join('\n'));
await stream.close();
