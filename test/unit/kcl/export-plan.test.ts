import { expect } from 'chai';
import { type ExportFacts, planExport } from '../../../src/kcl/export-plan.js';
import type { KinsumerRowRead } from '../../../src/kcl/import-plan.js';
import type { CheckpointRow, StoredCheckpoint } from '../../../src/ports/lease-store.js';
import type { ShardInfo } from '../../../src/ports/stream.js';

const P = 'shardId-000000000000';
const A = 'shardId-000000000001';
const B = 'shardId-000000000002';
const SEQ = '49590338271490256608559692538361571095921575989136588898';
const shard = (shardId: string, parentShardIds: string[] = [], open = true): ShardInfo => ({ shardId, parentShardIds, open, startingHashKey: '0', endingHashKey: '99' });
const row = (shardId: string, checkpoint: StoredCheckpoint | undefined, more: Partial<CheckpointRow> = {}): [string, KinsumerRowRead] => [shardId, {
  row: { shardId, checkpoint, ownerId: undefined, ownerName: undefined, lastUpdateNs: undefined, finished: false, leaseCounter: 1, lastOwnerId: undefined, ...more },
}];

function facts(more: Partial<ExportFacts> = {}): ExportFacts {
  return {
    shards: [shard(P, [], false), shard(A, [P]), shard(B, [P])],
    kinsumer: new Map(), kclCounters: new Map(), identifier: undefined, records: new Map(), initialPosition: 'TRIM_HORIZON',
    liveClients: [], keyProblem: undefined, force: false, ...more,
  };
}

describe('export plan: kinsumer checkpoint → KCL lease', () => {
  it('a split: the finished parent gets SHARD_END and its children, each child its parent (a string set), no owner, counter above the row\'s', () => {
    const plan = planExport(facts({
      kinsumer: new Map([row(P, { type: 'position', position: { sequenceNumber: SEQ } }, { finished: true }), row(A, { type: 'position', position: { sequenceNumber: SEQ, subSequenceNumber: 3 } })]),
      kclCounters: new Map([[P, 41n], [A, undefined]]),
    }));
    expect(plan.writes.map((w) => w.lease)).to.deep.equal([
      { leaseKey: P, shardId: P, leaseCounter: 42n, ownerSwitchesSinceCheckpoint: 0n, checkpoint: { type: 'SHARD_END' }, parentShardIds: [], childShardIds: [A, B], startingHashKey: '0', endingHashKey: '99' },
      { leaseKey: A, shardId: A, leaseCounter: 1n, ownerSwitchesSinceCheckpoint: 0n, checkpoint: { type: 'sequence', sequenceNumber: SEQ, subSequenceNumber: 3 }, parentShardIds: [P], childShardIds: [], startingHashKey: '0', endingHashKey: '99' },
      // Never read by kinsumer: its parent was read from a record, so all of it (as kinsumer would).
      { leaseKey: B, shardId: B, leaseCounter: 1n, ownerSwitchesSinceCheckpoint: 0n, checkpoint: { type: 'TRIM_HORIZON' }, parentShardIds: [P], childShardIds: [], startingHashKey: '0', endingHashKey: '99' },
    ]);
    expect(plan.lines.map((l) => [l.kcl, l.start])).to.deep.equal([
      [{ checkpoint: 'SHARD_END' }, { type: 'FINISHED' }],
      [{ checkpoint: SEQ, subSequenceNumber: 3 }, { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ, subSequenceNumber: 3 }],
      [{ checkpoint: 'TRIM_HORIZON' }, { type: 'INITIAL_POSITION' }],
    ]);
  });

  it('kinsumer\'s "after the whole record s" is (s, 0) on a plain record and (s, last index) on a KPL aggregate', () => {
    const whole = new Map([row(A, { type: 'position', position: { sequenceNumber: SEQ } }), row(B, { type: 'position', position: { sequenceNumber: SEQ } })]);
    const plan = planExport(facts({ kinsumer: whole, records: new Map([[A, { kind: 'plain' }], [B, { kind: 'aggregate', count: 7 }]]) }));
    expect(plan.writes.slice(1).map((w) => w.lease.checkpoint)).to.deep.equal([
      { type: 'sequence', sequenceNumber: SEQ, subSequenceNumber: 0 },
      { type: 'sequence', sequenceNumber: SEQ, subSequenceNumber: 6 },
    ]);
  });

  it('starts stay starts; the KCL takes AT_TIMESTAMP\'s time from its configuration, so the plan gives the earliest', () => {
    const early = new Date('2026-01-01T00:00:00Z');
    const plan = planExport(facts({
      shards: [shard(P), shard(A), shard(B)],
      kinsumer: new Map([row(P, { type: 'LATEST' }), row(A, { type: 'AT_TIMESTAMP', timestamp: new Date('2026-01-02T00:00:00Z') }), row(B, { type: 'AT_TIMESTAMP', timestamp: early })]),
    }));
    expect(plan.writes.map((w) => w.lease.checkpoint.type)).to.deep.equal(['LATEST', 'AT_TIMESTAMP', 'AT_TIMESTAMP']);
    expect(plan.kclTimestamp).to.deep.equal(early);
    expect(plan.lines[2]?.reason).to.contain('configured with this time');
  });

  describe('the KCL has one AT_TIMESTAMP time for the stream (review-4 §3.5)', () => {
    const T0 = new Date('2026-01-01T00:00:00Z');
    const TA = new Date('2026-01-05T00:00:00Z');
    const TB = new Date('2026-01-06T00:00:00Z');
    const FA = '49590338271490256608559692538361571095921575989136500001';
    const FB = '49590338271490256608559692538361571095921575989136500002';
    const open = [shard(P), shard(A), shard(B)];

    it('a shard whose start is later than the stream\'s time is read by the KCL from that earlier time, and its line says from when and what comes again', () => {
      const plan = planExport(facts({
        shards: open,
        kinsumer: new Map([row(P, { type: 'AT_TIMESTAMP', timestamp: T0 }), row(A, { type: 'AT_TIMESTAMP', timestamp: TA })]),
      }));
      expect(plan.kclTimestamp).to.deep.equal(T0);
      expect(plan.writes.slice(0, 2).map((w) => w.lease.checkpoint)).to.deep.equal([{ type: 'AT_TIMESTAMP' }, { type: 'AT_TIMESTAMP' }]);
      expect(plan.lines[0]?.reason).to.contain(`AT_TIMESTAMP ${T0.toISOString()}: the KCL application must be configured with this time`).and.not.contain('earlier');
      expect(plan.lines[1]?.reason).to.contain(`AT_TIMESTAMP ${T0.toISOString()}: `).and.contain(`read by the KCL from that time, earlier than kinsumer's ${TA.toISOString()}`);
    });

    it('a later start with a floor whose record arrived after the stream\'s time: a sequence checkpoint at the floor (it re-reads less, and nothing consumed); one that arrived before: AT_TIMESTAMP', () => {
      const plan = planExport(facts({
        shards: open,
        kinsumer: new Map([
          row(P, { type: 'AT_TIMESTAMP', timestamp: T0 }),
          row(A, { type: 'LATEST', after: { sequenceNumber: FA }, notBefore: TA, resetAt: TA }),
          row(B, { type: 'AT_TIMESTAMP', timestamp: TB, after: { sequenceNumber: FB } }),
        ]),
        records: new Map([
          [A, { kind: 'aggregate', count: 4, arrivedAt: new Date('2026-01-04T00:00:00Z') }],
          [B, { kind: 'plain', arrivedAt: new Date('2025-12-31T00:00:00Z') }],
        ]),
      }));
      expect(plan.kclTimestamp).to.deep.equal(T0);
      expect(plan.writes.map((w) => w.lease.checkpoint)).to.deep.equal([
        { type: 'AT_TIMESTAMP' }, { type: 'sequence', sequenceNumber: FA, subSequenceNumber: 3 }, { type: 'AT_TIMESTAMP' },
      ]);
      expect(plan.lines[1]?.reason).to.contain(`after its floor ${FA}`).and.contain(`arrived before ${TA.toISOString()}`);
      expect(plan.lines[2]?.reason).to.contain(`read by the KCL from that time, earlier than kinsumer's ${TB.toISOString()}`);
    });

    it('the shard that sets the stream\'s time keeps AT_TIMESTAMP (exact there), and a floor whose record is gone or unreadable leaves AT_TIMESTAMP', () => {
      const plan = planExport(facts({
        shards: open,
        kinsumer: new Map([
          row(P, { type: 'AT_TIMESTAMP', timestamp: T0, after: { sequenceNumber: FA } }),
          row(A, { type: 'AT_TIMESTAMP', timestamp: TA, after: { sequenceNumber: FA } }),
          row(B, { type: 'AT_TIMESTAMP', timestamp: TB, after: { sequenceNumber: FB } }),
        ]),
        records: new Map([[P, { kind: 'plain', arrivedAt: T0 }], [A, { kind: 'gone' }], [B, { kind: 'unknown' }]]),
      }));
      expect(plan.writes.map((w) => w.lease.checkpoint)).to.deep.equal([{ type: 'AT_TIMESTAMP' }, { type: 'AT_TIMESTAMP' }, { type: 'AT_TIMESTAMP' }]);
      expect(plan.kclTimestamp).to.deep.equal(T0);
    });
  });

  it('a reset to LATEST that no consumer read yet is exported as AT_TIMESTAMP of its moment: the KCL gets the records put since, as kinsumer would', () => {
    const resetAt = new Date('2026-01-03T00:00:00Z');
    const plan = planExport(facts({ shards: [shard(P)], kinsumer: new Map([row(P, { type: 'LATEST', notBefore: resetAt, resetAt })]) }));
    expect(plan.writes[0]?.lease.checkpoint).to.deep.equal({ type: 'AT_TIMESTAMP' });
    expect(plan.kclTimestamp).to.deep.equal(resetAt);
    expect(plan.lines[0]?.start, 'kinsumer\'s side as a new owner would start').to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: resetAt });
  });

  // R15 (review-4): the child's lease is where kinsumer would start it, the parent's reset moment.
  it('a child kinsumer never read, of a finished parent reset to LATEST: AT_TIMESTAMP of the reset\'s moment, not a new LATEST', () => {
    const resetAt = new Date('2026-01-03T00:00:00Z');
    const plan = planExport(facts({
      kinsumer: new Map([row(P, { type: 'LATEST', after: { sequenceNumber: SEQ }, notBefore: resetAt, resetAt }, { finished: true })]),
      initialPosition: 'LATEST',
    }));
    expect(plan.writes.map((w) => w.lease.checkpoint)).to.deep.equal([{ type: 'SHARD_END' }, { type: 'AT_TIMESTAMP' }, { type: 'AT_TIMESTAMP' }]);
    expect(plan.kclTimestamp).to.deep.equal(resetAt);
  });

  it('a shard with no row and no parents starts at the group\'s initialPosition', () => {
    const plan = planExport(facts({ shards: [shard(P)], initialPosition: 'LATEST' }));
    expect(plan.writes[0]?.lease.checkpoint).to.deep.equal({ type: 'LATEST' });
  });

  it('multi-stream keys carry the stream identifier, streamName and shardId', () => {
    const identifier = { accountId: '1', streamName: 'orders', creationEpoch: 5n, serialized: '1:orders:5' };
    const plan = planExport(facts({ shards: [shard(P)], identifier }));
    expect(plan.writes[0]?.lease).to.deep.include({ leaseKey: `1:orders:5:${P}`, stream: identifier });
  });

  it('refuses while kinsumer clients are live, and a multi-stream table it cannot key; --force overrides the first and marks every line', () => {
    const live = planExport(facts({ liveClients: ['c1'] }));
    expect(live.writes).to.deep.equal([]);
    expect(live.refused[0]).to.contain('1 kinsumer clients are live (c1)');
    const forced = planExport(facts({ liveClients: ['c1'], force: true }));
    expect(forced.writes).to.have.length(3);
    expect(forced.lines.every((l) => l.forced === true)).to.equal(true);
    const unkeyed = planExport(facts({ keyProblem: 'no lease of this stream', force: true }));
    expect(unkeyed.writes).to.deep.equal([]);
  });

  it('a kinsumer row that cannot be read is refused', () => {
    const plan = planExport(facts({ kinsumer: new Map([[A, { row: undefined, corrupt: 'SequenceNumber is not a sequence number' }]]) }));
    expect(plan.lines[1]).to.deep.include({ action: 'refuse' });
    expect(plan.refused).to.have.length(1);
  });
});
