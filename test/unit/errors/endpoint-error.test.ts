import { expect } from 'chai';
import { classifyAwsError } from '../../../src/errors/aws-error-kind.js';
import { EndpointError, explainEndpointError } from '../../../src/errors/endpoint-error.js';
import { KinsumerError, StreamNotFoundError } from '../../../src/index.js';

// The shapes below are the ones the SDK produced against the real servers (see
// test/integration/first-errors.test.ts); here, the cases a local run cannot reach.
describe('explainEndpointError', () => {
  const socketError = (code: string, fields: object) => Object.assign(new Error(`getaddrinfo ${code}`), { code, ...fields });

  it('names the host from the socket error when no endpoint was configured (AWS\'s own endpoints)', () => {
    const error = explainEndpointError(socketError('ENOTFOUND', { hostname: 'kinesis.eu-west-9.amazonaws.com' }), { service: 'Kinesis', endpoint: undefined });
    expect(error?.message).to.equal('cannot reach Kinesis at kinesis.eu-west-9.amazonaws.com: host not found (is the host name right?)');
    expect([error?.endpoint, error?.retriable]).to.deep.equal(['kinesis.eu-west-9.amazonaws.com', true]);
  });

  it('finds the refusal under the HTTP/2 handler\'s own error (its cause)', () => {
    const refused = socketError('ECONNREFUSED', { address: '127.0.0.1', port: 9 });
    const outer = Object.assign(new Error('The pending stream has been canceled'), { code: 'ERR_HTTP2_STREAM_CANCEL', cause: refused });
    const error = explainEndpointError(outer, { service: 'Kinesis', endpoint: 'http://127.0.0.1:9' });
    expect(error?.message).to.equal('cannot reach Kinesis at http://127.0.0.1:9: connection refused (is the server running, and is this its port?)');
    expect(error?.cause).to.equal(outer);
  });

  it('leaves AWS answers and kinsumer\'s own errors alone', () => {
    const throttled = Object.assign(new Error('slow down'), { name: 'ProvisionedThroughputExceededException', $metadata: { httpStatusCode: 400 } });
    expect(explainEndpointError(throttled, { service: 'DynamoDB', endpoint: undefined })).to.equal(undefined);
    expect(explainEndpointError(new StreamNotFoundError('s'), { service: 'Kinesis', endpoint: undefined })).to.equal(undefined);
  });
});

describe('classifyAwsError on kinsumer errors', () => {
  it('judges a kinsumer error by its retriable flag (an unreachable endpoint is retried, a wrong protocol is not)', () => {
    expect(classifyAwsError(new EndpointError('DynamoDB', 'http://127.0.0.1:9', 'cannot reach DynamoDB', { cause: undefined, retriable: true }))).to.equal('transient');
    expect(classifyAwsError(new EndpointError('Kinesis', 'http://127.0.0.1:9', 'no HTTP/2', { cause: undefined, retriable: false }))).to.equal('fatal');
    expect(classifyAwsError(new KinsumerError('describing table t failed', { retriable: true }))).to.equal('transient');
  });
});
