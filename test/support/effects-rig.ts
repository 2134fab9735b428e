// The rig of the write lane's tests (design §8.1): a checkpointer on virtual time over the
// in-memory stores, whose TransactWriteItems follows DynamoDB's rules (memory-items.ts), and the
// invariant checked after every step: the totals equal the sum of the amounts of exactly the
// records the stored checkpoint covers — every record's writes applied once if checkpointed,
// never otherwise.
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { VirtualTimeScheduler } from 'rxjs';
import { type Checkpointer, createCheckpointer } from '../../src/checkpoint/checkpointer.js';
import type { HeldLease, LeaseStore } from '../../src/ports/lease-store.js';
import type { Position } from '../../src/ports/position.js';
import type { WritesOutcome } from '../../src/ports/shard-tracker.js';
import { MemoryItemTables } from '../../src/testing/memory-items.js';
import { MemoryCheckpointTable, MemoryLeaseStore } from '../../src/testing/memory-lease-store.js';
import type { KinsumerEvent } from '../../src/types.js';
import { advance } from './virtual-time.js';

export const SHARD = 'shardId-000000000000';
export const BASE = 49590338271490256608559692538361571095921575989136588898n;
export const at = (n: number): Position => ({ sequenceNumber: (BASE + BigInt(n)).toString() });
export const TTL = 3_000;

export const add = (account: string, amount: number, condition?: string): TransactWriteItem => ({
  Update: {
    TableName: 'totals', Key: { account: { S: account } }, UpdateExpression: 'ADD amount :a',
    ExpressionAttributeValues: { ':a': { N: String(amount) }, ...(condition === undefined ? {} : { ':zero': { N: '0' } }) },
    ...(condition === undefined ? {} : { ConditionExpression: condition }),
  },
});

export interface Rig {
  readonly scheduler: VirtualTimeScheduler;
  readonly items: MemoryItemTables;
  readonly table: MemoryCheckpointTable;
  readonly store: MemoryLeaseStore;
  readonly events: KinsumerEvent[];
  readonly checkpointer: Checkpointer;
  readonly lease: HeldLease;
  /** Amount each record (by number) adds to its account, once its writes commit. */
  readonly amounts: Map<number, { account: string; amount: number }>;
  error: unknown;
}

export function captured(store: MemoryLeaseStore, scheduler: VirtualTimeScheduler): HeldLease {
  let held: HeldLease | undefined;
  store.capture(SHARD).subscribe((lease) => { held = lease; });
  advance(scheduler, 10);
  if (held === undefined) throw new Error('capture failed');
  return held;
}

export function rig(options: {
  clientId?: string; shared?: Rig; latencyMs?: number; table?: MemoryCheckpointTable;
  /** What the checkpointer talks to instead of the store (a test's injected faults). */
  wrap?: (store: MemoryLeaseStore) => LeaseStore;
} = {}): Rig {
  const scheduler = options.shared?.scheduler ?? new VirtualTimeScheduler();
  const items = options.shared?.items ?? new MemoryItemTables();
  items.createTable('totals', ['account']);
  const table = options.shared?.table ?? options.table ?? new MemoryCheckpointTable();
  const store = new MemoryLeaseStore({ clientId: options.clientId ?? 'me', leaseTtlMs: TTL, now: () => scheduler.now(), table, items, latencyMs: options.latencyMs ?? 5, scheduler });
  const lease = captured(store, scheduler);
  const events: KinsumerEvent[] = [];
  const checkpointer = createCheckpointer({ store: options.wrap?.(store) ?? store, lease, commitFrequencyMs: 100, renewIntervalMs: TTL / 3, scheduler, emit: (e) => events.push(e) });
  const r: Rig = { scheduler, items, table, store, events, checkpointer, lease, amounts: options.shared?.amounts ?? new Map<number, { account: string; amount: number }>(), error: undefined };
  checkpointer.run$.subscribe({ error: (error: unknown) => { r.error = error; } });
  return r;
}

export const total = (r: Rig, account: string): number => Number(r.items.get('totals', { account: { S: account } })?.amount?.N ?? 0);

/** The invariant: each account's total is the sum over exactly the records the stored checkpoint covers. */
export function checkExactlyOnce(r: Rig): void {
  const row = r.table.row(SHARD);
  const checkpoint = row?.checkpoint?.type === 'position' ? BigInt(row.checkpoint.position.sequenceNumber) - BASE : 0n;
  const covered = (n: number) => BigInt(n) <= checkpoint || (row?.acked ?? []).some((range) => BigInt(range.from.sequenceNumber) - BASE <= BigInt(n) && BigInt(n) <= BigInt(range.to.sequenceNumber) - BASE);
  const expected = new Map<string, number>();
  for (const [n, { account, amount }] of r.amounts) if (covered(n)) expected.set(account, (expected.get(account) ?? 0) + amount);
  const accounts = new Set([...expected.keys(), ...r.items.scan('totals').map((item) => item.account?.S ?? '')]);
  for (const account of accounts) expect(total(r, account), `total of ${account}`).to.equal(expected.get(account) ?? 0);
}

/** Tracks record n and returns a function that acks it with its writes (adding `amount` to `account`). */
export function record(r: Rig, n: number, account: string, amount: number, writes?: TransactWriteItem[]): (settle?: (o: WritesOutcome) => void) => void {
  const ticket = r.checkpointer.track(at(n));
  return (settle) => {
    r.amounts.set(n, { account, amount });
    r.checkpointer.ackWithWrites?.([ticket], [`${SHARD}/${n}`], writes ?? [add(account, amount)], settle);
  };
}
