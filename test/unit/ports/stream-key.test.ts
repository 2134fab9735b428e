// The one rule for naming a shard of a group that reads several streams (ports/stream-key.ts).
import { expect } from 'chai';
import { ConfigError } from '../../../src/errors/kinsumer-errors.js';
import {
  accountOfArn, checkStreamList, nameOf, names, parseShardKey, parseStreamIdentifier, shardKey, streamIdentity,
} from '../../../src/ports/stream-key.js';

const S3 = 'shardId-000000000003';

describe('multi-stream shard keys (the KCL\'s account:stream:creationEpoch:shardId)', () => {
  it('a stream is its account, its name and its creation time in whole seconds (as the KCL\'s applications write it)', () => {
    const orders = streamIdentity('123456789012', 'orders', new Date(1_733_300_000_999));
    expect(orders.serialized).to.equal('123456789012:orders:1733300000');
    expect(orders.creationEpoch).to.equal(1_733_300_000n);
    expect(shardKey(orders, S3)).to.equal(`123456789012:orders:1733300000:${S3}`);
  });

  it('a key is read back whole, and only a key is: a plain shard id (a one-stream group\'s, the Go kinsumer\'s) is not one', () => {
    const key = parseShardKey(`123456789012:orders.v2_x-1:1733300000:${S3}`);
    expect(key?.shardId).to.equal(S3);
    expect(key?.stream).to.deep.equal({ accountId: '123456789012', streamName: 'orders.v2_x-1', creationEpoch: 1_733_300_000n, serialized: '123456789012:orders.v2_x-1:1733300000' });
    for (const notAKey of [S3, 'orders:1733300000:shardId-1', 'x:orders:1:shardId-1', '123:or/ders:1:shardId-1', '123:orders:1:']) {
      expect(parseShardKey(notAKey), notAKey).to.equal(undefined);
    }
    expect(parseStreamIdentifier('123456789012:orders:1733300000')?.streamName).to.equal('orders');
    expect(parseStreamIdentifier(`123456789012:orders:1733300000:${S3}`)).to.equal(undefined);
  });

  it('the same stream created again is another stream: its shards get other keys', () => {
    const first = streamIdentity('123456789012', 'orders', new Date(1_733_300_000_000));
    const again = streamIdentity('123456789012', 'orders', new Date(1_733_300_060_000));
    expect(shardKey(first, S3)).not.to.equal(shardKey(again, S3));
  });

  it('a name names the stream in any account; an ARN only in its own', () => {
    const orders = { accountId: '123456789012', streamName: 'orders' };
    expect(names('orders', orders)).to.equal(true);
    expect(names('arn:aws:kinesis:eu-west-1:123456789012:stream/orders', orders)).to.equal(true);
    expect(names('arn:aws:kinesis:eu-west-1:999999999999:stream/orders', orders)).to.equal(false);
    expect(names('payments', orders)).to.equal(false);
    expect(nameOf('arn:aws:kinesis:eu-west-1:123456789012:stream/orders')).to.equal('orders');
    expect(accountOfArn('arn:aws:kinesis:eu-west-1:123456789012:stream/orders')).to.equal('123456789012');
    expect(accountOfArn('orders')).to.equal(undefined);
  });

  it('a list of streams: names or ARNs, none twice, not empty (a function\'s answer may be empty)', () => {
    const arn = 'arn:aws:kinesis:eu-west-1:123456789012:stream/orders';
    expect(checkStreamList(['orders', arn], 'streams')).to.deep.equal(['orders', arn]);
    expect(checkStreamList([], 'streams', true)).to.deep.equal([]);
    const refused = (value: unknown) => {
      try {
        checkStreamList(value, 'streams');
      } catch (error) {
        expect(error).to.be.instanceOf(ConfigError);
        return (error as ConfigError).rule;
      }
      return 'accepted';
    };
    expect(refused([])).to.equal('must name at least one stream');
    expect(refused(['orders', 'orders'])).to.equal('names orders twice');
    expect(refused(['or/ders'])).to.match(/neither a stream name/);
    expect(refused('orders')).to.match(/must be an array/);
  });
});
