// A row of `<app>_checkpoints`, read and written as the Go kinsumer reads and writes it: NULL-typed
// or absent empties, nanosecond timestamps beyond 2^53, the magic `LATEST`; and the attributes only
// this library writes (sub-sequence numbers, lease counter, floors, acked ranges).
import { decodeAckedRanges, encodeWrittenRanges } from '../checkpoint/acked-ranges.js';
import { decodeDeliveries, encodeDeliveries } from '../checkpoint/deliveries.js';
import { isSequenceNumber } from '../checkpoint/sequence-number.js';
import { CorruptCheckpointError } from '../errors/kinsumer-errors.js';
import type { CheckpointRow, CheckpointWrite, StoredCheckpoint } from '../ports/lease-store.js';
import type { Position } from '../ports/position.js';
import { AttributeFormatError, readInteger, readString } from './codec.js';
import type { Item } from './dynamo.js';
import type { UpdateExpression } from './update-expression.js';

/** Attribute names of `<app>_checkpoints`: the Go kinsumer's, plus `SubSequenceNumber`, `LeaseCounter`, `LastOwnerID`, `AckedRanges`, `CheckpointUpdate`, `TransactionToken`, `Deliveries`. */
export const CHECKPOINT_ATTRIBUTES = {
  shard: 'Shard',
  sequenceNumber: 'SequenceNumber',
  subSequenceNumber: 'SubSequenceNumber',
  lastUpdate: 'LastUpdate',
  ownerId: 'OwnerID',
  ownerName: 'OwnerName',
  finished: 'Finished',
  leaseCounter: 'LeaseCounter',
  lastOwnerId: 'LastOwnerID',
  /** Set by `reset` with a NULL SequenceNumber (the Go kinsumer then reads from TRIM_HORIZON: more, never less). */
  startPosition: 'StartPosition',
  startTimestamp: 'StartTimestamp',
  /** With a `LATEST` or kept `AT_TIMESTAMP` start: the checkpoint a reset replaced, not read again (the Go kinsumer ignores it). */
  startAfter: 'StartAfter',
  startAfterSub: 'StartAfterSub',
  /** With a `LATEST` a reset wrote: the reset's moment (Unix ms, DynamoDB's clock), where reading starts (the Go kinsumer ignores it). */
  resetTimestamp: 'ResetTimestamp',
  /** Records acked beyond the checkpoint (§7.3), one string, see acked-ranges.ts. The Go kinsumer's full-row writes drop it. */
  ackedRanges: 'AckedRanges',
  /**
   * When a commit or release last moved the checkpoint (Unix ns, plus `CheckpointUpdateRFC` as
   * `LastUpdate` has): progress, which renewals do not touch. The Go kinsumer ignores it (and its full-row writes drop it).
   */
  checkpointUpdate: 'CheckpointUpdate',
  /**
   * The token of the last transaction that committed records' writes with the checkpoint (§8.1):
   * each transaction is conditioned on it and replaces it, so one applied already fails its
   * condition if sent again, whenever that is. The Go kinsumer ignores it.
   */
  transactionToken: 'TransactionToken',
  /**
   * How often the records after the checkpoint were delivered by sessions that ended without a
   * graceful release (§9.3, `record.deliveryCount`), one string, see deliveries.ts; written with
   * the checkpoint, so one that moves the checkpoint resets it. The Go kinsumer ignores it (and its
   * full-row writes drop it: the counts start again).
   */
  deliveries: 'Deliveries',
  /**
   * The life of its owner when it captured the lease (docs/architecture.md, "Liveness"): the lease
   * lives as long as that life's clients row does. The Go kinsumer's full-row writes drop it.
   */
  ownerIncarnation: 'OwnerIncarnation',
} as const;

const A = CHECKPOINT_ATTRIBUTES;
/** The Go kinsumer's operator-written "start at LATEST" sequence value. */
const LATEST = 'LATEST';

// ---------------------------------------------------------------- decoding

/**
 * Decodes a checkpoints row as the Go kinsumer or kinsumer wrote it: NULL-typed or absent
 * empties, nanosecond timestamps beyond 2^53, the magic `LATEST`.
 * @throws CorruptCheckpointError naming the shard and the attribute.
 */
export function decodeCheckpointRow(item: Item, expectedShardId?: string): CheckpointRow {
  const shardId = corruptAs(expectedShardId ?? '(unknown)', () => readString(item, A.shard)) ?? expectedShardId;
  if (shardId === undefined) throw new CorruptCheckpointError('(unknown)', A.shard, 'is missing');
  return corruptAs(shardId, () => {
    const counter = readInteger(item, A.leaseCounter) ?? 0n;
    if (counter > BigInt(Number.MAX_SAFE_INTEGER)) throw new CorruptCheckpointError(shardId, A.leaseCounter, 'is out of range');
    const checkpoint = decodeCheckpoint(item, shardId);
    // Never corrupt: ranges that cannot be trusted are ignored, which only costs duplicates.
    const acked = decodeAckedRanges(item[A.ackedRanges]?.S, checkpoint);
    const checkpointUpdateNs = informational(() => readInteger(item, A.checkpointUpdate));
    const transactionToken = informational(() => readString(item, A.transactionToken));
    // Never corrupt either: counts that cannot be trusted are left out, which only counts fewer deliveries.
    const deliveries = decodeDeliveries(item[A.deliveries]?.S, checkpoint);
    // Not informational: a lease whose life cannot be read could be taken from a live owner.
    const ownerIncarnation = readInteger(item, A.ownerIncarnation);
    if (ownerIncarnation !== undefined && (ownerIncarnation < 1n || ownerIncarnation > BigInt(Number.MAX_SAFE_INTEGER))) {
      throw new CorruptCheckpointError(shardId, A.ownerIncarnation, 'is out of range');
    }
    return {
      shardId,
      checkpoint,
      ownerId: readString(item, A.ownerId),
      ownerName: readString(item, A.ownerName),
      lastUpdateNs: readInteger(item, A.lastUpdate),
      finished: readInteger(item, A.finished) !== undefined,
      leaseCounter: Number(counter),
      lastOwnerId: readString(item, A.lastOwnerId),
      ...(checkpointUpdateNs === undefined ? {} : { checkpointUpdateNs }),
      ...(acked === undefined ? {} : { acked }),
      ...(transactionToken === undefined ? {} : { transactionToken }),
      ...(deliveries === undefined ? {} : { deliveries }),
      ...(ownerIncarnation === undefined ? {} : { ownerIncarnation: Number(ownerIncarnation) }),
    };
  });
}

/** An attribute for humans only: unreadable, it is left out rather than making the whole row corrupt. */
function informational<T>(decode: () => T): T | undefined {
  try {
    return decode();
  } catch {
    return undefined;
  }
}

/** Runs `decode`, an attribute it cannot read becoming the `CorruptCheckpointError` of `shardId`. */
function corruptAs<T>(shardId: string, decode: () => T): T {
  try {
    return decode();
  } catch (error) {
    if (error instanceof AttributeFormatError) throw new CorruptCheckpointError(shardId, error.attribute, error.problem);
    throw error;
  }
}

function decodeCheckpoint(item: Item, shardId: string): StoredCheckpoint | undefined {
  const sequenceNumber = readString(item, A.sequenceNumber);
  const sub = readInteger(item, A.subSequenceNumber);
  if (sequenceNumber === undefined) return decodeStart(item, shardId);
  if (sequenceNumber === LATEST) return withTimeFloor(withFloor({ type: 'LATEST' }, item), item);
  if (!isSequenceNumber(sequenceNumber)) {
    throw new CorruptCheckpointError(shardId, A.sequenceNumber, `is not a sequence number: ${JSON.stringify(String(sequenceNumber).slice(0, 40))}`);
  }
  if (sub === undefined) return { type: 'position', position: { sequenceNumber } };
  if (sub < 0n || sub > BigInt(Number.MAX_SAFE_INTEGER)) throw new CorruptCheckpointError(shardId, A.subSequenceNumber, 'is out of range');
  return { type: 'position', position: { sequenceNumber, subSequenceNumber: Number(sub) } };
}

function decodeStart(item: Item, shardId: string): StoredCheckpoint | undefined {
  const start = readString(item, A.startPosition);
  if (start === undefined) return undefined;
  if (start === 'TRIM_HORIZON') return { type: 'TRIM_HORIZON' };
  if (start !== 'AT_TIMESTAMP') throw new CorruptCheckpointError(shardId, A.startPosition, `is not TRIM_HORIZON or AT_TIMESTAMP: ${JSON.stringify(start.slice(0, 40))}`);
  const timestamp = epochDate(readInteger(item, A.startTimestamp));
  if (timestamp === undefined) throw new CorruptCheckpointError(shardId, A.startTimestamp, 'is missing or out of range');
  return withFloor({ type: 'AT_TIMESTAMP', timestamp }, item);
}

/** Adds the stored floor to a start; one that cannot be read is left out (that costs duplicates, never a skipped record). */
function withFloor<T extends StoredCheckpoint & { readonly type: 'LATEST' | 'AT_TIMESTAMP' }>(start: T, item: Item): T {
  const after = informational(() => {
    const sequenceNumber = readString(item, A.startAfter);
    const sub = readInteger(item, A.startAfterSub);
    if (sequenceNumber === undefined || !isSequenceNumber(sequenceNumber)) return undefined;
    if (sub === undefined) return { sequenceNumber };
    return sub >= 0n && sub <= BigInt(Number.MAX_SAFE_INTEGER) ? { sequenceNumber, subSequenceNumber: Number(sub) } : undefined;
  });
  return after === undefined ? start : { ...start, after };
}

/**
 * Adds a LATEST row's stored time floor (`StartTimestamp`) and a reset's moment (`ResetTimestamp`);
 * one that cannot be read is left out (a floor: duplicates; a moment: the tip at capture, as before).
 */
function withTimeFloor(start: StoredCheckpoint & { readonly type: 'LATEST' }, item: Item): StoredCheckpoint {
  const notBefore = epochDate(informational(() => readInteger(item, A.startTimestamp)));
  const resetAt = epochDate(informational(() => readInteger(item, A.resetTimestamp)));
  return { ...start, ...(notBefore === undefined ? {} : { notBefore }), ...(resetAt === undefined ? {} : { resetAt }) };
}

/** Epoch milliseconds as a Date, `undefined` when missing or outside what a Date holds (±8.64e15 ms; before 1970 is not a time kinsumer writes). */
function epochDate(ms: bigint | undefined): Date | undefined {
  return ms === undefined || ms < 0n || ms > 8_640_000_000_000_000n ? undefined : new Date(Number(ms));
}

/** The checkpoint a row holds, or `undefined` when it holds none or cannot be read (for a reset's floor). */
export function readableCheckpoint(item: Item, shardId: string): StoredCheckpoint | undefined {
  return informational(() => decodeCheckpoint(item, shardId));
}

/** The row's lease counter, or 0 when it is missing or unreadable. */
export function readableCounter(item: Item): number {
  const text = item[A.leaseCounter]?.N;
  return text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : 0;
}

/** Attributes a forced reset does not overwrite itself and that do not decode. */
export function wronglyTyped(item: Item): string[] {
  const decoders: readonly (readonly [string, (item: Item, attribute: string) => unknown])[] = [
    [A.finished, readInteger], [A.lastOwnerId, readString],
  ];
  return decoders.filter(([attribute, decode]) => {
    try {
      decode(item, attribute);
      return false;
    } catch {
      return true;
    }
  }).map(([attribute]) => attribute);
}

// ---------------------------------------------------------------- encoding

export function setCheckpoint(update: UpdateExpression, checkpoint: StoredCheckpoint | undefined): void {
  if (checkpoint === undefined) return;
  setFloor(update, checkpoint.type === 'LATEST' || checkpoint.type === 'AT_TIMESTAMP' ? checkpoint.after : undefined);
  if (checkpoint.type === 'LATEST' && checkpoint.resetAt !== undefined) update.set(A.resetTimestamp, { N: String(checkpoint.resetAt.getTime()) });
  else update.remove(A.resetTimestamp);
  if (checkpoint.type === 'TRIM_HORIZON' || checkpoint.type === 'AT_TIMESTAMP') {
    setStart(update, checkpoint);
    return;
  }
  update.remove(A.startPosition);
  if (checkpoint.type === 'LATEST') {
    update.set(A.sequenceNumber, { S: LATEST });
    update.remove(A.subSequenceNumber);
    // A LATEST row's StartTimestamp is its time floor (StartPosition, absent, says it is no start).
    if (checkpoint.notBefore === undefined) update.remove(A.startTimestamp);
    else update.set(A.startTimestamp, { N: String(checkpoint.notBefore.getTime()) });
    return;
  }
  update.remove(A.startTimestamp);
  update.set(A.sequenceNumber, { S: checkpoint.position.sequenceNumber });
  const sub = checkpoint.position.subSequenceNumber;
  if (sub === undefined) update.remove(A.subSequenceNumber);
  else update.set(A.subSequenceNumber, { N: String(sub) });
}

function setFloor(update: UpdateExpression, after: Position | undefined): void {
  if (after === undefined) {
    update.remove(A.startAfter);
    update.remove(A.startAfterSub);
    return;
  }
  update.set(A.startAfter, { S: after.sequenceNumber });
  if (after.subSequenceNumber === undefined) update.remove(A.startAfterSub);
  else update.set(A.startAfterSub, { N: String(after.subSequenceNumber) });
}

// The ranges replace the stored ones, tagged with the checkpoint this write leaves (see acked-ranges.ts).
export function setAckedRanges(update: UpdateExpression, write: CheckpointWrite): void {
  // Already capped by the checkpoint state; ranges it must keep may go beyond the cap (see capAckedRanges), never beyond the hard one.
  const text = encodeWrittenRanges(write.checkpoint, write.acked ?? []);
  if (text === undefined) update.remove(A.ackedRanges);
  else update.set(A.ackedRanges, { S: text });
}

// The deliveries replace the stored ones, tagged with the checkpoint this write leaves (see deliveries.ts).
export function setDeliveries(update: UpdateExpression, write: CheckpointWrite): void {
  const text = encodeDeliveries(write.checkpoint, write.deliveries ?? []);
  if (text === undefined) update.remove(A.deliveries);
  else update.set(A.deliveries, { S: text });
}

// A start instead of a position: SequenceNumber NULL, as the Go kinsumer writes "nothing read".
function setStart(update: UpdateExpression, start: { readonly type: 'TRIM_HORIZON' } | { readonly type: 'AT_TIMESTAMP'; readonly timestamp: Date }): void {
  update.set(A.sequenceNumber, { NULL: true });
  update.remove(A.subSequenceNumber);
  update.set(A.startPosition, { S: start.type });
  if (start.type === 'AT_TIMESTAMP') update.set(A.startTimestamp, { N: String(start.timestamp.getTime()) });
}
