import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { Kinsumer, createTables, type KinsumerEvent } from '../../src/index.js';
import { createStream, listShards, putRecords } from '../../src/testing/index.js';
import { GoMember, goRoundRobin, goStringOrder, type GoTimings } from '../support/go-member.js';
import { eventually, uniqueName, useLocalAws } from '../support/local.js';
import { QUIET } from '../support/memory-group.js';
import { unreadGaps, type Delivered, type Sent } from '../support/unread-gaps.js';

// Timings shortened consistently on both sides, as docs/from-go.md (rolling migration) says to set
// them: one shard check, the Go TTL (5 × shard check) as our leaseTtlMs.
const SHARD_CHECK_MS = 2000;
const GO_TIMINGS: GoTimings = { shardCheckFrequencyMs: SHARD_CHECK_MS, leaderActionFrequencyMs: 2 * SHARD_CHECK_MS, throttleDelayMs: 200, commitFrequencyMs: 200 };
const TS_TIMINGS = {
  shardCheckFrequencyMs: SHARD_CHECK_MS,
  leaseTtlMs: 5 * SHARD_CHECK_MS,
  leaderActionFrequencyMs: 2 * SHARD_CHECK_MS,
  throttleDelayMs: 200,
  commitFrequencyMs: 200,
  shutdownTimeoutMs: 5000,
};
const SHARDS = 6;
const PRODUCE_EVERY_MS = 100;

type Running =
  | { readonly kind: 'go'; readonly member: GoMember }
  | { readonly kind: 'ts'; readonly kinsumer: Kinsumer; readonly events: KinsumerEvent[] };

/** A group of Go-like members and Kinsumers on one stream, a producer writing to every shard, and what was delivered. */
class MixedFleet {
  readonly sent: Sent[] = [];
  readonly delivered: Delivered[] = [];
  readonly deliveredKeys = new Set<string>();
  readonly members = new Map<string, Running>();
  readonly steps: Array<{ readonly what: string; readonly atMs: number }> = [];
  readonly stoppedEvents: KinsumerEvent[] = [];
  readonly goErrors: Error[] = [];
  #producing: Promise<void> | undefined;
  #stopProducing = false;
  #counter = 0;

  constructor(
    private readonly local: ReturnType<ReturnType<typeof useLocalAws>>,
    readonly streamName: string,
    readonly applicationName: string,
    readonly shardIds: readonly string[],
    private readonly hashKeys: readonly string[],
  ) {}

  startProducer(): void {
    this.#producing = (async () => {
      while (!this.#stopProducing) {
        const batch = this.hashKeys.map((explicitHashKey) => ({ partitionKey: 'p', explicitHashKey, data: `r${this.#counter++}` }));
        const atMs = Date.now();
        const results = await putRecords(this.local.kinesis, this.streamName, batch);
        results.forEach((r, i) => this.sent.push({ key: batch[i]?.data ?? '', shardId: r.shardId, atMs }));
        await new Promise((resolve) => setTimeout(resolve, PRODUCE_EVERY_MS));
      }
    })();
  }

  async stopProducer(): Promise<void> {
    this.#stopProducing = true;
    await this.#producing;
  }

  async startGo(id: string): Promise<void> {
    this.steps.push({ what: `start Go ${id}`, atMs: Date.now() });
    const member = new GoMember({
      dynamodb: this.local.dynamodb, kinesis: this.local.kinesis, applicationName: this.applicationName, streamName: this.streamName,
      timings: GO_TIMINGS, id, deliver: (d) => this.#deliver(d.data),
    });
    this.members.set(id, { kind: 'go', member });
    await member.start();
  }

  startTs(id: string): void {
    this.steps.push({ what: `start Kinsumer ${id}`, atMs: Date.now() });
    const kinsumer = new Kinsumer({ ...TS_TIMINGS, logger: QUIET, streamName: this.streamName, applicationName: this.applicationName, clientId: id, kinesis: this.local.kinesis, dynamodb: this.local.dynamodb });
    const events: KinsumerEvent[] = [];
    kinsumer.events$.subscribe((e) => events.push(e));
    kinsumer.records$.subscribe((record) => {
      record.ack();
      this.#deliver(new TextDecoder().decode(record.data));
    });
    this.members.set(id, { kind: 'ts', kinsumer, events });
  }

  #deliver(key: string): void {
    this.delivered.push({ key, atMs: Date.now() });
    this.deliveredKeys.add(key);
  }

  /** A graceful stop, as each library does it (Go: release every shard, delete the client row). */
  async stop(id: string): Promise<void> {
    const running = this.members.get(id);
    this.steps.push({ what: `stop ${running?.kind === 'go' ? 'Go' : 'Kinsumer'} ${id}`, atMs: Date.now() });
    this.members.delete(id);
    if (running?.kind === 'go') {
      await running.member.stop();
      this.goErrors.push(...running.member.errors);
    } else if (running !== undefined) {
      await running.kinsumer.stop();
      this.stoppedEvents.push(...running.events);
    }
  }

  async owners(): Promise<Map<string, string | undefined>> {
    const out = await this.local.dynamodb.send(new ScanCommand({ TableName: `${this.applicationName}_checkpoints`, ConsistentRead: true }));
    return new Map((out.Items ?? []).map((item) => [item.Shard?.S ?? '', item.OwnerID?.S]));
  }

  /** Who should hold what now: the Go assignment while a Go member runs, else any balanced split. */
  async settled(): Promise<string | true> {
    const owners = await this.owners();
    const ids = [...this.members.keys()];
    if ([...this.members.values()].some((m) => m.kind === 'go')) {
      const expected = goRoundRobin(ids.sort(goStringOrder), this.shardIds);
      const wrong = this.shardIds.filter((s) => owners.get(s) !== expected.get(s));
      return wrong.length === 0 ? true : `Go assignment not reached on ${wrong.map((s) => `${s}: ${owners.get(s) ?? 'nobody'} (want ${expected.get(s)})`).join(', ')}`;
    }
    const counts = ids.map((id) => this.shardIds.filter((s) => owners.get(s) === id).length);
    const owned = counts.reduce((a, b) => a + b, 0);
    return owned === this.shardIds.length && Math.max(...counts) - Math.min(...counts) <= 1 ? true : `not balanced: ${ids.map((id, i) => `${id}=${counts[i]}`).join(' ')}`;
  }

  /** Waits until the assignment is in force and every shard has delivered a record sent after that. */
  async settle(what: string): Promise<void> {
    await eventually(async () => {
      const settled = await this.settled();
      if (settled !== true) throw new Error(settled);
      return true;
    }, what, 30_000, 100);
    const since = Date.now();
    await eventually(() => {
      const unread = this.shardIds.filter((shardId) => !this.sent.some((s) => s.shardId === shardId && s.atMs >= since && this.isDelivered(s.key)));
      if (unread.length > 0) throw new Error(`unread: ${unread.join(', ')}`);
      return true;
    }, `${what}: every shard read after it settled`, 30_000, 100);
  }

  isDelivered(key: string): boolean {
    return this.deliveredKeys.has(key);
  }

  tsEvents(): KinsumerEvent[] {
    return [...this.stoppedEvents, ...[...this.members.values()].flatMap((m) => (m.kind === 'ts' ? m.events : []))];
  }

  async stopAll(): Promise<void> {
    await this.stopProducer();
    for (const id of [...this.members.keys()]) await this.stop(id);
  }
}

describe('rolling migration between the Go kinsumer and Kinsumer (Go-behaviour members, kinesalite + dynalite)', function () {
  this.timeout(120_000);
  const local = useLocalAws();

  it('3 Go members replaced one by one by Kinsumers and back under a steady producer: nothing lost, no lease fought over, no shard unread for more than two shard checks', async () => {
    const streamName = uniqueName('go-migration');
    const applicationName = uniqueName('go-migration-app');
    await createStream(local().kinesis, streamName, SHARDS);
    await createTables({ dynamodb: local().dynamodb, applicationName });
    const shards = (await listShards(local().kinesis, streamName)).sort((a, b) => goStringOrder(a.ShardId ?? '', b.ShardId ?? ''));
    const fleet = new MixedFleet(local(), streamName, applicationName, shards.map((s) => s.ShardId ?? ''), shards.map((s) => s.HashKeyRange?.StartingHashKey ?? '0'));
    try {
      // Ids chosen so that each change moves the index of a member that stays (Go's rule then
      // reshuffles: the Go members stop the world and recapture), and the leader changes hands.
      for (const id of ['B', 'D', 'F']) await fleet.startGo(id);
      fleet.startProducer();
      await fleet.settle('three Go members');
      // Measured from here: the Go fleet's own start-up is not part of the migration.
      const measuredFrom = Date.now();
      // Replaced as a deploy does it: stop one, start its successor at once (two membership changes
      // that members see in either order), then wait until the group has settled. The last
      // replacement leaves no Go member: the group returns to the sticky assignment.
      for (const [goId, tsId] of [['B', 'G'], ['F', 'A'], ['D', 'C']] as const) {
        await fleet.stop(goId);
        fleet.startTs(tsId);
        await fleet.settle(`after replacing Go ${goId} with Kinsumer ${tsId}`);
      }
      // Rollback, one process at a time, new Go processes; this time the group settles between the
      // stop and the start (a fleet scaled down, then up).
      for (const [tsId, goId] of [['A', 'E'], ['G', 'B'], ['C', 'H']] as const) {
        await fleet.stop(tsId);
        await fleet.settle(`after stopping Kinsumer ${tsId}`);
        await fleet.startGo(goId);
        await fleet.settle(`after starting Go ${goId}`);
      }
      await fleet.stopProducer();
      await eventually(() => fleet.sent.every((s) => fleet.isDelivered(s.key)), 'every record delivered', 30_000, 100);
      const endMs = Date.now();

      const measured = fleet.sent.filter((s) => s.atMs >= measuredFrom);
      const lost = fleet.sent.filter((s) => !fleet.isDelivered(s.key));
      const gaps = unreadGaps(measured, fleet.delivered, endMs);
      const worst = gaps.reduce((a, b) => (b.longestMs > a.longestMs ? b : a));
      // A gap starts at the shard's last delivery, up to one poll before the step that caused it.
      const during = [...fleet.steps].reverse().find((s) => s.atMs <= worst.fromMs + TS_TIMINGS.throttleDelayMs)?.what ?? 'the start';
      const firstDeliveries = fleet.deliveredKeys.size;
      console.log(`      rolling migration: ${fleet.sent.length} records, ${fleet.delivered.length - firstDeliveries} redelivered, longest unread ${worst.longestMs} ms (${worst.shardId}, after "${during}"); per shard: ${gaps.map((g) => g.longestMs).join(', ')} ms`);

      expect(lost.map((s) => s.key), 'records never delivered').to.deep.equal([]);
      expect(fleet.tsEvents().filter((e) => e.type === 'lease-lost'), 'leases taken from a Kinsumer').to.deep.equal([]);
      await fleet.stopAll();
      expect(fleet.goErrors.map((e) => e.message), 'errors of the Go members (a lease taken from them fails their commit)').to.deep.equal([]);
      expect(worst.longestMs, `longest unread time (${worst.shardId}, after "${during}")`).to.be.at.most(2 * SHARD_CHECK_MS);
    } finally {
      await fleet.stopAll();
    }
  });
});
