import { expect } from 'chai';
import { type FailedRecord, type KinsumerRecord, processRecords } from '../../../src/index.js';
import { MemoryGroup, type Member } from '../../support/memory-group.js';

const text = (record: KinsumerRecord) => new TextDecoder().decode(record.data);

/**
 * A worker process whose handler kills it on one record, and its supervisor: the process dies
 * without stop() (every call it makes hangs from then on, nothing it holds is released), and a new
 * process with the same clientId starts 100 ms later — a pod restarted by Kubernetes.
 */
class CrashingFleet {
  readonly calls = new Map<string, number>();
  readonly deadLetters: FailedRecord[] = [];
  readonly processed = new Set<string>();
  readonly sessions: Member[] = [];
  readonly errors: unknown[] = [];

  constructor(private readonly group: MemoryGroup, private readonly id: string, private readonly poison: (record: KinsumerRecord) => boolean,
    private readonly options: { readonly maxDeliveries?: number } = {}) {}

  start(): void {
    let dead = false;
    const member = this.group.join(this.id, {
      keepFailure: true,
      pipeline: processRecords(async (record) => {
        if (dead) return new Promise<void>(() => undefined);
        this.calls.set(text(record), (this.calls.get(text(record)) ?? 0) + 1);
        await Promise.resolve();
        if (this.poison(record)) {
          // process.exit(): the process is gone, its handler never returns.
          dead = true;
          member.pause();
          this.group.scheduler.schedule(() => this.start(), 100);
          return new Promise<void>(() => undefined);
        }
        this.processed.add(text(record));
        return undefined;
      }, {
        scheduler: this.group.scheduler,
        ...(this.options.maxDeliveries === undefined ? {} : { maxDeliveries: this.options.maxDeliveries }),
        onFailure: async (failure) => { await Promise.resolve(); this.deadLetters.push(failure); },
      }),
      onError: (error) => this.errors.push(error),
    });
    this.sessions.push(member);
  }
}

// Design §9.3 "Poison that crashes the process": the checkpoint row counts the deliveries of the
// records after its checkpoint, across owners and restarts, so a record that kills its process
// stops looping.
describe('poison that crashes the process (a consumer group on virtual time)', function () {
  this.timeout(60_000);

  it('a record that kills its process, in the middle of a page, reaches onFailure after maxDeliveries (5) sessions; only it, and every other record is handled', async () => {
    // Commits far apart: the acks of the records before the poison are never written before it kills the process.
    const group = new MemoryGroup(1, { commitFrequencyMs: 5000, leaseTtlMs: 6000 });
    const [s0] = group.stream.shardIds() as [string];
    const put = group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })), { shardId: s0 });
    const fleet = new CrashingFleet(group, 'w', (record) => text(record) === 'r4');
    fleet.start();

    const checkpoint = () => {
      const row = group.checkpoints.row(s0);
      return row?.checkpoint?.type === 'position' ? row.checkpoint.position.sequenceNumber : undefined;
    };
    await group.scheduler.until(() => checkpoint() === put.at(-1)?.sequenceNumber, 'the checkpoint at the last record', 300_000);

    expect(fleet.errors).to.deep.equal([]);
    expect(fleet.calls.get('r4'), 'handler calls on the poison record').to.equal(5);
    expect(fleet.deadLetters.map((f) => [text(f.record), f.record.deliveryCount, (f.error as Error).name, f.attempts])).to.deep.equal([['r4', 6, 'TooManyDeliveriesError', 0]]);
    expect([...fleet.processed].sort()).to.deep.equal(['r0', 'r1', 'r2', 'r3', 'r5', 'r6', 'r7', 'r8', 'r9']);
    expect(fleet.sessions).to.have.length(6);
  });
});
