// Graceful shutdown: on SIGTERM or SIGINT, stop() stops reading, waits for the records in flight
// to be acked, writes each shard's final checkpoint and releases the leases, so another process
// takes over at once and re-reads nothing. stop() is bounded by shutdownTimeoutMs.
// Run: node --import tsx examples/graceful-shutdown.ts   (it signals itself once all records are in;
// a service runs under node, not the tsx command, which relays signals: see the README)
import { concatMap } from 'rxjs';
import { Kinsumer, ShutdownTimeoutError } from 'kinsumer';
import { exampleStream } from './local-stream.js';

const stream = await exampleStream({ shards: 2, records: 100 });
const consumer = new Kinsumer({
  streamName: stream.streamName,
  applicationName: 'example-shutdown',
  kinesis: stream.kinesis,
  dynamodb: stream.dynamodb,
  createTables: true,
  shutdownTimeoutMs: 10_000,
});

let released = 0;
consumer.events$.subscribe((event) => { if (event.type === 'lease-released') released += 1; });

async function stopGracefully(signal: string): Promise<void> {
  try {
    await consumer.stop();
    console.log(`graceful-shutdown: ${signal}: ${handled} records handled, ${released} leases released with their final checkpoint`);
  } catch (error) {
    // The releases go on in the background; the process should still exit.
    if (error instanceof ShutdownTimeoutError) console.error('graceful-shutdown: stop() timed out');
    process.exitCode = 1;
  } finally {
    await stream.close();
  }
}
// `on`, not `once`: a second signal must find the hook too, or it ends the process before stop()
// is done (the `tsx` command re-sends a signal its child has not taken within 30 ms). Every signal
// joins the one shutdown.
let shutdown: Promise<void> | undefined;
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => { shutdown ??= stopGracefully(signal); });

let handled = 0;
consumer.records$
  .pipe(concatMap(async (record) => {
    await Promise.resolve(); // your work
    record.ack();
    handled += 1;
    // Only for the example: in production your orchestrator sends the signal.
    if (handled === stream.records) process.kill(process.pid, 'SIGTERM');
  }))
  .subscribe({ error: (error: unknown) => { console.error(error); process.exitCode = 1; } });
