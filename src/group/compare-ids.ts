/**
 * Total order on client and shard ids: UTF-16 code units, never the locale (`localeCompare` could
 * order differently on two hosts, and the clients would disagree). For ASCII ids, as Go sorts.
 */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
