import { expect } from 'chai';
import { type ImportFacts, type KinsumerRowRead, planImport } from '../../../src/kcl/import-plan.js';
import { type KclCheckpoint, type KclItem, decodeKclItem, encodeKclLease } from '../../../src/kcl/lease-row.js';
import type { RecordAtCheckpoint } from '../../../src/kcl/record-at.js';
import { selectStreamLeases } from '../../../src/kcl/stream-leases.js';
import type { CheckpointRow, StoredCheckpoint } from '../../../src/ports/lease-store.js';
import type { ShardInfo } from '../../../src/ports/stream.js';

const S0 = 'shardId-000000000000';
const S1 = 'shardId-000000000001';
const S2 = 'shardId-000000000002';
const SEQ = '49590338271490256608559692538361571095921575989136588898';
const LATER = '49590338271490256608559692538361571095921575989136588999';
const shard = (shardId: string, parentShardIds: string[] = []): ShardInfo => ({ shardId, parentShardIds, open: true, startingHashKey: '0', endingHashKey: '1' });
const kclLease = (shardId: string, checkpoint: KclCheckpoint, more: { pending?: KclCheckpoint; key?: string } = {}): KclItem => decodeKclItem(encodeKclLease({
  leaseKey: more.key ?? shardId, shardId, leaseCounter: 5n, ownerSwitchesSinceCheckpoint: 0n, checkpoint, parentShardIds: [], childShardIds: [],
  ...(more.pending === undefined ? {} : { pendingCheckpoint: more.pending }),
}));
const row = (shardId: string, checkpoint: StoredCheckpoint | undefined, more: Partial<CheckpointRow> = {}): KinsumerRowRead => ({
  row: { shardId, checkpoint, ownerId: undefined, ownerName: undefined, lastUpdateNs: undefined, finished: false, leaseCounter: 1, lastOwnerId: undefined, ...more },
});
/** DynamoDB's clock before the import's writes (a reset's moment, for a LATEST lease). */
const IMPORTED_AT = new Date('2026-02-01T10:00:00Z');
const seq = (sequenceNumber: string, subSequenceNumber = 0): KclCheckpoint => ({ type: 'sequence', sequenceNumber, subSequenceNumber });

function facts(items: KclItem[], more: Partial<ImportFacts> = {}): ImportFacts {
  return {
    shards: [shard(S0), shard(S1)],
    leases: selectStreamLeases(items, { streamName: 'orders', accountId: '000000000000', creationMs: 1_733_300_000_000 }),
    kinsumer: new Map(), records: new Map(), movedLeases: new Set(), liveOwners: new Map(), timestamp: undefined, importedAt: IMPORTED_AT, force: false,
    ...more,
  };
}
const records = (entries: [string, RecordAtCheckpoint][]) => new Map(entries);

describe('import plan: KCL checkpoint → kinsumer checkpoint row', () => {
  describe('a sequence checkpoint resumes right after the user record it names', () => {
    it('on a plain record, (s, 0) is "after s": kinsumer {s}, resumed AFTER_SEQUENCE_NUMBER (not {s, 0}, which would deliver s again)', () => {
      const plan = planImport(facts([kclLease(S0, seq(SEQ))], { records: records([[S0, { kind: 'plain' }]]) }));
      expect(plan.writes).to.deep.equal([{ shardId: S0, checkpoint: { type: 'position', position: { sequenceNumber: SEQ } }, finished: false }]);
      expect(plan.lines[0]).to.deep.include({ kcl: { checkpoint: SEQ, subSequenceNumber: 0 }, start: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ }, action: 'write' });
    });

    it('inside a KPL aggregate, (s, n) is "after user record n of s": kinsumer {s, n}, also for n = 0 (checkpoint(record) writes 0)', () => {
      for (const n of [0, 2]) {
        const plan = planImport(facts([kclLease(S0, seq(SEQ, n))], { records: records([[S0, { kind: 'aggregate', count: 5 }]]) }));
        expect(plan.writes[0]?.checkpoint).to.deep.equal({ type: 'position', position: { sequenceNumber: SEQ, subSequenceNumber: n } });
      }
    });

    it('a record gone with retention is "after s" either way; one that cannot be read is taken as an aggregate (a duplicate, never a loss), and the line says so', () => {
      const gone = planImport(facts([kclLease(S0, seq(SEQ, 3))], { records: records([[S0, { kind: 'gone' }]]) }));
      expect(gone.writes[0]?.checkpoint).to.deep.equal({ type: 'position', position: { sequenceNumber: SEQ } });
      const unknown = planImport(facts([kclLease(S0, seq(SEQ, 3))], { records: records([[S0, { kind: 'unknown' }]]) }));
      expect(unknown.writes[0]?.checkpoint).to.deep.equal({ type: 'position', position: { sequenceNumber: SEQ, subSequenceNumber: 3 } });
      expect(unknown.lines[0]?.reason).to.contain('could not be read');
    });

    it('a sequence number Kinesis refuses for the shard is refused, and the run with it', () => {
      const plan = planImport(facts([kclLease(S0, seq(SEQ))], { records: records([[S0, { kind: 'invalid', problem: 'did not come from this stream' }]]) }));
      expect(plan.lines[0]).to.deep.include({ action: 'refuse' });
      expect(plan.lines[0]?.reason).to.contain('did not come from this stream');
      expect(plan.writes).to.deep.equal([]);
      expect(plan.refused).to.have.length(1);
    });
  });

  describe('sentinels', () => {
    it('TRIM_HORIZON and LATEST become the shard\'s start; LATEST with the import\'s moment, as a reset to LATEST stores it (review-4 §3.6)', () => {
      const plan = planImport(facts([kclLease(S0, { type: 'TRIM_HORIZON' }), kclLease(S1, { type: 'LATEST' })]));
      // Records put between the import and the group's first capture are delivered, as after `kinsumer reset --to LATEST`.
      expect(plan.writes.map((w) => w.checkpoint)).to.deep.equal([{ type: 'TRIM_HORIZON' }, { type: 'LATEST', notBefore: IMPORTED_AT, resetAt: IMPORTED_AT }]);
      expect(plan.lines.map((l) => l.kcl)).to.deep.equal([{ checkpoint: 'TRIM_HORIZON' }, { checkpoint: 'LATEST' }]);
      expect(plan.lines[1]?.start, 'where the group starts it').to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: IMPORTED_AT });
      expect(plan.lines[1]?.reason).to.contain('import\'s moment');
    });

    it('a LATEST lease forced over a kinsumer row keeps that row\'s floors, as a reset to LATEST does', () => {
      const kept = new Date('2026-02-01T11:00:00Z');
      const over = planImport(facts([kclLease(S0, { type: 'LATEST' })], {
        kinsumer: new Map([[S0, row(S0, { type: 'AT_TIMESTAMP', timestamp: kept, after: { sequenceNumber: SEQ } })]]), force: true,
      }));
      expect(over.writes[0]?.checkpoint).to.deep.equal({ type: 'LATEST', after: { sequenceNumber: SEQ }, notBefore: kept, resetAt: IMPORTED_AT });
    });

    it('AT_TIMESTAMP needs the application\'s time: refused without it (and the run with it), the start with it', () => {
      const without = planImport(facts([kclLease(S0, { type: 'AT_TIMESTAMP' })]));
      expect(without.lines[0]).to.deep.include({ action: 'refuse' });
      expect(without.lines[0]?.reason).to.contain('--timestamp');
      expect(without.refused).to.have.length(1);
      const timestamp = new Date('2026-01-31T12:00:00Z');
      const withTime = planImport(facts([kclLease(S0, { type: 'AT_TIMESTAMP' })], { timestamp }));
      expect(withTime.writes[0]?.checkpoint).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp });
      expect(withTime.refused).to.deep.equal([]);
    });

    it('SHARD_END finishes the shard: it keeps a checkpoint it has, and a row without one gets TRIM_HORIZON (for a child with no lease of its own)', () => {
      const fresh = planImport(facts([kclLease(S0, { type: 'SHARD_END' })]));
      expect(fresh.writes[0]).to.deep.equal({ shardId: S0, checkpoint: { type: 'TRIM_HORIZON' }, finished: true });
      expect(fresh.lines[0]?.start).to.deep.equal({ type: 'FINISHED' });
      const kept = planImport(facts([kclLease(S0, { type: 'SHARD_END' })], { kinsumer: new Map([[S0, row(S0, { type: 'position', position: { sequenceNumber: SEQ } })]]) }));
      expect(kept.writes[0]).to.deep.equal({ shardId: S0, checkpoint: undefined, finished: true });
    });
  });

  it('a shard with no lease is left to initialPosition, and the line says so', () => {
    const plan = planImport(facts([kclLease(S0, { type: 'LATEST' })]));
    expect(plan.lines[1]).to.deep.include({ shardId: S1, kcl: undefined, start: { type: 'INITIAL_POSITION' }, action: 'skip' });
    expect(plan.lines[1]?.reason).to.contain('initialPosition');
  });

  it('pendingCheckpoint is not used, and the line says so', () => {
    const plan = planImport(facts([kclLease(S0, seq(SEQ), { pending: seq(LATER) })], { records: records([[S0, { kind: 'plain' }]]) }));
    expect(plan.writes[0]?.checkpoint).to.deep.equal({ type: 'position', position: { sequenceNumber: SEQ } });
    expect(plan.lines[0]?.reason).to.contain(`pendingCheckpoint ${LATER}/0 (prepared, not committed) is not used`);
  });

  it('leases of shards the stream no longer lists are shown and skipped', () => {
    const plan = planImport(facts([kclLease(S2, { type: 'SHARD_END' })]));
    expect(plan.lines[2]).to.deep.include({ shardId: S2, action: 'skip' });
    expect(plan.refused).to.deep.equal([]);
  });

  it('two leases naming one shard (single- and multi-stream) are refused', () => {
    const plan = planImport(facts([kclLease(S0, { type: 'LATEST' }), kclLease(S0, { type: 'LATEST' }, { key: `000000000000:orders:1733300000:${S0}` })]));
    expect(plan.lines[0]).to.deep.include({ action: 'refuse' });
  });

  describe('safety: backwards, live owners, a live KCL fleet; --force', () => {
    const ahead = new Map([[S0, row(S0, { type: 'position', position: { sequenceNumber: LATER } })]]);
    const recordsAt = records([[S0, { kind: 'plain' }]]);

    it('refuses to move a kinsumer checkpoint backwards; --force writes it and marks the line forced', () => {
      const plan = planImport(facts([kclLease(S0, seq(SEQ))], { kinsumer: ahead, records: recordsAt }));
      expect(plan.lines[0]).to.deep.include({ action: 'refuse' });
      expect(plan.lines[0]?.reason).to.contain(`backwards: kinsumer's checkpoint ${LATER} is further`);
      expect(plan.writes).to.deep.equal([]);
      const forced = planImport(facts([kclLease(S0, seq(SEQ))], { kinsumer: ahead, records: recordsAt, force: true }));
      expect(forced.lines[0]).to.deep.include({ action: 'write', forced: true });
      expect(forced.writes).to.have.length(1);
    });

    it('a start over a kinsumer checkpoint, and anything but SHARD_END over a finished shard, are backwards too', () => {
      expect(planImport(facts([kclLease(S0, { type: 'TRIM_HORIZON' })], { kinsumer: ahead })).lines[0]?.action).to.equal('refuse');
      const finished = new Map([[S0, row(S0, undefined, { finished: true })]]);
      expect(planImport(facts([kclLease(S0, { type: 'LATEST' })], { kinsumer: finished })).lines[0]?.action).to.equal('refuse');
      expect(planImport(facts([kclLease(S0, { type: 'SHARD_END' })], { kinsumer: finished })).lines[0]).to.deep.include({ action: 'skip', reason: 'kinsumer is there already' });
    });

    it('a kinsumer checkpoint at the same place is skipped; behind it, written', () => {
      const same = new Map([[S0, row(S0, { type: 'position', position: { sequenceNumber: SEQ } })]]);
      expect(planImport(facts([kclLease(S0, seq(SEQ))], { kinsumer: same, records: recordsAt })).lines[0]?.action).to.equal('skip');
      expect(planImport(facts([kclLease(S0, seq(LATER))], { kinsumer: same, records: recordsAt })).lines[0]?.action).to.equal('write');
    });

    it('refuses a row a live kinsumer client holds; --force writes it (the write fences that client)', () => {
      const live = new Map([[S0, 'client-7']]);
      const plan = planImport(facts([kclLease(S0, { type: 'TRIM_HORIZON' })], { liveOwners: live }));
      expect(plan.lines[0]?.reason).to.contain('a live kinsumer client (client-7) holds it');
      expect(plan.refused).to.have.length(1);
      expect(planImport(facts([kclLease(S0, { type: 'TRIM_HORIZON' })], { liveOwners: live, force: true })).lines[0]).to.deep.include({ action: 'write', forced: true });
    });

    it('refuses the whole run while a KCL lease moves (a live fleet), naming it; --force goes ahead and marks the moved leases\' lines', () => {
      const plan = planImport(facts([kclLease(S0, { type: 'TRIM_HORIZON' }), kclLease(S1, { type: 'TRIM_HORIZON' })], { movedLeases: new Set([S1]) }));
      expect(plan.writes).to.deep.equal([]);
      expect(plan.refused[0]).to.contain('the KCL fleet is alive').and.contain(S1);
      const forced = planImport(facts([kclLease(S0, { type: 'TRIM_HORIZON' }), kclLease(S1, { type: 'TRIM_HORIZON' })], { movedLeases: new Set([S1]), force: true }));
      expect(forced.refused).to.deep.equal([]);
      expect(forced.lines.map((l) => l.forced ?? false)).to.deep.equal([false, true]);
      expect(forced.writes).to.have.length(2);
    });
  });

  it('a multi-stream lease of an older stream of the same name is refused with the reason, and does not hold the others back', () => {
    const older = kclLease(S0, { type: 'LATEST' }, { key: `000000000000:orders:1600000000:${S0}` });
    const current = kclLease(S0, { type: 'TRIM_HORIZON' }, { key: `000000000000:orders:1733300000:${S0}` });
    const plan = planImport(facts([older, current]));
    expect(plan.writes).to.deep.equal([{ shardId: S0, checkpoint: { type: 'TRIM_HORIZON' }, finished: false }]);
    const refusedLine = plan.lines.find((l) => l.leaseKey === `000000000000:orders:1600000000:${S0}`);
    expect(refusedLine).to.deep.include({ action: 'refuse' });
    expect(refusedLine?.reason).to.contain('an older stream named orders');
    expect(plan.refused).to.deep.equal([]);
  });
});
