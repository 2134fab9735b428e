import { expect } from 'chai';
import {
  ConfigError, CorruptCheckpointError, EndpointError, KinsumerError, LeaseLostError, ShardReadError, StreamNotFoundError, TableNotFoundError,
} from '../../../src/index.js';
import { stopsTheClient } from '../../../src/errors/fault-scope.js';
import { awsError } from '../../../src/testing/memory-stream.js';

describe('stopsTheClient: group-wide faults against a shard\'s own', () => {
  it('group-wide: missing table or stream, bad configuration, a non-AWS endpoint, access denied and KMS (also wrapped)', () => {
    const groupWide = [
      new TableNotFoundError('app_clients'),
      new StreamNotFoundError('events'),
      new ConfigError('readMode', 'no fan-out'),
      new EndpointError('Kinesis', 'http://x', 'not AWS', { cause: new Error('x'), retriable: false }),
      awsError('AccessDeniedException'),
      awsError('KMSAccessDeniedException'),
      new ShardReadError('shardId-0', 'GetRecords', awsError('AccessDeniedException')),
      new KinsumerError('commit of shard shardId-0 failed', { cause: awsError('UnrecognizedClientException') }),
    ];
    expect(groupWide.filter((e) => !stopsTheClient(e)).map((e) => e.message)).to.deep.equal([]);
  });

  it('a shard\'s own: an unknown AWS error, a malformed record, a corrupt row, a lost lease, an unreachable endpoint (retried)', () => {
    const own = [
      awsError('SomethingNewException'),
      new RangeError('not a sequence number: '),
      new CorruptCheckpointError('shardId-0', 'SequenceNumber', 'is not one'),
      new LeaseLostError('shardId-0'),
      new ShardReadError('shardId-0', 'GetRecords', awsError('SomethingNewException')),
      new KinsumerError('commit of shard shardId-0 failed', { cause: awsError('SomethingNewException') }),
      new EndpointError('DynamoDB', 'http://x', 'unreachable', { cause: new Error('x'), retriable: true }),
    ];
    expect(own.filter((e) => stopsTheClient(e)).map((e) => e.message)).to.deep.equal([]);
  });
});
