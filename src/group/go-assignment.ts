// The Go kinsumer's assignment, for a group in which Go kinsumer clients still run. A Go client
// cannot learn another rule, so while one is live every member of the group computes exactly what
// it computes (kinsumer-go-behavior.md §6): the shard at position p of the shard cache's list goes
// to the client at index p mod n of the live clients sorted by id. Stateless, not sticky, not
// balanced by load; but every member reaches the same answer from the same two lists, so no shard
// is claimed by two members and none by nobody once their views agree.

/**
 * Go's string order (`sort.Strings`): bytewise on the UTF-8 encodings, which is the order of the
 * code points. It differs from JavaScript's `<` (UTF-16 code units) only for characters above
 * U+FFFF against characters from U+E000 up; ids with such characters still sort as Go sorts them.
 */
export function compareGoStrings(a: string, b: string): number {
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  for (;;) {
    const x = left.next();
    const y = right.next();
    if (x.done === true || y.done === true) return x.done === true ? (y.done === true ? 0 : -1) : 1;
    const difference = (x.value.codePointAt(0) ?? 0) - (y.value.codePointAt(0) ?? 0);
    if (difference !== 0) return difference < 0 ? -1 : 1;
  }
}

/** What the Go assignment depends on. */
export interface GoAssignmentInput {
  /** Ids of the live clients, Go's and this library's; order does not matter, repeats are ignored. */
  readonly clients: readonly string[];
  /**
   * The shard cache's `ShardIDs`, in the order the cache lists them: Go indexes the list as read
   * (its writer sorted it), unfinished shards, parents and children alike.
   */
  readonly shardIds: readonly string[];
}

/**
 * Shard id → client id, for every listed shard: position p goes to the client at index `p mod n`
 * of the clients in Go's order. A client whose index is at least the number of shards gets none.
 * Empty when there is no client.
 */
export function goAssignment(input: GoAssignmentInput): Map<string, string> {
  const clients = [...new Set(input.clients)].sort(compareGoStrings);
  const assignment = new Map<string, string>();
  if (clients.length === 0) return assignment;
  input.shardIds.forEach((shardId, position) => {
    const client = clients[position % clients.length];
    if (client !== undefined && !assignment.has(shardId)) assignment.set(shardId, client);
  });
  return assignment;
}
