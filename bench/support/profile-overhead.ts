// One variant of the overhead figure, alone, for a CPU profile (BENCHMARKS.md, "Profiles"):
//
//   node --cpu-prof --cpu-prof-dir=.tmp/prof --import tsx bench/support/profile-overhead.ts [bare|subscribe|concatMap] [seconds]
//   npx tsx bench/support/cpu-profile.ts .tmp/prof/<file>.cpuprofile
import { concatMap } from 'rxjs';
import { MemoryTables, memoryKinsumer } from './memory-deps.js';
import { SyntheticStream } from './synthetic-stream.js';

const variant = process.argv[2] ?? 'concatMap';
const seconds = Number(process.argv[3] ?? 10);
const stream = new SyntheticStream({ shardCount: 64, recordBytes: Number(process.env.RECORD_BYTES ?? 100) });
let records = 0;
let checksum = 0;
const touch = (data: Uint8Array, sequenceNumber: string): void => {
  checksum = (checksum + data.length + sequenceNumber.length) | 0;
  records += 1;
};
let running = true;
const started = Date.now();
const finish = (stop: () => Promise<void>): void => {
  setTimeout(() => {
    running = false;
    const rate = Math.round(records / ((Date.now() - started) / 1000));
    void stop().then(() => {
      console.log(`${variant}: ${rate} records/s (checksum ${checksum})`);
      process.exit(0);
    });
  }, seconds * 1000);
};

if (variant === 'bare') {
  const pages = stream.shardIds().map((_, shard) => 0 * shard);
  void (async () => {
    while (running) {
      for (let shard = 0; shard < pages.length; shard += 1) {
        const page = stream.page(shard, pages[shard] ?? 0, 10_000);
        for (const record of page.records) touch(record.data, record.sequenceNumber);
        pages[shard] = (pages[shard] ?? 0) + 10_000;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  })();
  finish(() => Promise.resolve());
} else {
  const kinsumer = memoryKinsumer(stream, new MemoryTables(), { clientId: 'profile' });
  const subscription = variant === 'subscribe'
    ? kinsumer.records$.subscribe((record) => { touch(record.data, record.sequenceNumber); record.ack(); })
    : kinsumer.records$.pipe(concatMap((record) => { touch(record.data, record.sequenceNumber); record.ack(); return Promise.resolve(); })).subscribe();
  finish(async () => { await kinsumer.stop(); subscription.unsubscribe(); });
}
