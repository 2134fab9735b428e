// A row of `<app>_clients`, in the Go kinsumer's format (ID, Name, LastUpdate in Unix ns +
// LastUpdateRFC) plus what only this library writes: `Shards` (what the member holds, so every
// member learns the owners from this small table), `Wants` (what it waits to capture), `InstanceID`
// (the writing process), `Library` (the marker that tells this library's rows from a Go
// kinsumer's), `Incarnation` and `Uptime` (its life and its monotonic age at the heartbeat: the
// member's leases live by this row, docs/architecture.md "Liveness"), `Draining`, and what others
// write into it: `Ended` (a member that found the life expired), `Revoked` (a reset's shards) and
// `DrainRequested` (`kinsumer drain`). The Go kinsumer reads ID and LastUpdate and ignores the rest.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { compareIds } from '../group/compare-ids.js';
import { LIBRARY_ATTRIBUTE, libraryMarker } from '../group/library-marker.js';
import type { SeenRow } from '../group/member-observations.js';
import type { RowLife } from '../group/member-lives.js';
import { readIdList, readInteger, readString, stringOrNull, timestampAttributes } from './codec.js';
import type { Item } from './dynamo.js';

/** Attribute names of `<app>_clients`. */
export const CLIENT_ATTRIBUTES = {
  id: 'ID',
  name: 'Name',
  lastUpdate: 'LastUpdate',
  shards: 'Shards',
  wants: 'Wants',
  instanceId: 'InstanceID',
  library: LIBRARY_ATTRIBUTE,
  incarnation: 'Incarnation',
  uptime: 'Uptime',
  draining: 'Draining',
  ended: 'Ended',
  revoked: 'Revoked',
  drainRequested: 'DrainRequested',
} as const;

const A = CLIENT_ATTRIBUTES;

/** A clients row decoded: what the judgement of members reads, and what the lives rules read. */
export interface ClientRow extends SeenRow, RowLife {
  readonly drainRequested: boolean;
}

/**
 * A clients row as kinsumer or the Go kinsumer wrote it; `undefined` when it has no ID or no
 * LastUpdate. Unknown attributes are ignored.
 * @throws AttributeFormatError for an attribute of the wrong type or form.
 */
export function decodeClientRow(item: Item): ClientRow | undefined {
  const id = readString(item, A.id);
  const lastUpdateNs = readInteger(item, A.lastUpdate);
  if (id === undefined || lastUpdateNs === undefined) return undefined;
  const incarnation = readInteger(item, A.incarnation);
  const uptime = readInteger(item, A.uptime);
  const ended = readInteger(item, A.ended);
  return {
    id,
    name: readString(item, A.name),
    lastUpdateNs,
    shardIds: readIdList(item, A.shards),
    instanceId: readString(item, A.instanceId),
    library: readString(item, A.library),
    ...(incarnation === undefined ? {} : { incarnation: Number(incarnation) }),
    uptimeMs: uptime === undefined ? undefined : Number(uptime),
    ended: ended === undefined ? undefined : Number(ended),
    revoked: readIdList(item, A.revoked),
    ...(item[A.draining]?.BOOL === true ? { draining: true } : {}),
    ...(item[A.wants] === undefined ? {} : { wants: readIdList(item, A.wants) ?? [] }),
    drainRequested: item[A.drainRequested]?.BOOL === true,
  };
}

/** What this process writes with every heartbeat. */
export interface BeatFields {
  readonly clientName: string;
  readonly instanceId: string;
  readonly incarnation: number;
  readonly nowMs: number;
  readonly uptimeMs: number;
  readonly held: readonly string[];
  readonly wants: readonly string[];
  readonly draining: boolean;
}

/** The attributes a heartbeat sets (an UpdateItem's SET, or a new row's item without its key). */
export function beatAttributes(beat: BeatFields): Record<string, AttributeValue> {
  return {
    [A.name]: stringOrNull(beat.clientName),
    ...timestampAttributes(A.lastUpdate, beat.nowMs),
    [A.shards]: idList(beat.held),
    [A.wants]: idList(beat.wants),
    [A.instanceId]: { S: beat.instanceId },
    [A.library]: { S: libraryMarker() },
    [A.incarnation]: { N: String(beat.incarnation) },
    [A.uptime]: { N: String(Math.max(0, Math.round(beat.uptimeMs))) },
    [A.draining]: { BOOL: beat.draining },
  };
}

function idList(ids: readonly string[]): AttributeValue {
  return { L: [...new Set(ids)].sort(compareIds).map((S) => ({ S })) };
}
