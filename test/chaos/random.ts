// Seeded randomness for the chaos run: the same seed gives the same schedule and the same shard
// picks, so a failed run can be replayed.

/** A source of numbers in [0, 1). */
export type Random = () => number;

/** mulberry32: small, fast, good enough to spread chaos actions; not for anything secret. */
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

/** Uniform in [min, max). */
export function between(random: Random, min: number, max: number): number {
  return min + (max - min) * random();
}

/** The item at `pick` (a number in [0, 1)) along the list. */
export function pickAt<T>(items: readonly T[], pick: number): T | undefined {
  if (items.length === 0) return undefined;
  return items[Math.min(items.length - 1, Math.floor(pick * items.length))];
}

/** The items in a seeded order (Fisher–Yates). */
export function shuffled<T>(random: Random, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
