// How the row attributes only this library writes (`AckedRanges`, `Deliveries`) spell positions:
// every number in base 36, a sequence number as its distance from the one before it, a KPL
// sub-sequence number after a dot, and the checkpoint they were written with as their base.
import type { StoredCheckpoint } from '../ports/lease-store.js';
import type { Position } from '../ports/position.js';
import { isSequenceNumber } from './sequence-number.js';

/** The checkpoint as the attributes name it: '' none, 'L' LATEST, 'T' TRIM_HORIZON, '@<ms>' AT_TIMESTAMP, or a position. */
export function encodeBase(checkpoint: StoredCheckpoint | undefined): string {
  if (checkpoint === undefined) return '';
  switch (checkpoint.type) {
    case 'LATEST': return 'L';
    case 'TRIM_HORIZON': return 'T';
    case 'AT_TIMESTAMP': return `@${checkpoint.timestamp.getTime().toString(36)}`;
    case 'position': {
      const { sequenceNumber, subSequenceNumber } = checkpoint.position;
      // A checkpoint that is not a number (a corrupt row decodes to none of these) never matches.
      return isSequenceNumber(sequenceNumber) ? encodePosition(BigInt(sequenceNumber), subSequenceNumber) : '?';
    }
  }
}

/** The sequence number a list of positions starts counting from: the base's, or 0. */
export function baseSequence(checkpoint: StoredCheckpoint | undefined): bigint {
  return checkpoint?.type === 'position' ? BigInt(checkpoint.position.sequenceNumber) : 0n;
}

export function encodePosition(sequence: bigint, sub: number | undefined): string {
  return sub === undefined ? sequence.toString(36) : `${sequence.toString(36)}.${sub.toString(36)}`;
}

/** A decoded position, `undefined` when it is not one (a sequence number out of range, a sub-sequence number beyond 2^53). */
export function position(sequence: bigint, sub: string | undefined): Position | undefined {
  const sequenceNumber = sequence.toString();
  if (!isSequenceNumber(sequenceNumber)) return undefined;
  if (sub === undefined) return { sequenceNumber };
  const subSequenceNumber = Number.parseInt(sub, 36);
  return Number.isSafeInteger(subSequenceNumber) ? { sequenceNumber, subSequenceNumber } : undefined;
}

/** BigInt reads only bases 2, 8, 10 and 16: base 36 ten digits at a time (36^10 < 2^53). */
export function fromBase36(text: string): bigint {
  let value = 0n;
  for (let i = 0; i < text.length; i += 10) {
    const chunk = text.slice(i, i + 10);
    value = value * 36n ** BigInt(chunk.length) + BigInt(Number.parseInt(chunk, 36));
  }
  return value;
}
