// Edge-sized records: zero-length data and the largest record Kinesis takes (1 MiB of data and
// partition key together), plus the longest partition key. Each must arrive byte for byte and be
// checkpointed like any other.
import { expect } from 'chai';
import { firstValueFrom, take, tap, toArray } from 'rxjs';
import { Kinsumer } from '../../src/index.js';
import { putRecords } from '../../src/testing/index.js';
import { freshSetup } from '../support/bad-input.js';
import { useLocalAws } from '../support/local.js';

const MIB = 1024 * 1024;

/** Bytes that are not text and not a KPL aggregate, so nothing can decode or trim them. */
function pattern(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let state = seed;
  for (let i = 0; i < length; i += 1) {
    state = (state * 1103515245 + 12345) % 2147483648;
    bytes[i] = state >>> 16;
  }
  return bytes;
}

describe('bad input: zero-length and 1 MiB records (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  it('delivers them intact and checkpoints past them', async () => {
    const options = await freshSetup(local(), 'sizes');
    const longKey = 'p'.repeat(256);
    const sent = [
      { partitionKey: 'empty', data: new Uint8Array(0) },
      // Kinesis counts the partition key's bytes into the 1 MiB.
      { partitionKey: 'big', data: pattern(MIB - 'big'.length, 7) },
      { partitionKey: longKey, data: pattern(MIB - longKey.length, 11) },
      { partitionKey: 'after', data: new Uint8Array([0]) },
    ];
    for (const r of sent) await putRecords(local().kinesis, options.streamName, [r]);

    // One record in flight at a time: a 1 MiB record is no reason to read more than asked for.
    const consumer = new Kinsumer({ ...options, maxInFlightRecords: 1 });
    const checkpoints: string[] = [];
    consumer.events$.subscribe((e) => {
      if ((e.type === 'checkpoint' || e.type === 'lease-released') && e.checkpoint !== undefined) checkpoints.push(e.checkpoint.sequenceNumber);
    });
    const received = await firstValueFrom(consumer.records$.pipe(tap((r) => r.ack()), take(sent.length), toArray()));

    expect(received.map((r) => r.partitionKey)).to.deep.equal(sent.map((r) => r.partitionKey));
    for (const [i, r] of received.entries()) {
      const expected = sent[i]?.data ?? new Uint8Array(0);
      expect(r.data.length, r.partitionKey.slice(0, 8)).to.equal(expected.length);
      expect(Buffer.from(r.data).equals(Buffer.from(expected)), r.partitionKey.slice(0, 8)).to.equal(true);
      expect(r.subSequenceNumber).to.equal(undefined);
    }
    // take() unsubscribed: the graceful stop writes the last ack, at the latest with the release.
    await consumer.stop();
    expect(checkpoints.at(-1)).to.equal(received[3]?.sequenceNumber);
  });
});
