// "did you mean throttleDelayMs?" for a misspelt option name, by TypeScript's own rule (its
// getSpellingSuggestion): the nearest known name by edit distance, case differences counting
// almost nothing, and nothing suggested when even the nearest is too far to be a typo.

/**
 * The known name nearest to `name`, or `undefined` when none is within `0.4 × name.length` edits
 * (a transposition counts as one; a difference of case only, as a tenth of one).
 */
export function nearestName(name: string, known: Iterable<string>): string | undefined {
  const lower = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = Math.floor(name.length * 0.4) + 1;
  for (const candidate of known) {
    if (candidate === name || Math.abs(candidate.length - name.length) >= bestDistance) continue;
    const distance = candidate.toLowerCase() === lower ? 0.1 : editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** ` (did you mean <nearest>?)` for an unknown `name`, or `''` when no known name is near. */
export function didYouMean(name: string, known: Iterable<string>): string {
  const nearest = nearestName(name, known);
  return nearest === undefined ? '' : ` (did you mean ${nearest}?)`;
}

// Optimal string alignment distance: insertions, deletions, substitutions, adjacent transpositions.
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, (before[j - 2] ?? 0) + 1);
      current.push(value);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length] ?? 0;
}
