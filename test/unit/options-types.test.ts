import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { expect } from 'chai';
import { ConfigError, Kinsumer, type KinsumerOptions } from '../../src/index.js';

// Compile-time checks: tsc (test/static.test.ts) fails on a `@ts-expect-error` line that has no
// error, so each one below proves the type refuses that shape. The runtime checks are for
// JavaScript callers, whom no type stops.
const kinesis = new KinesisClient({ region: 'us-east-1' });
const dynamodb = new DynamoDBClient({ region: 'us-east-1' });
const arn = 'arn:aws:kinesis:eu-west-1:123456789012:stream/events';
const clients = { applicationName: 'billing', kinesis, dynamodb };

// @ts-expect-error neither streamName nor streamArn
const neither: KinsumerOptions = { ...clients };
// @ts-expect-error both streamName and streamArn
const both: KinsumerOptions = { ...clients, streamName: 'events', streamArn: arn };
// @ts-expect-error streams and streamName
const streamsAndName: KinsumerOptions = { ...clients, streams: ['events'], streamName: 'events' };
// @ts-expect-error streams and streamArn
const streamsAndArn: KinsumerOptions = { ...clients, streams: ['events'], streamArn: arn };
const byList: KinsumerOptions = { ...clients, streams: ['events', arn] };
const byFunction: KinsumerOptions = { ...clients, streams: () => Promise.resolve(['events']) };
const byName: KinsumerOptions = { ...clients, streamName: 'events' };
const byArn: KinsumerOptions = { ...clients, streamArn: arn };

describe('options: the stream, by name or by ARN (types and run time)', () => {
  it('accepts exactly one of streamName and streamArn', () => {
    expect(new Kinsumer(byName).options.stream).to.deep.equal({ streamName: 'events' });
    expect(new Kinsumer(byArn).options.stream).to.deep.equal({ streamArn: arn });
  });

  it('still refuses neither and both at run time, for JavaScript callers (ConfigError)', () => {
    expect(() => new Kinsumer(neither)).to.throw(ConfigError, /streamName: is required/);
    expect(() => new Kinsumer(both)).to.throw(ConfigError, /not both/);
    expect(() => new Kinsumer(streamsAndName)).to.throw(ConfigError, /streams: give streams or streamName, not both/);
    expect(() => new Kinsumer(streamsAndArn)).to.throw(ConfigError, /streams: give streams or streamArn, not both/);
  });

  it('or streams: a list or a function, alone', () => {
    expect(new Kinsumer(byList).options.streams).to.deep.equal(['events', arn]);
    expect(new Kinsumer(byFunction).options.stream).to.equal(undefined);
  });
});
