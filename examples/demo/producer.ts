// Writes records tagged `key#n` (n counts per partition key), so a checker can tell which record
// is which, which came first for a key, and which are missing.
import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { putRecords } from '../../src/testing/index.js';

/**
 * What a record adds to its key's total in an effects run (`npm run chaos -- --effects`): 1 to 9,
 * from its per-key number `n` in its data `key#n`, so a checker can sum what was produced.
 */
export function amountOf(data: string): number {
  const n = Number(data.slice(data.lastIndexOf('#') + 1));
  return (n % 9) + 1;
}

/** A record the producer put, and where it landed. */
export interface Produced {
  readonly key: string;
  readonly n: number;
  readonly data: string;
  readonly shardId: string;
  readonly seq: string;
  /** Wall-clock ms when the put returned. */
  readonly t: number;
}

export class Producer {
  readonly produced: Produced[] = [];
  private readonly counters: number[];
  private next = 0;

  constructor(private readonly kinesis: KinesisClient, private readonly stream: string, private readonly keys = 32) {
    this.counters = new Array<number>(keys).fill(0);
  }

  /** Puts the next `count` records, keys in turn. */
  async put(count: number): Promise<void> {
    const batch = Array.from({ length: count }, () => {
      const index = this.next++ % this.keys;
      const key = `key-${String(index).padStart(3, '0')}`;
      const n = this.counters[index] ?? 0;
      this.counters[index] = n + 1;
      return { key, n, data: `${key}#${n}` };
    });
    const results = await putRecords(this.kinesis, this.stream, batch.map((r) => ({ partitionKey: r.key, data: r.data })));
    const t = Date.now();
    results.forEach((result, i) => {
      const record = batch[i];
      if (record !== undefined) this.produced.push({ ...record, shardId: result.shardId, seq: result.sequenceNumber, t });
    });
  }

  /**
   * Puts about `perSecond` records a second, in batches every 100 ms, until the signal aborts.
   * A failed put is retried with the next batch (putRecords already re-sends refused records).
   */
  async run(perSecond: number, signal: AbortSignal, onError: (error: unknown) => void = () => undefined): Promise<void> {
    const perTick = Math.max(1, Math.round(perSecond / 10));
    while (!signal.aborted) {
      const started = Date.now();
      try {
        await this.put(perTick);
      } catch (error) {
        onError(error);
      }
      const wait = 100 - (Date.now() - started);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}
