import { expect } from 'chai';
import { decodeKclItem, encodeKclLease } from '../../../src/kcl/lease-row.js';
import { accountOf, selectStreamLeases } from '../../../src/kcl/stream-leases.js';

const S0 = 'shardId-000000000000';
const CREATED_MS = 1_733_300_000_123;
const item = (leaseKey: string) => decodeKclItem(encodeKclLease({
  leaseKey, shardId: leaseKey.split(':').at(-1) ?? leaseKey, leaseCounter: 1n, ownerSwitchesSinceCheckpoint: 0n,
  checkpoint: { type: 'LATEST' }, parentShardIds: [], childShardIds: [],
}));
const orders = { streamName: 'orders', accountId: '123456789012', creationMs: CREATED_MS };

describe('which KCL leases are this stream\'s', () => {
  it('single-stream keys (shard ids) are all the stream\'s', () => {
    const leases = selectStreamLeases([item(S0)], orders);
    expect([...leases.byShard.keys()]).to.deep.equal([S0]);
    expect(leases.multiStream).to.equal(false);
  });

  it('multi-stream keys match by name, account and creation epoch, in seconds or in milliseconds', () => {
    for (const epoch of ['1733300000', '1733300000123']) {
      const leases = selectStreamLeases([item(`123456789012:orders:${epoch}:${S0}`)], orders);
      expect([...leases.byShard.keys()], epoch).to.deep.equal([S0]);
      expect(leases.identifier?.serialized).to.equal(`123456789012:orders:${epoch}`);
    }
  });

  it('leases of other streams and other accounts are counted and left alone; items that are not leases too', () => {
    const leases = selectStreamLeases([
      item(`123456789012:payments:1733300000:${S0}`), item(`999999999999:orders:1733300000:${S0}`),
      decodeKclItem({ leaseKey: { S: 'Leader' }, entityType: { S: 'LEADER' } }),
    ], orders);
    expect(leases.byShard.size).to.equal(0);
    expect([leases.otherStreams, leases.otherItems]).to.deep.equal([2, 1]);
  });

  it('a lease of an older stream of the same name is set apart, with a reason that says which', () => {
    const leases = selectStreamLeases([item(`123456789012:orders:1600000000:${S0}`), item(`123456789012:orders:1733300000:${S0}`)], orders);
    expect([...leases.byShard.keys()]).to.deep.equal([S0]);
    expect(leases.otherIncarnations).to.have.length(1);
    expect(leases.otherIncarnations[0]?.reason).to.equal(`a lease of an older stream named orders (123456789012:orders:1600000000); this one was created ${new Date(CREATED_MS).toISOString()}`);
  });

  it('with no creation time, one epoch is taken and several are all set apart', () => {
    const unknown = { ...orders, creationMs: undefined };
    expect(selectStreamLeases([item(`123456789012:orders:5:${S0}`)], unknown).byShard.size).to.equal(1);
    const two = selectStreamLeases([item(`123456789012:orders:5:${S0}`), item(`123456789012:orders:6:${S0}`)], unknown);
    expect([two.byShard.size, two.otherIncarnations.length]).to.deep.equal([0, 2]);
  });

  it('reads the account of a stream ARN', () => {
    expect(accountOf('arn:aws:kinesis:eu-west-1:123456789012:stream/orders')).to.equal('123456789012');
    expect(accountOf('orders')).to.equal(undefined);
  });
});
