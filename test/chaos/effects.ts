// The effects mode of a chaos run (`npm run chaos -- --effects`, design §8.1): the workers ack each
// record with a write adding its amount to its key's total in a user table of Amazon's DynamoDB
// Local (dynalite has no transactions), committed with the record's checkpoint. Besides the
// ordinary checks, every total must end equal to the sum of the amounts produced for its key:
// never more (a write applied twice: a zombie, a lost response, a crash; an ADD is never taken
// back, so a double application shows at the end) nor less (a write lost).
import { CreateTableCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { type Produced, amountOf } from '../../examples/demo/producer.js';
import type { LocalAws } from '../../src/testing/index.js';
import type { Fault, FaultRule } from '../support/fault-proxy.js';
import type { Tally, Violation } from '../support/tally.js';
import { DYNAMODB_FAULTS, type FaultMix, faultRules } from './faults.js';

/**
 * DynamoDB faults of an effects run, at `rate` of every call: the ordinary ones plus lost answers
 * (the proxy forwards the call and drops the connection instead of the answer: it applied, the
 * worker cannot know); and, on TransactWriteItems only, a cancellation for a conflict (as AWS
 * answers under contention; DynamoDB Local never does) at `rate` of those calls.
 */
export function effectsFaultRules(rate: number): FaultRule[] {
  const mix: readonly FaultMix[] = [...DYNAMODB_FAULTS, { fault: { kind: 'lose' }, share: 0.3 }];
  const conflict: Fault = {
    kind: 'error', error: 'TransactionCanceledException', message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]',
    body: { CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item.' }] },
  };
  return [{ operation: 'TransactWriteItems', rate, fault: conflict }, ...faultRules(rate, mix)];
}

/**
 * The checker's duplicate rules, informational in an effects run: a record whose writes had not
 * committed when its owner crashed, froze or handed the shard over is delivered again — as it
 * must be, since nothing of it was applied — however long its transaction took (DynamoDB Local
 * serialises every transaction). The totals are what check that no write applied twice.
 */
export function splitRedeliveries(tally: Tally): { readonly tally: Tally; readonly redeliveries: readonly Violation[] } {
  const informational = (v: Violation) => v.kind === 'unexplained duplicate' || v.kind === 'duplicate window';
  return { tally: { ...tally, violations: tally.violations.filter((v) => !informational(v)) }, redeliveries: tally.violations.filter(informational) };
}

/** What the totals came to. */
export interface EffectsCheck {
  readonly table: string;
  readonly keys: number;
  readonly expectedSum: number;
  readonly actualSum: number;
  /** Keys whose total differs from what was produced for them. */
  readonly mismatches: ReadonlyArray<{ readonly key: string; readonly expected: number; readonly actual: number }>;
  /** Duplicate deliveries the checker's at-least-once rules would have flagged (see {@link splitRedeliveries}). */
  readonly redeliveries: number;
}

/** A user table with a string hash key: the totals (`account`), the dead letters (`record`). */
export async function createUserTable(local: LocalAws, table: string, key: 'account' | 'record'): Promise<void> {
  await local.dynamodb.send(new CreateTableCommand({
    TableName: table, BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }], KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
  }));
}

/** What the dead letters of a poison run came to (design §9.3): each poison record's, written once. */
export interface DeadLetterCheck {
  readonly table: string;
  /** Poison records produced. */
  readonly poison: number;
  /** Items in the table, and the writes they count. */
  readonly items: number;
  readonly written: number;
  /** Poison records whose dead letter is missing or written more than once, and any record's written more than once. */
  readonly wrong: ReadonlyArray<{ readonly record: string; readonly written: number }>;
  /**
   * Healthy records dead-lettered, once each: the run killed `maxDeliveries` of their owners in a
   * row before a commit passed them (their count is of deliveries without the checkpoint moving,
   * and a killed process's acks never reached the row). Informational: the contract's price.
   */
  readonly healthy: readonly string[];
}

/** Reads the dead letters: each poison record's must be written exactly once, and no record's twice. */
export async function checkDeadLetters(local: LocalAws, table: string, poison: readonly string[]): Promise<DeadLetterCheck> {
  const written = await scanNumbers(local, table, 'record', 'written');
  const isPoison = new Set(poison);
  const records = [...new Set([...poison, ...written.keys()])].sort().map((record) => ({ record, written: written.get(record) ?? 0 }));
  return {
    table, poison: poison.length, items: written.size, written: [...written.values()].reduce((a, b) => a + b, 0),
    wrong: records.filter((r) => r.written > 1 || (isPoison.has(r.record) && r.written !== 1)),
    healthy: records.filter((r) => !isPoison.has(r.record) && r.written === 1).map((r) => r.record),
  };
}

/** Each key's total as the table holds it now (strongly consistent scan). */
export function readTotals(local: LocalAws, table: string): Promise<Map<string, number>> {
  return scanNumbers(local, table, 'account', 'amount');
}

/** The number attribute `value` of every item, by its string key (strongly consistent scan). */
async function scanNumbers(local: LocalAws, table: string, key: string, value: string): Promise<Map<string, number>> {
  const numbers = new Map<string, number>();
  let start: Record<string, unknown> | undefined;
  do {
    const page = await local.dynamodb.send(new ScanCommand({ TableName: table, ConsistentRead: true, ...(start === undefined ? {} : { ExclusiveStartKey: start as never }) }));
    for (const item of page.Items ?? []) numbers.set(item[key]?.S ?? '', Number(item[value]?.N ?? 0));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return numbers;
}

/** Each key's sum of the amounts of the records produced for it. */
export function expectedTotals(produced: readonly Produced[]): Map<string, number> {
  const totals = new Map<string, number>();
  for (const record of produced) totals.set(record.key, (totals.get(record.key) ?? 0) + amountOf(record.data));
  return totals;
}

/** Compares the totals with what was produced. */
export function checkTotals(table: string, expected: ReadonlyMap<string, number>, actual: ReadonlyMap<string, number>, redeliveries: number): EffectsCheck {
  const keys = new Set([...expected.keys(), ...actual.keys()]);
  const mismatches = [...keys].sort()
    .map((key) => ({ key, expected: expected.get(key) ?? 0, actual: actual.get(key) ?? 0 }))
    .filter((m) => m.expected !== m.actual);
  const sum = (values: Iterable<number>) => [...values].reduce((a, b) => a + b, 0);
  return { table, keys: keys.size, expectedSum: sum(expected.values()), actualSum: sum(actual.values()), mismatches, redeliveries };
}

/** `true` once every total equals what was produced (the drain of an effects run waits for it). */
export function totalsReached(expected: ReadonlyMap<string, number>, actual: ReadonlyMap<string, number>): boolean {
  for (const [key, total] of expected) if (actual.get(key) !== total) return false;
  return true;
}
