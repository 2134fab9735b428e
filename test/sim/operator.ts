// The operator of the simulated group: `kinsumer reset` as the CLI does it (refuse while a live
// owner holds a target, unless forced, then reset each shard through a lease store with the CLI's
// client id), and the reset that opens R15's window: a shard split, read to its end and written
// Finished, reset to LATEST while its children still wait for their first owner.
import { lastValueFrom } from 'rxjs';
import type { StoredCheckpoint } from '../../src/ports/lease-store.js';
import { type MemoryCoordinationTables, MemoryMembershipStore } from '../../src/testing/memory-coordination.js';
import type { MemoryCheckpointTable } from '../../src/testing/memory-lease-store.js';
import { MemoryLeaseStore } from '../../src/testing/memory-lease-store.js';
import type { MemoryStream } from '../../src/testing/memory-stream.js';
import type { InvariantChecker } from './checker.js';
import type { EffectsLedger } from './effects-table.js';
import { describeError, observedCheckpoint } from './process.js';
import type { Producer } from './producer.js';
import type { StartKind } from './schedule.js';
import type { SimScheduler } from './sim-scheduler.js';

/** The client id the CLI's lease store uses for resets. */
const OPERATOR_ID = 'kinsumer-cli';
/** How often the operator looks whether a split shard is Finished yet. */
const WATCH_MS = 50;
/** Records put into each child right after the parent's reset (they are owed: the reset came before them). */
const CHILD_RECORDS = 3;

/** What the operator works on: the world's stream, tables, producer and checker. */
export interface OperatorWorld {
  readonly scheduler: SimScheduler;
  readonly stream: MemoryStream;
  readonly checkpoints: MemoryCheckpointTable;
  readonly coordination: MemoryCoordinationTables;
  readonly checker: InvariantChecker;
  readonly producer: Producer;
  readonly effects: EffectsLedger | undefined;
  readonly leaseTtlMs: number;
  /** Shards an operator reset (their checkpoint rows' delivery counts start again). */
  readonly resetShards: Set<string>;
  /** `true` once the schedule calmed (no more trouble is made). */
  calmed(): boolean;
  note(text: string): void;
}

/** `kinsumer reset`, and the split-then-reset of a finished parent. */
export class SimOperator {
  /** Resets refused because a lease was held (as the CLI refuses). */
  refusedResets = 0;
  readonly #store: MemoryLeaseStore;
  readonly #members: MemoryMembershipStore;

  constructor(private readonly world: OperatorWorld) {
    const now = () => world.scheduler.now();
    // The CLI reads the owners' clients rows and tells an owner whose lease it takes (Revoked).
    this.#members = new MemoryMembershipStore({ clientId: OPERATOR_ID, leaseTtlMs: world.leaseTtlMs, now, tables: world.coordination });
    this.#store = new MemoryLeaseStore({
      clientId: OPERATOR_ID, clientName: OPERATOR_ID, leaseTtlMs: world.leaseTtlMs, now, table: world.checkpoints, members: this.#members, clients: world.coordination,
    });
  }

  /** What `kinsumer reset` does: refuse while a live owner holds a target (unless forced), then reset each. */
  reset(target: number | 'all', to: StartKind, agoTenths: number, force: boolean): Promise<void> {
    const all = this.world.stream.shardIds();
    // The reset's own promise, not one more await around it: the run's turns stay as they were (kept seeds replay).
    return this.#reset(target === 'all' ? all : [all[target % all.length] as string], to, agoTenths, force);
  }

  /**
   * Splits open shard #`index`; once its owner has read it to the end and written it Finished,
   * resets it to LATEST — before its children are first captured, as an operator's reset of
   * "every shard" can land between a parent's end and its children's capture — then puts records
   * into the children. The reset's moment is the children's start (§8.3): those records are owed.
   */
  resetFinishedParent(index: number, force: boolean): void {
    const { stream, checker, checkpoints, scheduler } = this.world;
    const open = stream.openShardIds();
    const parent = open[index % Math.max(1, open.length)];
    if (parent === undefined || stream.shardIds().length > 200) return;
    const children = stream.split(parent);
    for (const child of children) checker.shardCreated(child, [parent]);
    this.world.note(`${parent} splits into ${children.join(', ')}; reset to LATEST once Finished`);
    const giveUpAt = scheduler.now() + 10 * this.world.leaseTtlMs;
    const watch = (): void => {
      if (this.world.calmed() || scheduler.now() > giveUpAt) return;
      if (checkpoints.row(parent)?.finished !== true) {
        scheduler.schedule(watch, WATCH_MS);
        return;
      }
      const waiting = children.filter((child) => checkpoints.row(child)?.ownerId === undefined);
      this.world.note(`${parent} is Finished; ${waiting.length} of its children not captured yet`);
      void this.#reset([parent], 'LATEST', 0, force).then(() => {
        if (this.world.calmed()) return;
        for (const child of children) this.world.producer.produceTo(child, CHILD_RECORDS);
      });
    };
    scheduler.schedule(watch, WATCH_MS);
  }

  async #reset(targets: readonly string[], to: StartKind, agoTenths: number, force: boolean): Promise<void> {
    const { scheduler, checker, checkpoints, leaseTtlMs: ttl } = this.world;
    const now = scheduler.now();
    const checkpoint: StoredCheckpoint = to === 'AT_TIMESTAMP' ? { type: 'AT_TIMESTAMP', timestamp: new Date(now - (agoTenths * ttl) / 10) } : { type: to };
    await lastValueFrom(this.#members.liveClients(), { defaultValue: [] });
    const rows = await lastValueFrom(this.#store.readMany([...targets]), { defaultValue: [] });
    const cutoffNs = BigInt(now - ttl) * 1_000_000n;
    const held = rows.filter((row) => row.ownerId !== undefined && row.lastUpdateNs !== undefined && row.lastUpdateNs > cutoffNs);
    if (held.length > 0 && !force) {
      this.refusedResets += 1;
      this.world.note(`reset of ${targets.length} shards refused: ${held.length} leased by live clients`);
      return;
    }
    this.world.note(`operator resets ${targets.join(', ')} to ${to}${force ? ' --force' : ''}`);
    for (const shardId of targets) {
      try {
        await lastValueFrom(this.#store.resetCheckpoint(shardId, checkpoint, { force }), { defaultValue: undefined });
      } catch (error) {
        // Captured between the check and the write: the CLI reports it and goes on.
        if (error instanceof Error && error.name === 'LeaseHeldError') continue;
        checker.libraryError(now, `operator reset of ${shardId}: ${describeError(error)}`);
        continue;
      }
      checker.reset(shardId, observedCheckpoint(checkpoint), checkpoints.row(shardId)?.finished ?? false, scheduler.now());
      this.world.effects?.reset(shardId);
      this.world.resetShards.add(shardId);
    }
  }
}
