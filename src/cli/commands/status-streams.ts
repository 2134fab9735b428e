// `kinsumer status --streams`: a group over several streams, one section per listed stream (its
// identity, then its shards by their own ids, as the one-stream view shows them). Pure.
import { parseShardKey, names } from '../../ports/stream-key.js';
import type { ShardInfo } from '../../ports/stream.js';
import { counted } from '../format.js';
import { wrapText } from '../wrap.js';
import { STATUS_WIDTH, shardsView, statusTable } from './status-view.js';
import type { ShardStatus, ShardStatusJson } from './status.js';

/** The name of the stream a shard's key names (`''` for a plain shard id). */
export function streamOfKey(shardId: string): string {
  return parseShardKey(shardId)?.stream.streamName ?? '';
}

/** A shard status as its stream's own: the shard and its parents by their own ids. */
function unkeyed(status: ShardStatus): ShardStatus {
  const plain = (id: string) => parseShardKey(id)?.shardId ?? id;
  const shard: ShardInfo = { ...status.shard, shardId: plain(status.shard.shardId), parentShardIds: status.shard.parentShardIds.map(plain) };
  return { ...status, shard };
}

/** A shard of `status --streams --json`: its key as `shardId`, and its stream's name. */
export function streamShardJson(json: ShardStatusJson): ShardStatusJson {
  return { ...json, streamName: streamOfKey(json.shardId) };
}

/** One section per listed stream, in the list's order: its identity and shards, or that it was not found. */
export function streamSections(streams: readonly string[], shards: readonly ShardStatus[], view: { readonly wide: boolean; readonly leaseTtlMs: number }, nowMs: number): string[] {
  const sections: string[] = [];
  const shown = new Set<string>();
  for (const entry of streams) {
    const mine = shards.filter((s) => {
      const key = parseShardKey(s.shard.shardId);
      return key !== undefined && !shown.has(key.stream.serialized) && names(entry, key.stream);
    });
    const identity = parseShardKey(mine[0]?.shard.shardId ?? '')?.stream;
    if (identity === undefined) {
      const line = `stream ${entry}: not found (or it has no shard): nothing of it is read`;
      sections.push(`${view.wide ? line : wrapText(line, STATUS_WIDTH, '  ').join('\n')}\n`);
      continue;
    }
    shown.add(identity.serialized);
    const open = mine.filter((s) => s.shard.open).length;
    const held = mine.filter((s) => s.ownerLive).length;
    const created = new Date(Number(identity.creationEpoch) * 1000).toISOString();
    const title = `stream ${entry} (account ${identity.accountId}, created ${created}): ${counted(mine.length, 'shard')} (${open} open), ${held} leased by live clients`;
    const own = mine.map(unkeyed);
    const heading = view.wide ? title : wrapText(title, STATUS_WIDTH, '  ').join('\n');
    sections.push(`${heading}\n${view.wide ? statusTable(own, nowMs) : shardsView(own, nowMs, view.leaseTtlMs)}`);
  }
  return sections;
}
