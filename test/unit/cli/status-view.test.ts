// `kinsumer status` in 80 columns (newcomer trial 3: 130 columns wide, the OWNER column repeating
// the 36-character client id the MEMBER table already shows). Pure: snapshots built by hand.
import { expect } from 'chai';
import { renderStatus, type StatusView } from '../../../src/cli/commands/status.js';
import type { CheckpointLag, ClientRow, GroupSnapshot } from '../../../src/cli/commands/status-read.js';
import { behindOf, fittedTable, membersView, watchLine } from '../../../src/cli/commands/status-view.js';
import { shortId } from '../../../src/group/client-label.js';
import type { CheckpointRow } from '../../../src/ports/lease-store.js';
import type { ShardInfo } from '../../../src/ports/stream.js';

const nowMs = 1_800_000_000_000;
const ns = (ms: number) => BigInt(ms) * 1_000_000n;
const SEQ = (n: number) => `4968077407409677748995828565061897069245226116009951${String(n).padStart(4, '0')}`;
const ALPHA = 'c4b53502-ed77-4cfb-99ba-728b88b45872';
const BETA = 'd568ff6c-f0f9-4982-b0ec-b04211fb18a9';
const GAMMA = '43979049-0a3c-4c43-9d55-2a3e7f0e1b11';

function shard(n: number, parents: number[] = [], open = true): ShardInfo {
  const id = (i: number) => `shardId-${String(i).padStart(12, '0')}`;
  return { shardId: id(n), parentShardIds: parents.map(id), open, startingHashKey: '0', endingHashKey: '1' };
}

function row(n: number, over: Partial<CheckpointRow>): CheckpointRow {
  return {
    shardId: `shardId-${String(n).padStart(12, '0')}`, checkpoint: { type: 'position', position: { sequenceNumber: SEQ(n) } },
    ownerId: undefined, ownerName: undefined, lastUpdateNs: ns(nowMs - 500), finished: false, leaseCounter: 1, lastOwnerId: undefined,
    checkpointUpdateNs: ns(nowMs - 1500), ...over,
  };
}

function client(id: string, name: string, ageMs: number): ClientRow {
  return { id, name, lastUpdateNs: ns(nowMs - ageMs), instanceId: 'i', shardIds: [], library: 'kinsumer-ts/0.1.0' };
}

const lag = (millisBehindLatest: number, recordAfter?: boolean): CheckpointLag => ({ arrivedAt: new Date(nowMs - 2200), millisBehindLatest, recordAfter });

/** The trial's group, worse: a long host name, a crashed member, a split, a reset start, a corrupt row, a lag kinesalite cannot tell. */
function busyGroup(): GroupSnapshot {
  return {
    nowMs,
    shards: [shard(0, [], false), shard(1), shard(2), shard(3), shard(4, [0]), shard(5, [0]), shard(6)],
    rows: [
      row(0, { finished: true, lastOwnerId: ALPHA }),
      row(1, { ownerId: ALPHA, ownerName: 'w-alpha' }),
      row(2, { ownerId: BETA, ownerName: 'billing-consumer-7d9f8b6c4-x2x9z.eu-west-1.compute.internal' }),
      row(3, { ownerId: GAMMA, ownerName: 'w-gamma', lastUpdateNs: ns(nowMs - 24_300) }),
      row(4, { ownerId: ALPHA, ownerName: 'w-alpha' }),
      row(5, { ownerId: BETA, ownerName: 'billing-consumer-7d9f8b6c4-x2x9z.eu-west-1.compute.internal', checkpoint: { type: 'AT_TIMESTAMP', timestamp: new Date('2026-01-02T03:04:05.678Z') } }),
    ],
    corrupt: new Map([['shardId-000000000006', 'SequenceNumber is not a sequence number: not-a-number']]),
    clients: [client(ALPHA, 'w-alpha', 500), client(BETA, 'billing-consumer-7d9f8b6c4-x2x9z.eu-west-1.compute.internal', 400), client(GAMMA, 'w-gamma', 24_300)],
    corruptClients: [],
    leader: { id: GAMMA, name: 'w-gamma', lastUpdateNs: ns(nowMs - 24_300) },
    lags: new Map<string, CheckpointLag | { error: string }>([
      ['shardId-000000000000', lag(0, false)], ['shardId-000000000001', lag(0, true)], ['shardId-000000000002', lag(12_300)],
      ['shardId-000000000003', lag(0, false)], ['shardId-000000000004', { error: 'throttled' }],
    ]),
  };
}

const VIEW: StatusView = { stream: 'events', app: 'billing', leaseTtlMs: 15_000, json: false, pretty: true, wide: false };
const longest = (text: string) => Math.max(...text.split('\n').map((line) => line.length));

describe('kinsumer status in 80 columns (pure)', () => {
  it('fits 80 columns for a busy group: no line longer, no client id in full, a long host name cut with …', () => {
    const text = renderStatus(busyGroup(), VIEW);
    expect(longest(text), text).to.be.at.most(80);
    for (const id of [ALPHA, BETA, GAMMA]) expect(text).not.to.contain(id);
    expect(text).to.match(/^w-alpha\s+c4b53502…\s+0\.5s ago\s+2\s+-\s+kinsumer-ts\/0\.1\.0$/m);
    expect(text).to.match(/^shardId-000000000002\s+billing-consum\S*…\s+496807…510002\s+12\.3s\s+2\.2s ago\s+1\.5s ago$/m);
  });

  it('marks an expired owner with * and says once what it means; an expired leader is marked in the header', () => {
    const text = renderStatus(busyGroup(), VIEW);
    expect(text).to.match(/^shardId-000000000003\s+w-gamma\*\s/m);
    expect(text).to.contain('* expired: not renewed for --lease-ttl-ms (15000 ms)');
    expect(text).to.contain('leader w-gamma [expired]');
    expect(text).to.match(/^w-gamma\s+43979049…\s+24\.3s ago \[expired\]\s+0\s+yes/m);
    const live = renderStatus({ ...busyGroup(), leader: { id: ALPHA, name: 'w-alpha', lastUpdateNs: ns(nowMs - 500) } }, VIEW);
    expect(live).to.contain('leader w-alpha,');
    expect(live).not.to.contain('leader w-alpha [expired]');
  });

  it('BEHIND: the server\'s figure, n/a where it said 0 though a record follows the checkpoint, 0.0s where none does, ? where the read failed', () => {
    expect(behindOf(lag(0, true))).to.deep.equal({ kind: 'unknown' });
    expect(behindOf(lag(0, false))).to.deep.equal({ kind: 'ms', ms: 0 });
    expect(behindOf(lag(5000))).to.deep.equal({ kind: 'ms', ms: 5000 });
    const text = renderStatus(busyGroup(), VIEW);
    expect(text).to.match(/^shardId-000000000001\s+w-alpha\s+496807…510001\s+n\/a\s/m);
    expect(text).to.match(/^shardId-000000000003\s+w-gamma\*\s+496807…510003\s+0\.0s\s/m);
    expect(text).to.match(/^shardId-000000000004\s+w-alpha\s+496807…510004\s+\?\s/m);
    expect(text.replace(/\n {2}/g, ' ')).to.contain('n/a: the server says 0 behind though records follow the checkpoint (kinesalite always says 0)');
    expect(text).to.contain('?: the lag could not be read');
    const json = JSON.parse(renderStatus(busyGroup(), { ...VIEW, json: true })) as { shards: { lag: { millisBehindLatest: number | null; recordAfterCheckpoint: boolean | null } | null }[] };
    expect(json.shards.slice(0, 4).map((s) => s.lag && [s.lag.millisBehindLatest, s.lag.recordAfterCheckpoint])).to.deep.equal([[0, false], [null, true], [12_300, null], [0, false]]);
  });

  it('a finished shard reads SHARD_END; a reshard, a timestamp start and a corrupt row are told under the table', () => {
    const text = renderStatus(busyGroup(), VIEW);
    const notes = text.replace(/\n {2}/g, ' ');
    expect(text).to.match(/^shardId-000000000000\s+-\s+SHARD_END\s/m);
    expect(notes).to.contain('shardId-000000000000: closed by a reshard, finished; 2 children shardId-000000000004, shardId-000000000005');
    expect(text).to.match(/^shardId-000000000005\s+\S+…\s+AT_TIMESTAMP\s/m);
    expect(notes).to.contain('shardId-000000000005: starts AT_TIMESTAMP 2026-01-02T03:04:05.678Z');
    expect(text).to.match(/^shardId-000000000006\s+-\s+CORRUPT\s/m);
    expect(notes).to.contain('shardId-000000000006: corrupt row: SequenceNumber is not a sequence number: not-a-number');
  });

  it('--wide keeps everything: client ids in full, parents, finished, the finished shard\'s position, the timestamp in its cell', () => {
    const text = renderStatus(busyGroup(), { ...VIEW, wide: true });
    expect(longest(text)).to.be.greaterThan(80);
    expect(text).to.match(/^SHARD\s+PARENTS\s+OWNER\s+CHECKPOINT\s+BEHIND\s+ARRIVED\s+ADVANCED\s+FINISHED$/m);
    expect(text).to.contain(`w-alpha (${ALPHA})`);
    expect(text).to.contain(`w-gamma (${GAMMA}) [expired]`);
    expect(text).to.match(/^shardId-000000000000\s+-\s+-\s+496807…510000\s+0\.0s\s+2\.2s ago\s+1\.5s ago\s+yes$/m);
    expect(text).to.match(/^shardId-000000000004\s+shardId-000000000000\s/m);
    expect(text).to.contain('AT_TIMESTAMP 2026-01-02T03:04:05.678Z');
    expect(text).to.match(new RegExp(`^w-alpha\\s+${ALPHA}\\s`, 'm'));
  });

  it('counts in words: 1 shard, 1 live member; (none) under an empty member table', () => {
    const alone: GroupSnapshot = {
      nowMs, shards: [shard(0)], rows: [row(0, { ownerId: ALPHA, ownerName: 'w-alpha' })], corrupt: new Map(),
      clients: [client(ALPHA, 'w-alpha', 100)], corruptClients: [], leader: { id: ALPHA, name: 'w-alpha', lastUpdateNs: ns(nowMs - 100) }, lags: new Map(),
    };
    const text = renderStatus(alone, VIEW);
    expect(text.split('\n').slice(0, 2)).to.deep.equal([
      'stream events, app billing: 1 shard (1 open), 1 leased by live clients;',
      '  1 live member, leader w-alpha, sticky assignment',
    ]);
    const empty = renderStatus({ ...alone, clients: [], leader: undefined, rows: [] }, VIEW);
    expect(empty).to.contain('0 live members, no leader');
    expect(empty).to.contain('MEMBER  ID  HEARTBEAT  SHARDS  LEADER  LIBRARY\n(none)\n');
    expect(membersView([])).to.equal('MEMBER  ID  HEARTBEAT  SHARDS  LEADER  LIBRARY\n(none)\n');
  });

  it('--watch says when it read, how often, and how to stop, above each refresh', () => {
    const text = renderStatus(busyGroup(), { ...VIEW, watchIntervalMs: 1000 });
    const local = new Date(nowMs);
    const clock = [local.getHours(), local.getMinutes(), local.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
    expect(text.split('\n')[0]).to.equal(`read at ${clock}, every 1 s, Ctrl-C to stop`);
    expect(watchLine(nowMs, 200)).to.match(/, every 0\.2 s, Ctrl-C to stop$/);
  });

  it('shortens UUID-like ids only, and cuts the flexible column to fit, keeping the * marker', () => {
    expect([shortId(ALPHA), shortId('dev-1'), shortId('status-client'), shortId('a-client-id-of-thirty-characters')]).to.deep.equal(['c4b53502…', 'dev-1', 'status-client', 'a-client-id-of-thir…']);
    const table = fittedTable(['A', 'NAME', 'B'], [['x'.repeat(30), 'a-very-long-name-indeed*', 'y'.repeat(30)]], 80, 1);
    expect(longest(table)).to.be.at.most(80);
    expect(table).to.match(/a-very-long-na…\*/);
  });
});
