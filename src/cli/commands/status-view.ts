// `kinsumer status` as text. The default view fits 80 columns: no client ids in the shard table
// (the member table has them, shortened), finished shards as SHARD_END, what needs a sentence
// (expired owners, a lag the server cannot tell, reshards, corrupt rows) in notes under the
// table. `--wide` is one row per shard with everything, as wide as it takes. Pure.
import { shortId } from '../../group/client-label.js';
import type { CheckpointRow } from '../../ports/lease-store.js';
import { ageText, checkpointText, counted, renderTable } from '../format.js';
import { wrapText } from '../wrap.js';
import type { MemberStatus, ShardStatus } from './status.js';

/** Width of the default view. */
export const STATUS_WIDTH = 80;

/** What the server says of how far a shard's checkpoint is behind the newest record. */
export type Behind =
  | { readonly kind: 'ms'; readonly ms: number }
  /** It said 0 though a record follows the checkpoint: it cannot tell (kinesalite always says 0). */
  | { readonly kind: 'unknown' }
  /** Nothing to read it at (no stored position), or the read failed. */
  | { readonly kind: 'none' | 'error' };

export function behindOf(lag: ShardStatus['lag']): Behind {
  if (lag === undefined) return { kind: 'none' };
  if ('error' in lag) return { kind: 'error' };
  if (lag.millisBehindLatest === undefined) return { kind: 'none' };
  if (lag.millisBehindLatest === 0 && lag.recordAfter === true) return { kind: 'unknown' };
  return { kind: 'ms', ms: lag.millisBehindLatest };
}

function behindText(lag: ShardStatus['lag']): string {
  const behind = behindOf(lag);
  switch (behind.kind) {
    case 'ms': return ageText(behind.ms);
    case 'unknown': return 'n/a';
    case 'error': return '?';
    case 'none': return '-';
  }
}

function arrivedText(lag: ShardStatus['lag'], nowMs: number | undefined): string {
  if (lag === undefined) return '-';
  if ('error' in lag) return '?';
  return lag.arrivedAt === undefined || nowMs === undefined ? '-' : `${ageText(nowMs - lag.arrivedAt.getTime())} ago`;
}

function agoText(ageMs: number | undefined): string {
  return ageMs === undefined ? '-' : `${ageText(ageMs)} ago`;
}

/** `name (id)`, or the id alone when the name adds nothing. */
function who(id: string, name: string | undefined): string {
  return name === undefined || name === id ? id : `${name} (${id})`;
}

/** The wide table of the shards: every column, owners with their client ids. */
export function statusTable(statuses: readonly ShardStatus[], nowMs?: number): string {
  const rows = statuses.map(({ shard, row, ownerLive, corrupt, advancedAgeMs, lag }) => [
    shard.shardId,
    shard.parentShardIds.length === 0 ? '-' : shard.parentShardIds.join(','),
    row?.ownerId === undefined ? '-' : `${who(row.ownerId, row.ownerName)}${ownerLive ? '' : ' [expired]'}`,
    corrupt === undefined ? checkpointText(row?.checkpoint, { short: true }) : `CORRUPT (${corrupt})`,
    behindText(lag),
    arrivedText(lag, nowMs),
    agoText(advancedAgeMs),
    row?.finished === true ? 'yes' : shard.open ? 'no' : 'no (closed)',
  ]);
  return renderTable(['SHARD', 'PARENTS', 'OWNER', 'CHECKPOINT', 'BEHIND', 'ARRIVED', 'ADVANCED', 'FINISHED'], rows);
}

/** The wide table of the members: client ids in full. */
export function membersTable(members: readonly MemberStatus[]): string {
  return renderTable(MEMBER_HEADERS, members.map((m) => memberRow(m, m.id)));
}

const MEMBER_HEADERS = ['MEMBER', 'ID', 'HEARTBEAT', 'SHARDS', 'LEADER', 'LIBRARY'] as const;

function memberRow(m: MemberStatus, id: string): string[] {
  return [m.name ?? '-', id, `${agoText(m.ageMs)}${m.live ? '' : ' [expired]'}${m.draining === true ? ' [draining]' : ''}`, String(m.shards), m.leader ? 'yes' : '-', m.library ?? 'go kinsumer'];
}

/**
 * A table no wider than `width` where it can be: the `flex` column's cells are cut (with `…`,
 * keeping a trailing `*` marker) until the rows fit, down to `min` characters.
 */
export function fittedTable(headers: readonly string[], rows: readonly (readonly string[])[], width: number, flex: number, min = 6): string {
  const widest = (i: number) => Math.max(headers[i]?.length ?? 0, ...rows.map((row) => row[i]?.length ?? 0));
  const total = headers.reduce((sum, _, i) => sum + widest(i), 0) + 2 * (headers.length - 1);
  const room = Math.max(min, widest(flex) - Math.max(0, total - width), headers[flex]?.length ?? 0);
  const cut = (cell: string) => {
    if (cell.length <= room) return cell;
    const marker = cell.endsWith('*') ? '*' : '';
    return `${cell.slice(0, room - 1 - marker.length)}…${marker}`;
  };
  return renderTable(headers, rows.map((row) => row.map((cell, i) => (i === flex ? cut(cell) : cell))));
}

/** The members in 80 columns: ids shortened, `(none)` under the header when there is nobody. */
export function membersView(members: readonly MemberStatus[], width = STATUS_WIDTH): string {
  if (members.length === 0) return `${MEMBER_HEADERS.join('  ')}\n(none)\n`;
  return fittedTable(MEMBER_HEADERS, members.map((m) => memberRow(m, shortId(m.id))), width, 0);
}

function narrowCheckpoint(row: CheckpointRow | undefined, corrupt: string | undefined): string {
  if (corrupt !== undefined) return 'CORRUPT';
  // The KCL's word for a shard read to its end; the position it ended at is in --wide and --json.
  if (row?.finished === true) return 'SHARD_END';
  if (row?.checkpoint?.type === 'AT_TIMESTAMP') return 'AT_TIMESTAMP';
  return checkpointText(row?.checkpoint, { short: true });
}

/** The shards in 80 columns, then the notes that explain what the cells only mark. */
export function shardsView(statuses: readonly ShardStatus[], nowMs: number, leaseTtlMs: number, width = STATUS_WIDTH): string {
  const rows = statuses.map(({ shard, row, ownerLive, corrupt, advancedAgeMs, lag }) => [
    shard.shardId,
    row?.ownerId === undefined ? '-' : `${row.ownerName ?? row.ownerId}${ownerLive ? '' : '*'}`,
    narrowCheckpoint(row, corrupt),
    behindText(lag),
    arrivedText(lag, nowMs),
    agoText(advancedAgeMs),
  ]);
  const table = fittedTable(['SHARD', 'OWNER', 'CHECKPOINT', 'BEHIND', 'ARRIVED', 'ADVANCED'], rows, width, 1);
  const notes = shardNotes(statuses, leaseTtlMs).flatMap((note) => wrapText(note, width, '  '));
  return `${table}${notes.map((line) => `${line}\n`).join('')}`;
}

function shardNotes(statuses: readonly ShardStatus[], leaseTtlMs: number): string[] {
  const notes: string[] = [];
  if (statuses.some((s) => s.row?.ownerId !== undefined && !s.ownerLive)) {
    notes.push(`* expired: not renewed for --lease-ttl-ms (${leaseTtlMs} ms); a live member takes the shard over`);
  }
  if (statuses.some((s) => behindOf(s.lag).kind === 'unknown')) {
    notes.push('n/a: the server says 0 behind though records follow the checkpoint (kinesalite always says 0); ARRIVED is how old the checkpointed record is');
  }
  if (statuses.some((s) => behindOf(s.lag).kind === 'error')) notes.push('?: the lag could not be read (status --json says why)');
  for (const { shard, row, corrupt } of statuses) {
    if (corrupt !== undefined) notes.push(`${shard.shardId}: corrupt row: ${corrupt}`);
    else if (row?.checkpoint?.type === 'AT_TIMESTAMP' && row.finished !== true) notes.push(`${shard.shardId}: starts ${checkpointText(row.checkpoint)}`);
  }
  for (const { shard, row } of statuses.filter((s) => !s.shard.open)) {
    const children = statuses.filter((s) => s.shard.parentShardIds.includes(shard.shardId)).map((s) => s.shard.shardId);
    const state = row?.finished === true ? 'finished' : 'being read to its end';
    notes.push(`${shard.shardId}: closed by a reshard, ${state}; ${children.length === 0 ? 'no child listed' : `${counted(children.length, 'child', 'children')} ${children.join(', ')}`}`);
  }
  return notes;
}

/**
 * The first line: the stream and its shards; then the members and the leader (marked when its lock
 * expired). Two parts, so that the default view breaks it between them.
 */
export function statusHeader(view: {
  readonly stream: string; readonly app: string; readonly shards: readonly ShardStatus[]; readonly members: readonly MemberStatus[];
  readonly leader: { readonly text: string; readonly live: boolean } | undefined; readonly assignment: 'sticky' | 'go';
  /** `stream` names several streams (`--streams`). */
  readonly many?: boolean;
}): readonly [string, string] {
  const open = view.shards.filter((s) => s.shard.open).length;
  const held = view.shards.filter((s) => s.ownerLive).length;
  const live = view.members.filter((m) => m.live).length;
  const leader = view.leader === undefined ? 'no leader' : `leader ${view.leader.text}${view.leader.live ? '' : ' [expired]'}`;
  const assignment = view.assignment === 'go' ? 'Go kinsumer assignment (a Go client is live)' : 'sticky assignment';
  return [
    `${view.many === true ? 'streams' : 'stream'} ${view.stream}, app ${view.app}: ${counted(view.shards.length, 'shard')} (${open} open), ${held} leased by live clients;`,
    `${counted(live, 'live member')}, ${leader}, ${assignment}`,
  ];
}

/** The `--watch` line: when this was read (this machine's clock), how often, and how to stop. */
export function watchLine(nowMs: number, intervalMs: number): string {
  return `read at ${new Date(nowMs).toTimeString().slice(0, 8)}, every ${intervalMs / 1000} s, Ctrl-C to stop`;
}
