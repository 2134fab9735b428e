// A record's own DynamoDB writes (design §8.1) as the write lane packs them: how many actions and
// bytes they weigh against one TransactWriteItems' limits, and which items they touch (a
// transaction may not touch one item twice). Pure: DynamoDB's rules, no I/O.
import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { KinsumerError } from '../errors/kinsumer-errors.js';
import { WritesTooLargeError } from '../errors/write-errors.js';

/** Most actions in one TransactWriteItems (DynamoDB's limit since 2022). */
export const TRANSACTION_MAX_ACTIONS = 100;
/** Most bytes in one TransactWriteItems: 4 MiB, the exact boundary DynamoDB Local enforces (AWS says "4 MB"). */
export const TRANSACTION_MAX_BYTES = 4 * 1024 * 1024;
/**
 * Bytes kept for the checkpoint action of every transaction: its row with the largest acked ranges
 * a row may hold (twice their 8 KiB cap) and the expression around them, with room to spare.
 */
export const CHECKPOINT_ACTION_BYTES = 32 * 1024;
/** Most actions one record (or one batch) may write: the checkpoint is the 100th. */
export const RECORD_MAX_ACTIONS = TRANSACTION_MAX_ACTIONS - 1;
/** Most bytes one record (or one batch) may write beside its checkpoint. */
export const RECORD_MAX_BYTES = TRANSACTION_MAX_BYTES - CHECKPOINT_ACTION_BYTES;

/** The weight of a list of writes against one transaction's limits. */
export interface WritesWeight {
  readonly actions: number;
  /** Bytes as DynamoDB sizes items: each Put's item, each other action's key and expression values, and every expression and name. */
  readonly bytes: number;
  /** The tables the writes touch, each once. */
  readonly tables: readonly string[];
}

/** One action's kind and body, whichever of the four it is. */
export interface WriteAction {
  readonly kind: 'Put' | 'Update' | 'Delete' | 'ConditionCheck';
  readonly table: string;
  /** The item's key (Update, Delete, ConditionCheck), or the whole item (Put). */
  readonly attributes: Record<string, AttributeValue>;
}

const utf8 = (text: string): number => Buffer.byteLength(text, 'utf8');

function numberSize(text: string): number {
  const digits = text.replace(/^-/, '').replace(/[eE].*$/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/** Bytes of one attribute value as DynamoDB counts them ("Item sizes and formats"). */
export function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.NULL !== undefined || value.BOOL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + utf8(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.byteLength, 0);
  if (value.L !== undefined) return 3 + value.L.reduce((sum, element) => sum + 1 + valueSize(element), 0);
  if (value.M !== undefined) return 3 + Object.entries(value.M).reduce((sum, [key, element]) => sum + 1 + utf8(key) + valueSize(element), 0);
  return 1;
}

/** Bytes of an item (or a key) as DynamoDB counts them. */
export function itemSize(item: Record<string, AttributeValue>): number {
  let size = 0;
  for (const name of Object.keys(item)) size += utf8(name) + valueSize(item[name] as AttributeValue);
  return size;
}

/**
 * The action a TransactWriteItem holds: exactly one of Put, Update, Delete and ConditionCheck, with
 * a table name and its item or key.
 * @throws KinsumerError when it holds none, several, or lacks its table or key.
 */
export function actionOf(write: TransactWriteItem, index: number): WriteAction {
  const present = (['Put', 'Update', 'Delete', 'ConditionCheck'] as const).filter((kind) => write[kind] !== undefined);
  if (present.length !== 1) throw new KinsumerError(`write ${index} must hold exactly one of Put, Update, Delete and ConditionCheck (it holds ${present.length})`);
  const kind = present[0] as WriteAction['kind'];
  const body = write[kind] as { TableName?: unknown; Item?: Record<string, AttributeValue>; Key?: Record<string, AttributeValue> };
  if (typeof body.TableName !== 'string' || body.TableName === '') throw new KinsumerError(`write ${index} (${kind}) has no TableName`);
  const attributes = kind === 'Put' ? body.Item : body.Key;
  if (attributes === undefined || attributes === null || typeof attributes !== 'object') {
    throw new KinsumerError(`write ${index} (${kind}) has no ${kind === 'Put' ? 'Item' : 'Key'}`);
  }
  return { kind, table: body.TableName, attributes };
}

/** Bytes an action adds to a transaction: its item or key, its expressions and their names and values. */
function actionBytes(write: TransactWriteItem, action: WriteAction): number {
  const body = write[action.kind] as {
    UpdateExpression?: string; ConditionExpression?: string;
    ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Record<string, AttributeValue>;
  };
  let bytes = utf8(action.table) + itemSize(action.attributes);
  if (body.UpdateExpression !== undefined) bytes += utf8(body.UpdateExpression);
  if (body.ConditionExpression !== undefined) bytes += utf8(body.ConditionExpression);
  for (const [placeholder, name] of Object.entries(body.ExpressionAttributeNames ?? {})) bytes += utf8(placeholder) + utf8(name);
  if (body.ExpressionAttributeValues !== undefined) bytes += itemSize(body.ExpressionAttributeValues);
  return bytes;
}

/**
 * Weighs a record's (or a batch's) writes and checks them against what one transaction can hold
 * beside the checkpoint.
 * @throws WritesTooLargeError naming `recordId` when they exceed 99 actions or {@link RECORD_MAX_BYTES}.
 * @throws KinsumerError when a write is not a well-formed action.
 */
export function weighWrites(writes: readonly TransactWriteItem[], recordId: string): WritesWeight {
  const list: unknown = writes;
  if (!Array.isArray(list)) throw new KinsumerError(`the writes of record ${recordId} must be an array of TransactWriteItem`);
  if (writes.length > RECORD_MAX_ACTIONS) throw new WritesTooLargeError(recordId, 'actions', writes.length, RECORD_MAX_ACTIONS);
  let bytes = 0;
  const tables = new Set<string>();
  writes.forEach((write, index) => {
    const action = actionOf(write, index);
    tables.add(action.table);
    bytes += actionBytes(write, action);
  });
  if (bytes > RECORD_MAX_BYTES) throw new WritesTooLargeError(recordId, 'bytes', bytes, RECORD_MAX_BYTES);
  return { actions: writes.length, bytes, tables: [...tables] };
}

/**
 * The identity of the item an action touches (table and primary key, with numbers and binaries
 * compared as DynamoDB compares them), or a string saying which key attribute is missing.
 */
export function itemIdentity(action: WriteAction, keyNames: readonly string[]): { readonly id: string } | { readonly missing: string } {
  const parts: string[] = [action.table];
  for (const name of keyNames) {
    const value = action.attributes[name];
    if (value === undefined) return { missing: name };
    parts.push(keyPart(value));
  }
  return { id: parts.join('\u0000') };
}

function keyPart(value: AttributeValue): string {
  if (value.S !== undefined) return `S${value.S}`;
  if (value.N !== undefined) return `N${canonicalNumber(value.N)}`;
  if (value.B !== undefined) return `B${Buffer.from(value.B).toString('base64')}`;
  // Not a key type: DynamoDB refuses it; any spelling that cannot equal a real key will do.
  return `?${JSON.stringify(value)}`;
}

/** A DynamoDB number in one spelling per value: `1`, `1.0`, `01` and `1e0` are one key. */
export function canonicalNumber(text: string): string {
  const match = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/.exec(text);
  if (match === null) return text;
  const [, sign, whole = '', fraction = '', exponent = '0'] = match;
  let digits = `${whole}${fraction}`;
  let point = whole.length + Number(exponent);
  const leading = digits.length - digits.replace(/^0+/, '').length;
  digits = digits.slice(leading);
  point -= leading;
  digits = digits.replace(/0+$/, '');
  if (digits === '') return '0';
  return `${sign === '-' ? '-' : ''}0.${digits}e${point}`;
}
