// The `streams` options (design §9.2), checked synchronously as every option is.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { expect } from 'chai';
import { ConfigError, Kinsumer, type KinsumerOptions } from '../../src/index.js';

const kinesis = new KinesisClient({ region: 'us-east-1' });
const dynamodb = new DynamoDBClient({ region: 'us-east-1' });
const common = { applicationName: 'billing', kinesis, dynamodb };
const ARN = 'arn:aws:kinesis:eu-west-1:123456789012:stream/payments';

function refused(options: Record<string, unknown>): { option: string; rule: string } {
  try {
    new Kinsumer({ ...common, ...options } as unknown as KinsumerOptions);
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return { option: (error as ConfigError).option, rule: (error as ConfigError).rule };
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(options)}`);
}

describe('options: streams (one group over many streams)', () => {
  it('takes a list of names and ARNs, or a function; no streamName then; the stream check every 60 s by default', () => {
    const listed = new Kinsumer({ ...common, streams: ['orders', ARN] }).options;
    expect(listed.stream).to.equal(undefined);
    expect(listed.streams).to.deep.equal(['orders', ARN]);
    expect(listed.streamCheckFrequencyMs).to.equal(60_000);
    const list = () => Promise.resolve(['orders']);
    const asked = new Kinsumer({ ...common, streams: list, streamCheckFrequencyMs: 30_000 }).options;
    expect(asked.streams).to.equal(list);
    expect(asked.streamCheckFrequencyMs).to.equal(30_000);
    // A copy: changing the array given later changes nothing.
    const given = ['orders'];
    const options = new Kinsumer({ ...common, streams: given }).options;
    given.push('payments');
    expect(options.streams).to.deep.equal(['orders']);
    expect(new Kinsumer({ ...common, streamName: 'orders' }).options.streams).to.equal(undefined);
  });

  it('refuses streams with streamName or streamArn, an empty list, a stream twice, a bad entry', () => {
    expect(refused({ streams: ['orders'], streamName: 'orders' })).to.deep.equal({ option: 'streams', rule: 'give streams or streamName, not both' });
    expect(refused({ streams: ['orders'], streamArn: ARN })).to.deep.equal({ option: 'streams', rule: 'give streams or streamArn, not both' });
    expect(refused({ streams: [] })).to.deep.equal({ option: 'streams', rule: 'must name at least one stream' });
    expect(refused({ streams: ['orders', 'orders'] })).to.deep.equal({ option: 'streams', rule: 'names orders twice' });
    expect(refused({ streams: ['orders', 7] }).rule).to.match(/^7 is neither a stream name/);
    expect(refused({ streams: 'orders' }).rule).to.match(/must be an array/);
    expect(refused({}).option).to.equal('streamName');
  });

  it('streamCheckFrequencyMs: only with streams, and not shorter than leaderActionFrequencyMs (a list longer than 60 s between checks follows it)', () => {
    expect(refused({ streamName: 'orders', streamCheckFrequencyMs: 60_000 }).option).to.equal('streamCheckFrequencyMs');
    expect(refused({ streams: ['orders'], streamCheckFrequencyMs: 5000 })).to.deep.include({ option: 'streamCheckFrequencyMs' });
    expect(refused({ streams: ['orders'], streamCheckFrequencyMs: -1 }).option).to.equal('streamCheckFrequencyMs');
    expect(new Kinsumer({ ...common, streams: ['orders'], leaderActionFrequencyMs: 90_000, leaseTtlMs: 200_000 }).options.streamCheckFrequencyMs).to.equal(90_000);
  });
});
