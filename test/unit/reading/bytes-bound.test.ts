import { expect } from 'chai';
import { type Observable, concatMap, map, tap, timer } from 'rxjs';
import type { KinsumerPorts } from '../../../src/ports/backend.js';
import type { RecordsPage, StreamPort } from '../../../src/ports/stream.js';
import type { KinsumerRecord } from '../../../src/types.js';
import { MemoryGroup } from '../../support/memory-group.js';

const KiB = 1024;

/**
 * What a client holds, seen from outside it: the payload bytes its GetRecords calls returned, less
 * those of records it acked (acked in order per shard here, so an acked record is under the
 * checkpoint). Its largest value is taken at every answer and every ack.
 */
class Holdings {
  readonly shardOf = new Map<string, string>();
  private fetched = 0;
  private acked = 0;
  max = 0;

  /** The stream port, with every page it answers counted. */
  wrap(ports: KinsumerPorts): KinsumerPorts {
    const stream = ports.stream;
    const counting: StreamPort = {
      streamLabel: stream.streamLabel,
      getShardIterator: (shardId, start) => stream.getShardIterator(shardId, start),
      getRecords: (iterator, limit): Observable<RecordsPage> => stream.getRecords(iterator, limit).pipe(tap((page) => {
        for (const record of page.records) this.fetched += record.data.byteLength;
        this.look();
      })),
      listShards: () => stream.listShards(),
    };
    return { ...ports, stream: counting };
  }

  ackedOne(record: KinsumerRecord): void {
    this.acked += record.data.byteLength;
    this.look();
  }

  get now(): number {
    return this.fetched - this.acked;
  }

  private look(): void {
    this.max = Math.max(this.max, this.now);
  }
}

/** A consumer that handles one record at a time, `ms` each, and acks it (records of all shards in one line). */
function slowConsumer(group: MemoryGroup, ms: number, holdings: Holdings) {
  return (source: Observable<KinsumerRecord>) => source.pipe(
    concatMap((record) => timer(ms, group.scheduler).pipe(map(() => record))),
    tap((record) => {
      record.ack();
      holdings.ackedOne(record);
    }),
  );
}

// maxInFlightBytes (design §9.1), from outside the client: what it holds counts from the GetRecords
// that fetched it until the record is under the checkpoint, whatever the count bound allows.
describe('maxInFlightBytes: memory per client bounded in bytes (virtual time, whole client)', function () {
  this.timeout(60_000);

  it('a client with 2 shards and a 64 KiB budget never holds more than the budget and one record (4 KiB records, 10,000 allowed by count)', async () => {
    const recordBytes = 4 * KiB;
    const budget = 64 * KiB;
    const group = new MemoryGroup(2, { maxInFlightBytes: budget });
    const holdings = new Holdings();
    const [s0, s1] = group.stream.openShardIds() as [string, string];
    for (const shardId of [s0, s1]) {
      group.stream.putRecords(Array.from({ length: 150 }, (_, i) => ({ partitionKey: 'k', data: new Uint8Array(recordBytes).fill(i % 250) })), { shardId });
    }
    const a = group.join('a', { wrap: (ports) => holdings.wrap(ports), pipeline: slowConsumer(group, 20, holdings) });
    await group.scheduler.until(() => a.received.length === 300, 'every record delivered', 60_000);
    expect(holdings.max, `held at most ${holdings.max} bytes`).to.be.at.most(budget + recordBytes);
    expect(holdings.max, 'the budget is used, not left idle').to.be.at.least(budget / 2);
    await group.stop(a, 60_000);
  });

  it('a record larger than the budget is delivered alone, and every one of them is delivered (no deadlock)', async () => {
    const group = new MemoryGroup(2, { maxInFlightBytes: 16 * KiB });
    const holdings = new Holdings();
    const [s0, s1] = group.stream.openShardIds() as [string, string];
    for (const shardId of [s0, s1]) {
      group.stream.putRecords(Array.from({ length: 5 }, () => ({ partitionKey: 'k', data: new Uint8Array(40 * KiB) })), { shardId });
    }
    const unacked = new Map<string, number>();
    const company: number[] = [];
    const a = group.join('a', {
      wrap: (ports) => holdings.wrap(ports),
      pipeline: (source) => source.pipe(
        tap((record) => {
          // What else of its shard the application holds when this record comes: nothing, for a record beyond the budget.
          company.push(unacked.get(record.shardId) ?? 0);
          unacked.set(record.shardId, (unacked.get(record.shardId) ?? 0) + 1);
        }),
        concatMap((record) => timer(1000, group.scheduler).pipe(map(() => record))),
        tap((record) => {
          unacked.set(record.shardId, (unacked.get(record.shardId) ?? 0) - 1);
          record.ack();
          holdings.ackedOne(record);
        }),
      ),
    });
    await group.scheduler.until(() => a.received.length === 10, 'all ten records', 60_000);
    expect(company).to.deep.equal(Array.from({ length: 10 }, () => 0));
    expect(holdings.max, 'each shard holds one record at most').to.be.at.most(2 * 40 * KiB);
    await group.stop(a, 60_000);
  });

  it('no starvation: a shard whose records are never acked fills the budget, and the other shard is still read to its end', async () => {
    const recordBytes = 4 * KiB;
    const group = new MemoryGroup(2, { maxInFlightBytes: 64 * KiB });
    const holdings = new Holdings();
    const [stuck, other] = group.stream.openShardIds() as [string, string];
    group.stream.putRecords(Array.from({ length: 400 }, () => ({ partitionKey: 'k', data: new Uint8Array(recordBytes) })), { shardId: stuck });
    // The application never acks the stuck shard's records (a poison record, a hung handler).
    const a = group.join('a', { wrap: (ports) => holdings.wrap(ports), ack: (record) => record.shardId !== stuck });
    await group.scheduler.until(() => a.received.length >= 16, 'the stuck shard holding the budget', 30_000);
    group.stream.putRecords(Array.from({ length: 20 }, (_, i) => ({ partitionKey: 'k', data: new Uint8Array(recordBytes).fill(i) })), { shardId: other });
    await group.scheduler.until(() => a.received.filter((r) => r.shardId === other).length === 20, 'the other shard read to its end', 60_000);
    expect(a.received.filter((r) => r.shardId === stuck).length, 'the stuck shard holds the budget, and no more').to.equal(16);
    await group.stop(a, 60_000);
  });
});
