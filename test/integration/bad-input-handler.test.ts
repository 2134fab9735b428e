// Misuse: the application's handler throws inside its records$ pipeline. The error must reach
// the subscriber; what was acked before stays committed (a new consumer resumes after it); and
// nothing after it is skipped: every record not acked is delivered again to the next consumer.
import { GetItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { concatMap, firstValueFrom, lastValueFrom, mergeMap, retry, take, takeWhile, toArray } from 'rxjs';
import { Kinsumer, KinsumerError, kinsumer, type KinsumerRecord } from '../../src/index.js';
import { putRecords } from '../../src/testing/index.js';
import { freshSetup, text, type FreshOptions } from '../support/bad-input.js';
import { eventually, useLocalAws } from '../support/local.js';

class HandlerFailure extends Error {}

describe('bad input: a handler that throws (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  async function tenRecords(): Promise<FreshOptions> {
    const options = await freshSetup(local(), 'throws');
    await putRecords(local().kinesis, options.streamName, Array.from({ length: 10 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    return options;
  }

  async function storedSequenceNumber(options: FreshOptions): Promise<string | undefined> {
    const row = await local().dynamodb.send(new GetItemCommand({
      TableName: `${options.applicationName}_checkpoints`, Key: { Shard: { S: 'shardId-000000000000' } }, ConsistentRead: true,
    }));
    return row.Item?.SequenceNumber?.S;
  }

  /** What a fresh consumer of the same application reads first: the rest of the shard. */
  async function nextConsumerReads(options: FreshOptions, count: number): Promise<string[]> {
    const next = new Kinsumer(options);
    const records = await firstValueFrom(next.records$.pipe(take(count), toArray()));
    for (const r of records) r.ack();
    await next.stop();
    return records.map(text);
  }

  it('in order (concatMap): the error reaches the subscriber, r0-r4 stay committed, r5-r9 come again', async () => {
    const options = await tenRecords();
    const consumer = new Kinsumer(options);
    const seen: KinsumerRecord[] = [];
    const failure = await lastValueFrom(consumer.records$.pipe(concatMap(async (r) => {
      seen.push(r);
      await Promise.resolve(); // an asynchronous handler, as real ones are
      if (text(r) === 'r5') throw new HandlerFailure('cannot handle r5');
      r.ack();
    }))).then(() => undefined, (error: unknown) => error);
    expect(failure).to.be.instanceOf(HandlerFailure);
    // The error unsubscribed the pipeline, which is a graceful stop: it settles with the acked position.
    await consumer.stop();
    expect(await storedSequenceNumber(options)).to.equal(seen[4]?.sequenceNumber);
    expect(await nextConsumerReads(options, 5)).to.deep.equal(['r5', 'r6', 'r7', 'r8', 'r9']);
  });

  it('out of order (mergeMap): later records acked before the failure do not move the checkpoint past it, and are not delivered again', async () => {
    const options = await tenRecords();
    const consumer = new Kinsumer(options);
    const acked = new Set<string>();
    const failure = await lastValueFrom(consumer.records$.pipe(mergeMap(async (r) => {
      if (text(r) !== 'r5') {
        r.ack();
        acked.add(text(r));
        return;
      }
      // r5 fails last, once every other record was acked: only the gap at r5 holds the checkpoint back.
      await eventually(() => acked.size === 9, 'every record but r5 acked');
      throw new HandlerFailure('cannot handle r5');
    }, 10))).then(() => undefined, (error: unknown) => error);
    expect(failure).to.be.instanceOf(HandlerFailure);
    await consumer.stop();
    // A marker after the ten: the next consumer reads up to it, so anything delivered again shows.
    await putRecords(local().kinesis, options.streamName, [{ partitionKey: 'k', data: 'r10' }]);
    const nextReads = await nextConsumerReads(options, 2);
    // At least once: r5 comes again, nothing is skipped; r6-r9 were acked beyond the watermark and
    // are remembered with the checkpoint (acked ranges), so they are not delivered again.
    expect(nextReads).to.deep.equal(['r5', 'r10']);
  });

  it('retry() on a Kinsumer\'s records$ is refused with a KinsumerError (the error unsubscribed, which stopped it)', async () => {
    const options = await tenRecords();
    const consumer = new Kinsumer(options);
    const failure = await lastValueFrom(consumer.records$.pipe(
      concatMap(async (r) => {
        await Promise.resolve();
        if (text(r) === 'r5') throw new HandlerFailure('cannot handle r5');
        r.ack();
      }),
      retry({ count: 2 }),
    )).then(() => undefined, (error: unknown) => error);
    expect(failure).to.be.instanceOf(KinsumerError);
    expect((failure as Error).message).to.contain('create a new one');
    await consumer.stop();
    expect(await nextConsumerReads(options, 5)).to.deep.equal(['r5', 'r6', 'r7', 'r8', 'r9']);
  });

  it('retry() on kinsumer() starts a fresh consumer that resumes at the failed record', async () => {
    const options = await tenRecords();
    let failed = false;
    const handled = await lastValueFrom(kinsumer(options).pipe(
      concatMap(async (r) => {
        await Promise.resolve();
        if (text(r) === 'r5' && !failed) {
          failed = true;
          throw new HandlerFailure('cannot handle r5 the first time');
        }
        r.ack();
        return text(r);
      }),
      retry({ count: 1 }),
      takeWhile((t) => t !== 'r9', true),
      toArray(),
    ));
    expect(failed).to.equal(true);
    expect(handled).to.deep.equal(['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8', 'r9']);
    // Both consumers stopped on their unsubscribes and left the group.
    await eventually(async () => ((await local().dynamodb.send(new ScanCommand({ TableName: `${options.applicationName}_clients`, ConsistentRead: true }))).Items ?? []).length === 0, 'both clients gone');
  });
});
