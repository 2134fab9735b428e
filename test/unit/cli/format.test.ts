import { expect } from 'chai';
import { parseResetTarget } from '../../../src/cli/commands/reset.js';
import { groupAssignment, memberStatuses, shardStatuses, statusJson } from '../../../src/cli/commands/status.js';
import { membersTable, statusTable } from '../../../src/cli/commands/status-view.js';
import type { CheckpointLag } from '../../../src/cli/commands/status-read.js';
import { type PrintedRecord, parseTailStart, recordLine, shardsToRead } from '../../../src/cli/commands/tail.js';
import { UsageError } from '../../../src/cli/command.js';
import { ageText, checkpointText, dataText, renderTable, shortSequence } from '../../../src/cli/format.js';
import type { ShardInfo } from '../../../src/ports/stream.js';
import type { CheckpointRow } from '../../../src/ports/lease-store.js';

const SEQ = '49680774074096777489958285650618970692452261160099512322';

function shard(shardId: string, parents: string[] = [], open = true): ShardInfo {
  return { shardId, parentShardIds: parents, open, startingHashKey: '0', endingHashKey: '1' };
}

describe('CLI formatting (pure)', () => {
  it('renders aligned columns, the last one unpadded', () => {
    expect(renderTable(['A', 'LONGER'], [['xyz', 'v'], ['x', '']])).to.equal('A    LONGER\nxyz  v\nx\n');
  });

  it('shortens sequence numbers for tables to their first and last 6 digits, keeping short ones and the sub-sequence', () => {
    expect(shortSequence(SEQ)).to.equal('496807…512322');
    expect(shortSequence('1234567890123')).to.equal('1234567890123');
    expect(shortSequence('12345678901234')).to.equal('123456…901234');
    expect(checkpointText({ type: 'position', position: { sequenceNumber: SEQ, subSequenceNumber: 2 } }, { short: true })).to.equal('496807…512322/2');
    expect(checkpointText({ type: 'LATEST' }, { short: true })).to.equal('LATEST');
  });

  it('writes checkpoints, ages and record data as a person reads them', () => {
    expect(checkpointText(undefined)).to.equal('-');
    expect(checkpointText({ type: 'position', position: { sequenceNumber: SEQ, subSequenceNumber: 2 } })).to.equal(`${SEQ}/2`);
    expect(checkpointText({ type: 'AT_TIMESTAMP', timestamp: new Date(0) })).to.equal('AT_TIMESTAMP 1970-01-01T00:00:00.000Z');
    expect([0, 999, 59_999, 60_000, 3_599_000, 3_600_000, 86_400_000 + 3 * 3_600_000, -1500].map(ageText))
      .to.deep.equal(['0.0s', '0.9s', '59.9s', '1m00s', '59m59s', '1h00m', '1d03h', '-1.5s']);
    expect(dataText(new TextEncoder().encode('tab\tok ü'))).to.deep.equal({ encoding: 'utf8', text: 'tab\tok ü' });
    expect(dataText(new Uint8Array([0xff, 0xfe]))).to.deep.equal({ encoding: 'base64', text: '//4=' });
    expect(dataText(new TextEncoder().encode('a\nb')).encoding).to.equal('base64');
    expect(dataText(new TextEncoder().encode('\u0085')).encoding).to.equal('base64');
    // A view into a larger buffer encodes only its own bytes.
    expect(dataText(new Uint8Array([1, 0xff, 2]).subarray(1, 2)).text).to.equal('/w==');
  });
});

describe('CLI status rows (pure)', () => {
  const nowMs = 1_800_000_000_000;
  const row = (over: Partial<CheckpointRow>): CheckpointRow => ({
    shardId: 's0', checkpoint: undefined, ownerId: undefined, ownerName: undefined, lastUpdateNs: undefined,
    finished: false, leaseCounter: 0, lastOwnerId: undefined, ...over,
  });

  it('a lease is live only while renewed within the TTL, as the capture rule sees it', () => {
    const ns = (ms: number) => BigInt(ms) * 1_000_000n;
    const statuses = shardStatuses(
      [shard('s0'), shard('s1'), shard('s2'), shard('s3', ['s0', 's1'], false)],
      [
        row({ shardId: 's0', ownerId: 'a', ownerName: 'host', lastUpdateNs: ns(nowMs - 14_999), leaseCounter: 3 }),
        row({ shardId: 's1', ownerId: 'b', lastUpdateNs: ns(nowMs - 15_000) }),
        row({ shardId: 's2', ownerId: 'c' }),
      ],
      new Map(), nowMs, 15_000,
    );
    expect(statuses.map((s) => s.ownerLive)).to.deep.equal([true, false, false, false]);
    expect(statusJson(statuses[0]!)).to.deep.include({ owner: { id: 'a', name: 'host', live: true }, lastUpdateAgeMs: 14_999, leaseCounter: 3, lastUpdate: new Date(nowMs - 14_999).toISOString() });
    expect(statusJson(statuses[3]!)).to.deep.include({ parentShardIds: ['s0', 's1'], open: false, owner: null, leaseCounter: null, lastUpdate: null });
    const table = statusTable(statuses);
    expect(table).to.match(/s0\s+-\s+host \(a\)\s+-\s+-\s+-\s+-\s+no\n/);
    expect(table).to.match(/s1\s+-\s+b \[expired\]\s+-\s+-\s+-\s+-\s+no\n/);
    expect(table).to.match(/s3\s+s0,s1\s+-\s+-\s+-\s+-\s+-\s+no \(closed\)\n/);
  });

  it('shows progress, not renewals: the checkpoint\'s last advance, the checkpointed record\'s arrival and MillisBehindLatest; members with heartbeat age, shards held and leader', () => {
    const ns = (ms: number) => BigInt(ms) * 1_000_000n;
    const checkpoint = { type: 'position', position: { sequenceNumber: SEQ } } as const;
    const statuses = shardStatuses(
      [shard('s0'), shard('s1'), shard('s2')],
      [
        // Renewed 1 s ago, but its checkpoint last moved 5 min ago.
        row({ shardId: 's0', ownerId: 'a', ownerName: 'host-a', lastUpdateNs: ns(nowMs - 1000), checkpoint, checkpointUpdateNs: ns(nowMs - 300_000) }),
        row({ shardId: 's1', ownerId: 'a', ownerName: 'host-a', lastUpdateNs: ns(nowMs - 1000), checkpoint }),
        row({ shardId: 's2', ownerId: 'b', lastUpdateNs: ns(nowMs - 60_000), checkpoint }),
      ],
      new Map(), nowMs, 15_000,
      new Map<string, CheckpointLag | { error: string }>([
        ['s0', { arrivedAt: new Date(nowMs - 310_000), millisBehindLatest: 7_200_000 }],
        ['s1', { error: 'throttled' }],
        ['s2', { arrivedAt: undefined, millisBehindLatest: 0 }],
      ]),
    );
    expect(statusJson(statuses[0]!, nowMs)).to.deep.include({
      checkpointAdvanced: new Date(nowMs - 300_000).toISOString(), checkpointAdvancedAgeMs: 300_000, lastUpdateAgeMs: 1000,
      lag: { checkpointArrivedAt: new Date(nowMs - 310_000).toISOString(), checkpointRecordAgeMs: 310_000, millisBehindLatest: 7_200_000, recordAfterCheckpoint: null }, lagError: null,
      checkpoint: { type: 'position', sequenceNumber: SEQ },
    });
    expect(statusJson(statuses[1]!, nowMs)).to.deep.include({ lag: null, lagError: 'throttled', checkpointAdvanced: null });
    expect(statusJson(statuses[2]!, nowMs)).to.deep.include({ lag: { checkpointArrivedAt: null, checkpointRecordAgeMs: null, millisBehindLatest: 0, recordAfterCheckpoint: null } });
    const table = statusTable(statuses, nowMs);
    expect(table).to.match(/^SHARD\s+PARENTS\s+OWNER\s+CHECKPOINT\s+BEHIND\s+ARRIVED\s+ADVANCED\s+FINISHED\n/);
    expect(table).to.match(/s0\s+-\s+host-a \(a\)\s+496807…512322\s+2h00m\s+5m10s ago\s+5m00s ago\s+no\n/);
    expect(table).to.match(/s1\s+-\s+host-a \(a\)\s+496807…512322\s+\?\s+\?\s+-\s+no\n/);
    expect(table).not.to.contain(SEQ);

    const members = memberStatuses([
      { id: 'a', name: 'host-a', lastUpdateNs: ns(nowMs - 2500), instanceId: 'i-1', shardIds: ['s0', 's1'], library: 'kinsumer-ts/0.1.0' },
      { id: 'b', name: undefined, lastUpdateNs: ns(nowMs - 60_000), instanceId: undefined, shardIds: undefined, library: undefined },
    ], statuses, { id: 'a', name: 'host-a', lastUpdateNs: ns(nowMs) }, nowMs, 15_000);
    expect(members.map((m) => [m.id, m.ageMs, m.live, m.shards, m.leader])).to.deep.equal([['a', 2500, true, 2, true], ['b', 60_000, false, 0, false]]);
    expect(membersTable(members)).to.equal([
      'MEMBER  ID  HEARTBEAT            SHARDS  LEADER  LIBRARY',
      'host-a  a   2.5s ago             2       yes     kinsumer-ts/0.1.0',
      '-       b   1m00s ago [expired]  0       -       go kinsumer',
      '',
    ].join('\n'));
    // The expired Go client no longer counts; a live one puts the group on the Go assignment.
    expect(groupAssignment(members)).to.equal('sticky');
    expect(groupAssignment([...members, { live: true, library: undefined }])).to.equal('go');
  });
});

describe('CLI positions (pure)', () => {
  const now = Date.parse('2026-06-01T00:00:00Z');

  it('reset --to takes LATEST, TRIM_HORIZON or a past ISO timestamp', () => {
    expect(parseResetTarget('LATEST', now)).to.deep.equal({ type: 'LATEST' });
    expect(parseResetTarget('TRIM_HORIZON', now)).to.deep.equal({ type: 'TRIM_HORIZON' });
    expect(parseResetTarget('2024-02-29T12:00:00Z', now)).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date('2024-02-29T12:00:00Z') });
    expect(parseResetTarget('2026-05-31T23:00:00+02:00', now)).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date('2026-05-31T21:00:00Z') });
    for (const bad of ['latest', '2026-05-31', '1717000000', '2026-02-30Tnonsense', '2026-02-29T00:00:00Z', '2026-04-31T12:00:00Z', '2026-06-01T00:00:01Z']) {
      expect(() => parseResetTarget(bad, now), bad).to.throw(UsageError);
    }
  });

  it('tail --from defaults to LATEST', () => {
    expect(parseTailStart(undefined)).to.deep.equal({ type: 'LATEST' });
    expect(parseTailStart('2026-05-31T23:00:00Z')).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date('2026-05-31T23:00:00Z') });
    expect(() => parseTailStart('now')).to.throw(UsageError);
  });

  it('tail reads open shards from LATEST, every shard from elsewhere, and later shards from their beginning', () => {
    const listed = [shard('p', [], false), shard('c1', ['p']), shard('c2', ['p'])];
    expect(shardsToRead(listed, new Set(), true, { type: 'LATEST' }, undefined).map((s) => s.shardId)).to.deep.equal(['c1', 'c2']);
    expect(shardsToRead(listed, new Set(), true, { type: 'TRIM_HORIZON' }, ['p'])).to.deep.equal([{ shardId: 'p', start: { type: 'TRIM_HORIZON' } }]);
    expect(shardsToRead([...listed, shard('g', ['c1'])], new Set(['c1', 'c2']), false, { type: 'LATEST' }, undefined))
      .to.deep.equal([{ shardId: 'p', start: { type: 'TRIM_HORIZON' } }, { shardId: 'g', start: { type: 'TRIM_HORIZON' } }]);
  });

  it('tail prints one line per record, tab-separated or JSON', () => {
    const record: PrintedRecord = {
      shardId: 's', sequenceNumber: SEQ, subSequenceNumber: 1, partitionKey: 'pk', explicitHashKey: '42',
      data: new TextEncoder().encode('hi'), approximateArrivalTimestamp: new Date(0), deliveryCount: 1,
    };
    expect(recordLine(record, false)).to.equal(`s\t${SEQ}/1\tpk\thi\n`);
    expect(JSON.parse(recordLine(record, true))).to.deep.equal({
      shardId: 's', sequenceNumber: SEQ, subSequenceNumber: 1, partitionKey: 'pk', explicitHashKey: '42',
      approximateArrivalTimestamp: '1970-01-01T00:00:00.000Z', encoding: 'utf8', data: 'hi',
    });
  });
});
