// The `Deliveries` attribute of a checkpoints row (design §9.3, the delivery count): how many
// sessions that ended without a graceful release delivered the records after the checkpoint, as
// a step function — `sessions` of them delivered every record through `through`. Pure: entries
// and the checkpoint in, text out, and back.
//
//   1;<base>;<entry>,<entry>,...      entry = <pos>[*<sessions>]      pos = <delta>[.<sub>]
//
// As in `AckedRanges` (acked-ranges.ts): `1` is the format's version, <base> the checkpoint the
// entries were written with (a reader trusts them only while the row's checkpoint is still that
// one: a writer that moves it without knowing the attribute turns them into fewer deliveries
// counted, never more), each sequence number the distance from the one before it, in base 36.
import type { CheckpointRow, DeliveredThrough, HeldLease, StoredCheckpoint } from '../ports/lease-store.js';
import { baseSequence, encodeBase, encodePosition, fromBase36, position } from './position-text.js';
import { comparePositions } from './sequence-number.js';

/**
 * Most entries written. An entry is a session that died (or froze, or lost its lease) with records
 * after the checkpoint delivered: beyond this, the furthest ones are folded into the one before
 * (their records count fewer deliveries, never more). A poison record costs one entry per process
 * it kills, at one position: a handful.
 */
export const MAX_DELIVERY_ENTRIES = 16;

const VERSION = '1';
const ENTRY = /^([0-9a-z]{1,84})(?:\.([0-9a-z]{1,11}))?(?:\*([0-9a-z]{1,8}))?$/;

/**
 * The entries in order, one per position (equal ones add up), none at or before the checkpoint,
 * at most {@link MAX_DELIVERY_ENTRIES} (the furthest folded into the one before).
 */
export function normalizeDeliveries(checkpoint: StoredCheckpoint | undefined, entries: readonly DeliveredThrough[]): DeliveredThrough[] {
  const base = checkpoint?.type === 'position' ? checkpoint.position : undefined;
  const sorted = entries.filter((e) => e.sessions > 0 && (base === undefined || comparePositions(e.through, base) > 0))
    .sort((a, b) => comparePositions(a.through, b.through));
  const merged: DeliveredThrough[] = [];
  for (const entry of sorted) {
    const last = merged.at(-1);
    if (last !== undefined && comparePositions(last.through, entry.through) === 0) merged[merged.length - 1] = { through: last.through, sessions: last.sessions + entry.sessions };
    else merged.push(entry);
  }
  while (merged.length > MAX_DELIVERY_ENTRIES) {
    const furthest = merged.pop() as DeliveredThrough;
    const before = merged.at(-1) as DeliveredThrough;
    merged[merged.length - 1] = { through: before.through, sessions: before.sessions + furthest.sessions };
  }
  return merged;
}

/** The attribute for `entries` (normalized first); `undefined` when there are none. */
export function encodeDeliveries(checkpoint: StoredCheckpoint | undefined, entries: readonly DeliveredThrough[]): string | undefined {
  const normal = normalizeDeliveries(checkpoint, entries);
  if (normal.length === 0) return undefined;
  let previous = baseSequence(checkpoint);
  const parts = normal.map(({ through, sessions }) => {
    const sequence = BigInt(through.sequenceNumber);
    const part = encodePosition(sequence - previous, through.subSequenceNumber) + (sessions === 1 ? '' : `*${sessions.toString(36)}`);
    previous = sequence;
    return part;
  });
  return `${VERSION};${encodeBase(checkpoint)};${parts.join(',')}`;
}

/**
 * Decodes the attribute of a row whose checkpoint is `checkpoint`. `undefined` when it cannot be
 * trusted: not a string, malformed, out of order, at or before the checkpoint, another format
 * version, or written with another checkpoint. Never throws: a bad value only counts fewer
 * deliveries.
 */
export function decodeDeliveries(text: unknown, checkpoint: StoredCheckpoint | undefined): DeliveredThrough[] | undefined {
  if (typeof text !== 'string' || text.length > 4096) return undefined;
  const [version, writtenWith, list, ...rest] = text.split(';');
  if (version !== VERSION || list === undefined || rest.length > 0 || writtenWith !== encodeBase(checkpoint)) return undefined;
  const base = checkpoint?.type === 'position' ? checkpoint.position : undefined;
  let previous = baseSequence(checkpoint);
  const entries: DeliveredThrough[] = [];
  for (const part of list.split(',')) {
    const match = ENTRY.exec(part);
    if (match === null) return undefined;
    const [, delta, sub, count] = match;
    const sequence = previous + fromBase36(delta as string);
    const through = position(sequence, sub);
    const sessions = count === undefined ? 1 : Number.parseInt(count, 36);
    const last = entries.at(-1)?.through ?? base;
    if (through === undefined || sessions < 1 || (last !== undefined && comparePositions(through, last) <= 0)) return undefined;
    entries.push({ through, sessions });
    previous = sequence;
  }
  return entries;
}

/** The deliveries the captured row records (§9.3), carried by the held lease. */
export function withDeliveries(lease: HeldLease, row: CheckpointRow): HeldLease {
  return row.deliveries === undefined ? lease : { ...lease, deliveries: row.deliveries };
}
