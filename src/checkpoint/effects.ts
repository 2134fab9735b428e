// The writes of a shard's acked records that wait for their transaction (design §8.1), and how the
// next transaction is packed from them: in sequence order, a prefix of what waits, within
// DynamoDB's limits (100 actions with the checkpoint, 4 MiB), ended before the first record that
// writes an item already in it — so a record's writes are never applied before an earlier
// record's. Pure: the write lane (effects-lane.ts) sends what this packs.
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { WriteRejectedError } from '../errors/write-errors.js';
import type { WritesOutcome } from '../ports/shard-tracker.js';
import type { TrackedRecord } from './checkpoint-state.js';
import {
  CHECKPOINT_ACTION_BYTES, TRANSACTION_MAX_ACTIONS, TRANSACTION_MAX_BYTES, type WritesWeight, actionOf, itemIdentity,
} from './transact-writes.js';

/** The writes of one acked record (or of a batch's records), waiting for their transaction. */
export interface PendingEffect {
  /** The records the writes belong to, in sequence order: a checkpoint covering them all commits them. */
  readonly records: readonly TrackedRecord[];
  /** Their `record.id`s, for the errors. */
  readonly recordIds: readonly string[];
  readonly writes: readonly TransactWriteItem[];
  readonly weight: WritesWeight;
  /** Told how the writes ended; `undefined` for a plain `ack({ writes })`. */
  readonly settle: ((outcome: WritesOutcome) => void) | undefined;
}

/** The primary key attribute names of each table; `undefined` for a table that does not exist. */
export type KeyNames = ReadonlyMap<string, readonly string[] | undefined>;

/** What {@link EffectQueue.pack} made. */
export interface Packed {
  /** The effects of the next transaction, in order (maybe none). */
  readonly effects: readonly PendingEffect[];
  /** Effects that can never commit (a missing table or key, one item twice, an action on the checkpoint row): fail them. */
  readonly rejected: ReadonlyArray<{ readonly effect: PendingEffect; readonly error: WriteRejectedError }>;
}

/** The items an effect touches, or why it can never commit. */
type Items = { readonly ids: readonly string[] } | { readonly error: WriteRejectedError };

/**
 * The waiting effects of one shard, in sequence order, and the key names of the tables they
 * write, from one source: the table's own key schema (DescribeTable, {@link learnKeys}). A `Key`
 * in a request is only what one record claims: a malformed one must fail that record alone.
 * A table found missing (or not describable) is asked about again once no waiting write needs
 * the answer: it may be created meanwhile.
 */
export class EffectQueue {
  #effects: PendingEffect[] = [];
  readonly #items = new WeakMap<PendingEffect, Items>();
  readonly #keyNames = new Map<string, readonly string[] | undefined>();
  readonly #refused = new Map<string, string>();

  /** Effects waiting. */
  get size(): number {
    return this.#effects.length;
  }

  /** Adds the writes of acked records; kept in order of their first record. */
  add(effect: PendingEffect): void {
    const first = effect.records[0] ?? 0;
    let at = this.#effects.length;
    while (at > 0 && ((this.#effects[at - 1] as PendingEffect).records[0] ?? 0) > first) at -= 1;
    this.#effects.splice(at, 0, effect);
  }

  /** Removes effects (committed, failed or rejected). */
  remove(effects: readonly PendingEffect[]): void {
    const gone = new Set(effects);
    this.#effects = this.#effects.filter((effect) => !gone.has(effect));
    this.#forgetUnanswered();
  }

  // A table without key names (missing, or DescribeTable refused) is asked about again by the next write to it.
  #forgetUnanswered(): void {
    if (this.#refused.size === 0 && ![...this.#keyNames.values()].includes(undefined)) return;
    const written = new Set(this.#effects.flatMap((effect) => effect.weight.tables));
    for (const [table, names] of this.#keyNames) {
      if (names !== undefined || written.has(table)) continue;
      this.#keyNames.delete(table);
      this.#refused.delete(table);
    }
  }

  /** Takes every waiting effect out (the lease ended). */
  drain(): PendingEffect[] {
    const effects = this.#effects;
    this.#effects = [];
    return effects;
  }

  /** The tables the waiting writes touch whose key names are not known yet (see {@link learnKeys}). */
  unknownTables(): string[] {
    const tables = new Set<string>();
    for (const effect of this.#effects) for (const table of effect.weight.tables) if (!this.#keyNames.has(table)) tables.add(table);
    return [...tables];
  }

  /**
   * Key names as DescribeTable gave them (`undefined`: the table does not exist, or, with
   * `refused`, cannot be described: the writes to it are rejected with that reason).
   */
  learnKeys(keyNames: KeyNames, refused?: string): void {
    for (const [table, names] of keyNames) {
      this.#keyNames.set(table, names);
      if (names === undefined && refused !== undefined) this.#refused.set(table, refused);
    }
  }

  /**
   * The next transaction: the longest prefix of the waiting effects (at most `maxEffects`) whose
   * actions, with the checkpoint's, stay within 100 actions and 4 MiB and touch no item twice.
   * Effects that can never commit are reported and passed over. Needs the key names of every
   * table the packed effects touch (see {@link unknownTables}); packing stops at one it lacks.
   */
  pack(maxEffects = Number.POSITIVE_INFINITY): Packed {
    const keyNames = this.#keyNames;
    const effects: PendingEffect[] = [];
    const rejected: Array<{ effect: PendingEffect; error: WriteRejectedError }> = [];
    const seen = new Set<string>();
    let actions = 1;
    let bytes = CHECKPOINT_ACTION_BYTES;
    for (const effect of this.#effects) {
      if (effect.weight.tables.some((table) => !keyNames.has(table))) break;
      const items = this.#itemsOf(effect, keyNames);
      if ('error' in items) {
        rejected.push({ effect, error: items.error });
        continue;
      }
      if (effects.length >= maxEffects) break;
      if (actions + effect.weight.actions > TRANSACTION_MAX_ACTIONS || bytes + effect.weight.bytes > TRANSACTION_MAX_BYTES) break;
      if (items.ids.some((id) => seen.has(id))) break;
      for (const id of items.ids) seen.add(id);
      actions += effect.weight.actions;
      bytes += effect.weight.bytes;
      effects.push(effect);
    }
    return { effects, rejected };
  }

  #itemsOf(effect: PendingEffect, keyNames: KeyNames): Items {
    let items = this.#items.get(effect);
    if (items === undefined) {
      items = identify(effect, keyNames, this.#refused);
      this.#items.set(effect, items);
    }
    return items;
  }
}

function identify(effect: PendingEffect, keyNames: KeyNames, refused: ReadonlyMap<string, string>): Items {
  const ids: string[] = [];
  const reject = (reason: string, index: number): Items => ({ error: new WriteRejectedError(effect.recordIds, reason, index) });
  for (const [index, write] of effect.writes.entries()) {
    const action = actionOf(write, index);
    const names = keyNames.get(action.table);
    if (names === undefined) return reject(refused.get(action.table) ?? `table ${action.table} does not exist`, index);
    const identity = itemIdentity(action, names);
    if ('missing' in identity) return reject(`the ${action.kind} on ${action.table} has no value for its key attribute ${identity.missing}`, index);
    if (ids.includes(identity.id)) return reject(`two actions on one item of ${action.table} (a transaction allows one per item)`, index);
    ids.push(identity.id);
  }
  return { ids };
}
