// Poison records of the chaos run and the simulator (design §9.3): which records kill the process
// that handles them, decided from the record alone (its data, its id) so that every process — and
// the checker — agrees.

/** The exit code of a worker that a poison record killed (its supervisor starts it again). */
export const POISON_EXIT = 3;

/** Whether the record with this data (or id) is poison: about `permille` in a thousand, the same in every process. */
export function isPoison(data: string, permille: number): boolean {
  let hash = 2166136261;
  for (let i = 0; i < data.length; i += 1) hash = Math.imul(hash ^ data.charCodeAt(i), 16777619) >>> 0;
  return hash % 1000 < permille;
}
