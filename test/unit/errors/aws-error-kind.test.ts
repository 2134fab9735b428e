import { expect } from 'chai';
import { classifyAwsError } from '../../../src/errors/aws-error-kind.js';

function awsError(name: string, status?: number, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(name), { name, ...(status === undefined ? {} : { $metadata: { httpStatusCode: status } }), ...extra });
}

describe('classifyAwsError', () => {
  const cases: Array<[unknown, string]> = [
    [awsError('ConditionalCheckFailedException', 400), 'conditional'],
    [awsError('ResourceNotFoundException', 400), 'not-found'],
    [awsError('ResourceInUseException', 400), 'in-use'],
    [awsError('ProvisionedThroughputExceededException', 400), 'transient'],
    [awsError('LimitExceededException', 400), 'transient'],
    [awsError('ThrottlingException', 400), 'transient'],
    [awsError('ExpiredIteratorException', 400), 'transient'],
    [awsError('InternalFailure', 500), 'transient'],
    [awsError('SomethingNew', 503), 'transient'],
    [awsError('SomethingNew', 429), 'transient'],
    [awsError('KMSThrottlingException', 400), 'transient'],
    [Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'transient'],
    [new Error('read ETIMEDOUT'), 'transient'],
    [awsError('AccessDeniedException', 400), 'fatal'],
    [awsError('KMSAccessDeniedException', 400), 'fatal'],
    [awsError('ValidationException', 400), 'fatal'],
    [awsError('SomethingNew', 400), 'fatal'],
    [new Error('a bug'), 'fatal'],
    ['a string', 'fatal'],
  ];
  for (const [error, kind] of cases) {
    it(`${error instanceof Error ? `${error.name}: ${error.message}` : String(error)} is ${kind}`, () => {
      expect(classifyAwsError(error)).to.equal(kind);
    });
  }
});
