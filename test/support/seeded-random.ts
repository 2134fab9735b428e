// Seeded randomness for the test tools (fault proxy, chaos run): the same seed gives the same
// sequence, so a failing run can be replayed.

/** A source of numbers in [0, 1). */
export type Random = () => number;

/** mulberry32: small, fast, good enough to spread faults and chaos actions; not for anything secret. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
