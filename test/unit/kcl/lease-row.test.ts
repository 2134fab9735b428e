import { expect } from 'chai';
import fc from 'fast-check';
import { type KclLease, decodeKclItem, encodeKclLease } from '../../../src/kcl/lease-row.js';

const SEQ = '49590338271490256608559692538361571095921575989136588898';
const lease = (item: ReturnType<typeof decodeKclItem>) => {
  if (item.kind !== 'lease') throw new Error(`not a lease: ${JSON.stringify(item)}`);
  return item.lease;
};

describe('KCL lease row codec', () => {
  describe('reading what each KCL version writes', () => {
    it('KCL 1.0-1.3 wrote no checkpointSubSequenceNumber: read as 0, as the KCL reads it', () => {
      const read = lease(decodeKclItem({
        leaseKey: { S: 'shardId-000000000001' }, leaseCounter: { N: '17' }, leaseOwner: { S: 'worker-a' },
        ownerSwitchesSinceCheckpoint: { N: '2' }, checkpoint: { S: SEQ }, parentShardId: { SS: ['shardId-000000000000'] },
      }));
      expect(read).to.deep.equal({
        leaseKey: 'shardId-000000000001', shardId: 'shardId-000000000001', leaseOwner: 'worker-a', leaseCounter: 17n,
        ownerSwitchesSinceCheckpoint: 2n, checkpoint: { type: 'sequence', sequenceNumber: SEQ, subSequenceNumber: 0 },
        parentShardIds: ['shardId-000000000000'], childShardIds: [],
      });
    });

    it('a 3.x lease with every attribute: pending checkpoint, pendingCheckpointState as bytes, hash range, throughput, checkpointOwner', () => {
      const read = lease(decodeKclItem({
        leaseKey: { S: 'shardId-000000000003' }, leaseCounter: { N: '9223372036854775807' }, leaseOwner: { S: 'worker-b' },
        ownerSwitchesSinceCheckpoint: { N: '0' }, checkpoint: { S: SEQ }, checkpointSubSequenceNumber: { N: '4' },
        pendingCheckpoint: { S: SEQ }, pendingCheckpointSubSequenceNumber: { N: '9' }, pendingCheckpointState: { B: new Uint8Array([1, 2, 3]) },
        parentShardId: { SS: ['shardId-000000000002', 'shardId-000000000001'] }, childShardIds: { SS: ['shardId-000000000005'] },
        startingHashKey: { S: '0' }, endingHashKey: { S: '170141183460469231731687303715884105727' },
        throughputKBps: { N: '12.5' }, checkpointOwner: { S: 'worker-a' }, entityType: { S: 'LEASE' },
      }));
      expect(read.checkpoint).to.deep.equal({ type: 'sequence', sequenceNumber: SEQ, subSequenceNumber: 4 });
      expect(read.pendingCheckpoint).to.deep.equal({ type: 'sequence', sequenceNumber: SEQ, subSequenceNumber: 9 });
      expect(read.leaseCounter).to.equal(9223372036854775807n);
      expect(read.parentShardIds).to.deep.equal(['shardId-000000000001', 'shardId-000000000002']);
      expect(read.childShardIds).to.deep.equal(['shardId-000000000005']);
      expect([read.startingHashKey, read.endingHashKey]).to.deep.equal(['0', '170141183460469231731687303715884105727']);
    });

    it('pendingCheckpointState as a number (the create path\'s bug) is read like bytes: ignored, the lease still reads', () => {
      const item = { leaseKey: { S: 's' }, leaseCounter: { N: '0' }, ownerSwitchesSinceCheckpoint: { N: '0' }, checkpoint: { S: 'TRIM_HORIZON' }, checkpointSubSequenceNumber: { N: '0' } };
      expect(lease(decodeKclItem({ ...item, pendingCheckpointState: { N: '0' } }))).to.deep.equal(lease(decodeKclItem({ ...item, pendingCheckpointState: { B: new Uint8Array([7]) } })));
    });

    it('reads each sentinel as itself', () => {
      for (const sentinel of ['TRIM_HORIZON', 'LATEST', 'AT_TIMESTAMP', 'SHARD_END']) {
        const read = lease(decodeKclItem({ leaseKey: { S: 's' }, leaseCounter: { N: '3' }, ownerSwitchesSinceCheckpoint: { N: '0' }, checkpoint: { S: sentinel }, checkpointSubSequenceNumber: { N: '0' } }));
        expect(read.checkpoint).to.deep.equal({ type: sentinel });
      }
    });

    it('a multi-stream key names account, stream and creation epoch; streamName and shardId beside it', () => {
      const read = lease(decodeKclItem({
        leaseKey: { S: '123456789012:orders:1733300000:shardId-000000000004' }, streamName: { S: '123456789012:orders:1733300000' },
        shardId: { S: 'shardId-000000000004' }, leaseCounter: { N: '1' }, ownerSwitchesSinceCheckpoint: { N: '0' }, checkpoint: { S: 'LATEST' },
        checkpointSubSequenceNumber: { N: '0' },
      }));
      expect(read.shardId).to.equal('shardId-000000000004');
      expect(read.stream).to.deep.equal({ accountId: '123456789012', streamName: 'orders', creationEpoch: 1733300000n, serialized: '123456789012:orders:1733300000' });
    });

    it('parentShardId stored as a plain string (the KCL itself would read "no parents") is read as the set it means', () => {
      const read = lease(decodeKclItem({ leaseKey: { S: 's' }, leaseCounter: { N: '0' }, ownerSwitchesSinceCheckpoint: { N: '0' }, checkpoint: { S: 'TRIM_HORIZON' }, parentShardId: { S: 'shardId-000000000000' } }));
      expect(read.parentShardIds).to.deep.equal(['shardId-000000000000']);
    });
  });

  describe('items that are not leases, and leases that cannot be read', () => {
    it('3.5\'s other entity types are not leases; an explicit LEASE is', () => {
      for (const entityType of ['LEADER', 'CLIENT_VERSION_MIGRATION', 'TABLE_MIGRATION', 'WORKER_METRIC_STATS', 'STREAM']) {
        // Even with lease-like attributes: the KCL skips every item whose entityType is not LEASE.
        expect(decodeKclItem({ leaseKey: { S: 'x' }, entityType: { S: entityType }, leaseCounter: { N: '1' }, checkpoint: { S: 'LATEST' } })).to.deep.equal({ kind: 'other', leaseKey: 'x', entityType });
      }
      expect(decodeKclItem({ leaseKey: { S: 'x' }, entityType: { S: 'LEASE' }, leaseCounter: { N: '1' }, ownerSwitchesSinceCheckpoint: { N: '0' }, checkpoint: { S: 'LATEST' } }).kind).to.equal('lease');
    });

    it('an item with neither checkpoint nor leaseCounter (a pre-3.5-style stream item) is not a lease', () => {
      expect(decodeKclItem({ leaseKey: { S: 'orders' }, streamArn: { S: 'arn:...' } }).kind).to.equal('other');
    });

    it('a lease without leaseCounter, without checkpoint, or with a checkpoint that is no position is unreadable, with the reason', () => {
      const base = { leaseKey: { S: 'shardId-000000000000' }, ownerSwitchesSinceCheckpoint: { N: '0' } };
      expect(decodeKclItem({ ...base, checkpoint: { S: SEQ } })).to.deep.include({ kind: 'unreadable', problem: 'has no leaseCounter number' });
      expect(decodeKclItem({ ...base, leaseCounter: { N: '1' } })).to.deep.include({ kind: 'unreadable', problem: 'checkpoint is missing' });
      expect(decodeKclItem({ ...base, leaseCounter: { N: '1' }, checkpoint: { S: 'SHARD-END' } })).to.deep.include({ kind: 'unreadable', shardId: 'shardId-000000000000' });
      expect(decodeKclItem({ ...base, leaseCounter: { N: '1' }, checkpoint: { S: SEQ }, checkpointSubSequenceNumber: { N: '-1' } }).kind).to.equal('unreadable');
    });

    it('a multi-stream lease whose streamName or shardId disagrees with its key is unreadable', () => {
      const base = { leaseKey: { S: '1:orders:5:shardId-000000000001' }, leaseCounter: { N: '1' }, ownerSwitchesSinceCheckpoint: { N: '0' }, checkpoint: { S: 'LATEST' } };
      expect(decodeKclItem({ ...base, streamName: { S: '1:orders:6' } }).kind).to.equal('unreadable');
      expect(decodeKclItem({ ...base, shardId: { S: 'shardId-000000000002' } }).kind).to.equal('unreadable');
      expect(decodeKclItem({ ...base, leaseKey: { S: 'orders:shardId-000000000001' } }).kind).to.equal('unreadable');
    });
  });

  describe('writing', () => {
    it('writes exactly the required attributes with the KCL\'s types, sets as SS, and nothing empty', () => {
      const item = encodeKclLease({
        leaseKey: 'shardId-000000000002', shardId: 'shardId-000000000002', leaseCounter: 8n, ownerSwitchesSinceCheckpoint: 0n,
        checkpoint: { type: 'SHARD_END' }, parentShardIds: ['shardId-000000000000', 'shardId-000000000001'], childShardIds: [],
      });
      expect(item).to.deep.equal({
        leaseKey: { S: 'shardId-000000000002' }, leaseCounter: { N: '8' }, ownerSwitchesSinceCheckpoint: { N: '0' },
        checkpoint: { S: 'SHARD_END' }, checkpointSubSequenceNumber: { N: '0' },
        parentShardId: { SS: ['shardId-000000000000', 'shardId-000000000001'] },
      });
    });

    it('what it writes reads back as the same lease (any lease, single- or multi-stream)', () => {
      const shardId = fc.integer({ min: 0, max: 99999 }).map((n) => `shardId-${String(n).padStart(12, '0')}`);
      const checkpoint = fc.oneof(
        fc.constantFrom(...(['TRIM_HORIZON', 'LATEST', 'AT_TIMESTAMP', 'SHARD_END'] as const)).map((type) => ({ type })),
        fc.record({ sequenceNumber: fc.bigInt({ min: 0n, max: 10n ** 56n }).map(String), subSequenceNumber: fc.nat() }).map((p) => ({ type: 'sequence' as const, ...p })),
      );
      const stream = fc.option(fc.record({ accountId: fc.constantFrom('000000000000', '123456789012'), streamName: fc.constantFrom('orders', 'a.b-c_d'), creationEpoch: fc.bigInt({ min: 1n, max: 10n ** 13n }) })
        .map((s) => ({ ...s, serialized: `${s.accountId}:${s.streamName}:${s.creationEpoch}` })), { nil: undefined });
      const leases = fc.record({
        shardId, stream, checkpoint, pending: fc.option(checkpoint, { nil: undefined }), owner: fc.option(fc.constantFrom('worker-1', 'w:2'), { nil: undefined }),
        leaseCounter: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), switches: fc.bigInt({ min: 0n, max: 100n }),
        parents: fc.uniqueArray(shardId, { maxLength: 2 }), children: fc.uniqueArray(shardId, { maxLength: 2 }), hash: fc.boolean(),
      }).map((l): KclLease => ({
        leaseKey: l.stream === undefined ? l.shardId : `${l.stream.serialized}:${l.shardId}`, shardId: l.shardId,
        ...(l.stream === undefined ? {} : { stream: l.stream }), ...(l.owner === undefined ? {} : { leaseOwner: l.owner }),
        leaseCounter: l.leaseCounter, ownerSwitchesSinceCheckpoint: l.switches, checkpoint: l.checkpoint,
        ...(l.pending === undefined ? {} : { pendingCheckpoint: l.pending }),
        parentShardIds: [...l.parents].sort(), childShardIds: [...l.children].sort(),
        ...(l.hash ? { startingHashKey: '0', endingHashKey: '340282366920938463463374607431768211455' } : {}),
      }));
      fc.assert(fc.property(leases, (written) => {
        const read = decodeKclItem(encodeKclLease(written));
        expect(read).to.deep.equal({ kind: 'lease', leaseKey: written.leaseKey, shardId: written.shardId, lease: written });
      }));
    });
  });
});
