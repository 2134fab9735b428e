// A steady producer for the figures: records put round robin into the shards whose starting hash
// keys are given (ExplicitHashKey), `perSecondEach` a second into each, in ten batches a second.
import { type KinesisClient, PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { sleep } from './harness.js';

/** Starts producing; the function returned stops it (after the batch in flight). */
export function produce(kinesis: KinesisClient, streamName: string, hashKeys: readonly string[], perSecondEach: number, bytes = 0): () => Promise<void> {
  let running = true;
  let n = 0;
  const perTick = Math.max(1, Math.round(perSecondEach / 10));
  const payload = (i: number): Uint8Array => (bytes > 0 ? new Uint8Array(bytes).fill(120) : new TextEncoder().encode(`r${i}`));
  const loop = (async () => {
    while (running) {
      const started = Date.now();
      const records = hashKeys.flatMap((hashKey) => Array.from({ length: perTick }, () => {
        n += 1;
        return { PartitionKey: `k${n}`, ExplicitHashKey: hashKey, Data: payload(n) };
      }));
      await kinesis.send(new PutRecordsCommand({ StreamName: streamName, Records: records }));
      await sleep(Math.max(0, 100 - (Date.now() - started)));
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}
