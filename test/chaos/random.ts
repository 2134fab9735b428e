// Seeded choices for the chaos run (built on the shared seeded PRNG): the same seed gives the same
// schedule and the same shard picks, so a failed run can be replayed.

import type { Random } from '../support/seeded-random.js';

export { type Random, seededRandom } from '../support/seeded-random.js';

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
