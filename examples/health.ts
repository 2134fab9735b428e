// Health endpoints for Kubernetes probes, built on consumer.status() (synchronous, cheap):
//   GET /healthz  liveness   200 unless the client failed or stopped (restarting would help)
//   GET /readyz   readiness  200 while running; 503 starting, paused, stopping, stopped, failed
// each with a small JSON body saying why. SIGUSR2 pauses or resumes reading (as an app would while
// a downstream store is down): the pod turns not ready, stays alive, keeps its leases.
// Run: node --import tsx examples/health.ts   (PORT=8080 to choose the port; Ctrl-C stops it
// gracefully; a service runs under node, not the tsx command, which relays signals: see the README)
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Kinsumer } from 'kinsumer';
import { liveness, readiness } from './health-probes.js';
import { exampleStream } from './local-stream.js';

const stream = await exampleStream({ shards: 2, records: 100 });
const consumer = new Kinsumer({
  streamName: stream.streamName,
  applicationName: 'example-health',
  kinesis: stream.kinesis,
  dynamodb: stream.dynamodb,
  createTables: true,
});
consumer.records$.subscribe({
  next: (record) => record.ack(), // your work, then the ack
  error: (error: unknown) => console.error('health: the consumer failed:', error),
});

const server = createServer((request, response) => {
  const probe = request.url === '/healthz' ? liveness : request.url === '/readyz' ? readiness : undefined;
  if (probe === undefined) {
    response.writeHead(404).end();
    return;
  }
  const { code, body } = probe(consumer.status());
  response.writeHead(code, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`health: listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});

process.on('SIGUSR2', () => {
  if (consumer.status().state === 'paused') consumer.resume();
  else consumer.pause();
  console.log(`health: ${consumer.status().state}`);
});

async function stopGracefully(): Promise<void> {
  // Not ready while stopping (readiness answers 503 at once); alive until the leases are back.
  await consumer.stop();
  server.close();
  await stream.close();
  console.log('health: stopped');
}
// `on`, not `once`: a second signal (the `tsx` command re-sends one its child has not taken within
// 30 ms) must find the hook too, and joins the one shutdown.
let shutdown: Promise<void> | undefined;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    shutdown ??= stopGracefully().catch((error: unknown) => { console.error(error); process.exitCode = 1; });
  });
}
