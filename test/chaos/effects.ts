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

export async function createTotalsTable(local: LocalAws, table: string): Promise<void> {
  await local.dynamodb.send(new CreateTableCommand({
    TableName: table, BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'account', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'account', KeyType: 'HASH' }],
  }));
}

/** Each key's total as the table holds it now (strongly consistent scan). */
export async function readTotals(local: LocalAws, table: string): Promise<Map<string, number>> {
  const totals = new Map<string, number>();
  let start: Record<string, unknown> | undefined;
  do {
    const page = await local.dynamodb.send(new ScanCommand({ TableName: table, ConsistentRead: true, ...(start === undefined ? {} : { ExclusiveStartKey: start as never }) }));
    for (const item of page.Items ?? []) totals.set(item.account?.S ?? '', Number(item.amount?.N ?? 0));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return totals;
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
