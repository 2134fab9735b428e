// Seeing, from outside the library, every user record it unpacks from a KPL aggregate: the
// aggregate's bytes are put as an instance of a Uint8Array subclass, and a typed array's
// `subarray` makes its views through the species constructor (ECMAScript's
// TypedArraySpeciesCreate) — so each view cut from those bytes, one per user record's payload,
// is made by this class, which reports it. A live view is a user record made and not yet garbage
// (delivered or waiting in a page). Nothing in src/ is hooked; the library sees a Uint8Array.

type ViewReport = (view: Uint8Array) => void;

// Who wants to hear of views of which bytes (the put aggregate's own ArrayBuffer).
const reports = new WeakMap<ArrayBufferLike, ViewReport>();

class WatchedBytes extends Uint8Array {
  // As `new Uint8Array(...)`: the species constructor is called with (buffer, byteOffset, length),
  // or with a length (`slice`).
  constructor(...args: [ArrayBuffer, number?, number?] | [number]) {
    super(...(args as [ArrayBuffer, number, number]));
    if (typeof args[0] === 'object') reports.get(args[0])?.(this);
  }
}

/** The same bytes (no copy), as an array whose views can be watched (see {@link watchViews}). */
export function watchableBytes(data: Uint8Array): Uint8Array {
  return new WatchedBytes(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
}

/** From now on, every view cut from `bytes` (made by {@link watchableBytes}) is reported. */
export function watchViews(bytes: Uint8Array, report: ViewReport): void {
  if (!(bytes instanceof WatchedBytes)) throw new Error('watchViews: bytes not made by watchableBytes');
  reports.set(bytes.buffer, report);
}
