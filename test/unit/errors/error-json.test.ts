// Errors that survive JSON.stringify (issue 26 item 7, newcomer trial 3 §3: a `retrying` event
// logged as JSON read `{"retriable":true,"name":"KinsumerError"}`): the message, the typed fields
// and the cause chain, bounded, without credentials or record payloads.
import { expect } from 'chai';
import {
  CorruptCheckpointError, EndpointError, KinsumerError, RecordDecodeError, StartTimeoutError, TableNotFoundError,
  type KinsumerEvent,
} from '../../../src/index.js';
import { explainEndpointError } from '../../../src/errors/endpoint-error.js';
import { recordJson } from '../../../src/reading/payload-decoding.js';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED', errno: -111, syscall: 'connect', address: '127.0.0.1', port: 9 });

/** The error the table check reports while DynamoDB is unreachable, as the trial saw it. */
function describingTableFailed(): KinsumerError {
  const endpoint = explainEndpointError(refused(), { service: 'DynamoDB', endpoint: 'http://127.0.0.1:9' });
  return new KinsumerError('describing table down_clients failed', { cause: endpoint, retriable: true });
}

const parsed = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe('errors as JSON', () => {
  it('a retrying event keeps the message, retriable and the whole cause chain, down to the socket error', () => {
    const event: KinsumerEvent = { type: 'retrying', operation: 'prepare', attempt: 1, delayMs: 100, error: describingTableFailed() };
    expect(parsed(event)).to.deep.equal({
      type: 'retrying', operation: 'prepare', attempt: 1, delayMs: 100,
      error: {
        name: 'KinsumerError', message: 'describing table down_clients failed: cannot reach DynamoDB at http://127.0.0.1:9: connection refused (is the server running, and is this its port?)', retriable: true,
        cause: {
          name: 'EndpointError', message: 'cannot reach DynamoDB at http://127.0.0.1:9: connection refused (is the server running, and is this its port?)',
          retriable: true, service: 'DynamoDB', endpoint: 'http://127.0.0.1:9',
          cause: { name: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:9', code: 'ECONNREFUSED' },
        },
      },
    });
  });

  it('every subclass brings its typed fields; an AWS error its name, message and HTTP status', () => {
    const aws = Object.assign(new Error('Requested resource not found'), {
      name: 'ResourceNotFoundException', $fault: 'client', $metadata: { httpStatusCode: 400, requestId: 'R1', attempts: 1 },
    });
    expect(parsed(new TableNotFoundError('app_clients', { cause: aws }))).to.deep.equal({
      name: 'TableNotFoundError', message: new TableNotFoundError('app_clients').message, retriable: false, table: 'app_clients',
      cause: { name: 'ResourceNotFoundException', message: 'Requested resource not found', httpStatusCode: 400 },
    });
    expect(parsed(new CorruptCheckpointError('shardId-1', 'LeaseCounter', 'is not a number'))).to.deep.include({ shardId: 'shardId-1', attribute: 'LeaseCounter', retriable: false });
    expect(parsed(new StartTimeoutError(60000))).to.deep.include({ name: 'StartTimeoutError', timeoutMs: 60000, retriable: true });
  });

  it('a RecordDecodeError says which record and why, never the payload (JSON.parse quotes its input)', () => {
    const payload = 'SECRET-PAYLOAD {not json';
    let error: unknown;
    try {
      recordJson({ shardId: 'shardId-1', sequenceNumber: '4968', subSequenceNumber: undefined, data: new TextEncoder().encode(payload) });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).to.be.instanceOf(RecordDecodeError);
    expect(String((error as Error).cause)).to.contain('SECRET'); // what would leak
    const json = JSON.stringify(error);
    expect(json).to.not.contain('SECRET');
    expect(parsed(error)).to.deep.include({ name: 'RecordDecodeError', shardId: 'shardId-1', sequenceNumber: '4968', format: 'json', retriable: false });
    expect((parsed(error) as { cause: unknown }).cause).to.deep.equal({ name: 'SyntaxError', message: 'not valid JSON' });
  });

  it('leaves out fields that are objects (they could hold a record) and masks credentials in messages', () => {
    class WithRecord extends KinsumerError {
      readonly record = { data: new TextEncoder().encode('PAYLOAD'), partitionKey: 'KEY' };
      readonly count = 3;
    }
    const signature = Object.assign(new Error('The security token included AKIAABCDEFGHIJKLMNOP, x-amz-security-token:TOKEN123 Signature=abcdef0123'), { name: 'InvalidSignatureException' });
    const json = JSON.stringify(new WithRecord('x', { cause: signature }));
    for (const secret of ['PAYLOAD', 'KEY', 'ABCDEFGHIJKLMNOP', 'TOKEN123', 'abcdef0123']) expect(json).to.not.contain(secret);
    expect(parsed(new WithRecord('x'))).to.deep.equal({ name: 'WithRecord', message: 'x', retriable: false, count: 3 });
  });

  it('the cause chain is bounded (a cycle, or a long chain, ends)', () => {
    const a = new KinsumerError('a');
    const b = new KinsumerError('b', { cause: a });
    Object.defineProperty(a, 'cause', { value: b });
    const json = parsed(a) as { cause?: unknown };
    let depth = 0;
    for (let c: unknown = json; typeof c === 'object' && c !== null; c = (c as { cause?: unknown }).cause) depth += 1;
    expect(depth).to.equal(6);
    expect(JSON.stringify(json)).to.contain('(more causes)');
  });

  it('a thrown non-Error cause is written as its kind (a string as it is)', () => {
    expect(parsed(new KinsumerError('x', { cause: 'plain words' }))).to.deep.include({ cause: 'plain words' });
    expect(parsed(new KinsumerError('x', { cause: { data: 'PAYLOAD' } }))).to.deep.include({ cause: '(a thrown object)' });
  });
});

describe('StartTimeoutError', () => {
  it('names the root cause: the innermost EndpointError, not the wrapper around it', () => {
    const error = new StartTimeoutError(60000, { cause: describingTableFailed() });
    expect(error.message).to.equal('could not start within 60000 ms: cannot reach DynamoDB at http://127.0.0.1:9: connection refused '
      + '(is the server running, and is this its port?) (last error: describing table down_clients failed)');
  });

  it('without an EndpointError, the innermost error, with its name', () => {
    const throttled = Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
    expect(new StartTimeoutError(5000, { cause: new KinsumerError('describing table a_clients failed', { cause: throttled }) }).message)
      .to.equal('could not start within 5000 ms: ThrottlingException: Rate exceeded (last error: describing table a_clients failed)');
    expect(new StartTimeoutError(5000, { cause: throttled }).message).to.equal('could not start within 5000 ms: ThrottlingException: Rate exceeded');
    expect(new StartTimeoutError(5000, { cause: new EndpointError('Kinesis', 'http://h:1', 'cannot reach Kinesis at http://h:1', { cause: refused(), retriable: true }) }).message)
      .to.equal('could not start within 5000 ms: cannot reach Kinesis at http://h:1');
    expect(new StartTimeoutError(5000).message).to.equal('could not start within 5000 ms');
  });
});
