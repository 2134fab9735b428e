// DynamoDB tables of plain items in memory, with TransactWriteItems as DynamoDB runs it: checked
// whole first (at most 100 actions, 4 MiB, one action per item, tables and keys that exist —
// a `ValidationException` or `ResourceNotFoundException` for the request), then every action's
// condition (a `TransactionCanceledException` with one reason per action, in order, when any
// fails: nothing applied), then all applied at once. A ClientRequestToken makes an identical
// re-send within 10 minutes succeed without applying anything again (another request under the
// same token: `IdempotentParameterMismatchException`). Expressions: see memory-expressions.ts.
import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { TRANSACTION_MAX_ACTIONS, TRANSACTION_MAX_BYTES, actionOf, itemIdentity, itemSize } from '../checkpoint/transact-writes.js';
import { ActionValidationError, parseCondition, parseUpdate } from './memory-expressions.js';
import { awsError } from './memory-stream.js';

type Item = Record<string, AttributeValue>;

/** How long DynamoDB remembers a ClientRequestToken after its request completed. */
export const CLIENT_TOKEN_WINDOW_MS = 10 * 60 * 1000;
/** DynamoDB's item size limit. */
const MAX_ITEM_BYTES = 400 * 1024;

/** One action of a transaction, checked as part of the request. */
interface Prepared {
  readonly table: string;
  readonly id: string;
  /** Not a ConditionCheck. */
  readonly changes: boolean;
}

/** A reason as DynamoDB returns it in `CancellationReasons`. */
interface Reason {
  readonly Code: CancellationCode;
  readonly Message?: string;
  readonly Item?: Item;
}

/** What an action would do: fail (its reason), or leave this item (`undefined`: deleted). */
type Outcome = { readonly reason: Reason } | { readonly after: Item | undefined };

/** A reason per action, DynamoDB's codes (`None` for an action that did not fail). */
export type CancellationCode = 'None' | 'ConditionalCheckFailed' | 'ValidationError' | 'TransactionConflict';

/** What an {@link ExtraAction}'s condition found. */
export interface ExtraCheck {
  /** The condition did not hold: the transaction is cancelled, this action's reason `ConditionalCheckFailed`. */
  readonly failed: boolean;
  /** With `failed`: the item as it was, returned as the reason's `Item` (as ALL_OLD does). */
  readonly item?: Record<string, AttributeValue>;
}

/** A check of the transaction's own, run with the user's actions (the lease store's checkpoint action). */
export interface ExtraAction {
  /** Evaluates its condition (before anything is applied). */
  readonly check: () => ExtraCheck;
  /** Applies its write; called only when every condition held. */
  readonly apply: () => void;
}

/** DynamoDB tables in memory, shared by the in-memory stores of every simulated client. */
export class MemoryItemTables {
  readonly #tables = new Map<string, { readonly keyNames: readonly string[]; readonly items: Map<string, Item> }>();
  readonly #tokens = new Map<string, { readonly fingerprint: string; readonly atMs: number }>();
  /** Transactions that applied (replays and cancellations not counted). */
  transactions = 0;

  /** Creates an empty table keyed by `keyNames` (hash key, then the range key if any); idempotent. */
  createTable(name: string, keyNames: readonly string[]): void {
    if (!this.#tables.has(name)) this.#tables.set(name, { keyNames: [...keyNames], items: new Map() });
  }

  /** The key attribute names of a table; `undefined` when it does not exist. */
  keyNames(table: string): readonly string[] | undefined {
    return this.#tables.get(table)?.keyNames;
  }

  /** The item with `key` (a copy), or `undefined`. */
  get(table: string, key: Record<string, AttributeValue>): Record<string, AttributeValue> | undefined {
    const found = this.#table(table);
    const identity = itemIdentity({ kind: 'Delete', table, attributes: key }, found.keyNames);
    const item = 'id' in identity ? found.items.get(identity.id) : undefined;
    return item === undefined ? undefined : structuredClone(item);
  }

  /** Every item of a table (copies), in no particular order. */
  scan(table: string): Array<Record<string, AttributeValue>> {
    return [...this.#table(table).items.values()].map((item) => structuredClone(item));
  }

  /**
   * Runs a TransactWriteItems (see the module comment). `extra` runs as action 0 before the
   * user's (its reason comes first); `nowMs` times the token window.
   * @throws the errors DynamoDB would answer with, shaped as the AWS SDK throws them.
   */
  transact(writes: readonly TransactWriteItem[], options: { readonly token?: string; readonly nowMs: number; readonly extra?: ExtraAction }): void {
    const { token, nowMs, extra } = options;
    const fingerprint = JSON.stringify(writes);
    if (token !== undefined) {
      const seen = this.#tokens.get(token);
      if (seen !== undefined && nowMs - seen.atMs < CLIENT_TOKEN_WINDOW_MS) {
        if (seen.fingerprint !== fingerprint) throw awsError('IdempotentParameterMismatchException', { message: 'another request was made with this ClientRequestToken' });
        return;
      }
    }
    const total = writes.length + (extra === undefined ? 0 : 1);
    if (total === 0) throw awsError('ValidationException', { message: "1 validation error detected: Value [] at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1" });
    if (total > TRANSACTION_MAX_ACTIONS) throw awsError('ValidationException', { message: `1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to ${TRANSACTION_MAX_ACTIONS}` });
    const prepared = this.#prepare(writes);
    const reasons: Reason[] = [];
    if (extra !== undefined) {
      const checked = extra.check();
      reasons.push(checked.failed ? { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed', ...(checked.item === undefined ? {} : { Item: checked.item }) } : { Code: 'None' });
    }
    const outcomes = writes.map((write, index) => this.#evaluate(write, prepared[index] as Prepared));
    reasons.push(...outcomes.map((outcome) => ('reason' in outcome ? outcome.reason : { Code: 'None' as const })));
    if (reasons.some((reason) => reason.Code !== 'None')) {
      const codes = reasons.map((reason) => reason.Code).join(', ');
      const error = awsError('TransactionCanceledException', { message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${codes}]` });
      throw Object.assign(error, { CancellationReasons: reasons });
    }
    extra?.apply();
    for (const [index, action] of prepared.entries()) {
      const outcome = outcomes[index] as { readonly after: Item | undefined };
      if (!action.changes) continue;
      const items = this.#table(action.table).items;
      if (outcome.after === undefined) items.delete(action.id);
      else items.set(action.id, outcome.after);
    }
    this.transactions += 1;
    if (token !== undefined) this.#tokens.set(token, { fingerprint, atMs: nowMs });
  }

  /** The request as a whole: tables, keys, sizes, one action per item. */
  #prepare(writes: readonly TransactWriteItem[]): Prepared[] {
    const ids = new Set<string>();
    let bytes = 0;
    return writes.map((write, index) => {
      const action = actionOf(write, index);
      const table = this.#tables.get(action.table);
      if (table === undefined) throw awsError('ResourceNotFoundException', { message: 'Requested resource not found' });
      const identity = itemIdentity(action, table.keyNames);
      if ('missing' in identity) throw awsError('ValidationException', { message: 'One or more parameter values were invalid: Missing the key in the item' });
      if (action.kind !== 'Put' && Object.keys(action.attributes).length !== table.keyNames.length) {
        throw awsError('ValidationException', { message: 'The provided key element does not match the schema' });
      }
      if (ids.has(identity.id)) throw awsError('ValidationException', { message: 'Transaction request cannot include multiple operations on one item' });
      ids.add(identity.id);
      bytes += itemSize(action.attributes);
      if (action.kind === 'Put' && itemSize(action.attributes) > MAX_ITEM_BYTES) throw awsError('ValidationException', { message: 'Item size has exceeded the maximum allowed size' });
      if (bytes > TRANSACTION_MAX_BYTES) throw awsError('ValidationException', { message: `Transaction payload size cannot exceed 4MB. Payload Size: ${bytes}` });
      return { table: action.table, id: identity.id, changes: action.kind !== 'ConditionCheck' };
    });
  }

  /** One action's condition and result. Malformed expressions throw for the whole request. */
  #evaluate(write: TransactWriteItem, action: Prepared): Outcome {
    const table = this.#table(action.table);
    const before = table.items.get(action.id);
    const body = (write.Put ?? write.Update ?? write.Delete ?? write.ConditionCheck) as {
      ConditionExpression?: string; ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Record<string, AttributeValue>;
      UpdateExpression?: string; Key?: Item; Item?: Item; ReturnValuesOnConditionCheckFailure?: string;
    };
    const context = { names: body.ExpressionAttributeNames, values: body.ExpressionAttributeValues };
    const condition = body.ConditionExpression === undefined ? undefined : parseCondition(body.ConditionExpression, context);
    if (write.ConditionCheck !== undefined && condition === undefined) throw awsError('ValidationException', { message: 'ConditionCheck needs a ConditionExpression' });
    const update = write.Update === undefined ? undefined : parseUpdate(body.UpdateExpression ?? '', context);
    if (update !== undefined && update.paths.some((name) => table.keyNames.includes(name))) {
      throw awsError('ValidationException', { message: 'One or more parameter values were invalid: Cannot update attribute; this attribute is part of the key' });
    }
    if (condition !== undefined && !condition(before === undefined ? undefined : structuredClone(before))) {
      const old = body.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && before !== undefined ? { Item: structuredClone(before) } : {};
      return { reason: { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed', ...old } };
    }
    try {
      let after: Item | undefined;
      if (write.Put !== undefined) after = structuredClone(body.Item as Item);
      else if (update !== undefined) {
        after = structuredClone(before ?? (body.Key as Item));
        update.apply(after);
      }
      if (after !== undefined && itemSize(after) > MAX_ITEM_BYTES) return { reason: { Code: 'ValidationError', Message: 'Item size to update has exceeded the maximum allowed size' } };
      return { after: write.ConditionCheck === undefined ? after : before };
    } catch (error) {
      if (error instanceof ActionValidationError) return { reason: { Code: 'ValidationError', Message: error.message } };
      throw error;
    }
  }

  #table(name: string): { readonly keyNames: readonly string[]; readonly items: Map<string, Item> } {
    const table = this.#tables.get(name);
    if (table === undefined) throw awsError('ResourceNotFoundException', { message: 'Requested resource not found' });
    return table;
  }
}
