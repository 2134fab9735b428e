import { expect } from 'chai';
import {
  ConfigError, KinsumerError, LeaseLostError, ShutdownTimeoutError, StreamNotFoundError, TableNotFoundError,
} from '../../../src/index.js';

describe('errors', () => {
  it('keep the AWS error as cause and say whether retrying may help', () => {
    const aws = Object.assign(new Error('Requested resource not found'), { name: 'ResourceNotFoundException' });
    const error = new StreamNotFoundError('events', { cause: aws });
    expect(error).to.be.instanceOf(KinsumerError).and.instanceOf(Error);
    expect(error.cause).to.equal(aws);
    expect(error.retriable).to.equal(false);
    expect(error.name).to.equal('StreamNotFoundError');
    expect(error.message).to.contain('events');
    expect(new KinsumerError('x', { retriable: true }).retriable).to.equal(true);
  });

  it('carry the facts a handler needs', () => {
    expect(new TableNotFoundError('app_clients').table).to.equal('app_clients');
    expect(new LeaseLostError('shardId-000000000001').shardId).to.equal('shardId-000000000001');
    const timeout = new ShutdownTimeoutError(500, ['release shardId-1']);
    expect(timeout.timeoutMs).to.equal(500);
    expect(timeout.message).to.contain('release shardId-1');
    const config = new ConfigError('leaseTtlMs', 'must be positive');
    expect([config.option, config.rule, config.name]).to.deep.equal(['leaseTtlMs', 'must be positive', 'ConfigError']);
  });
});
