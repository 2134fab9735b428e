import { DynamoDBClient, type GetItemCommandInput, type TableDescription, type TransactWriteItemsCommandInput } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { type Observable, VirtualTimeScheduler, of, throwError } from 'rxjs';
import { createCheckpointer } from '../../../src/checkpoint/checkpointer.js';
import { Dynamo, type Item } from '../../../src/dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../../src/dynamodb/lease-store.js';
import { TableNotFoundError } from '../../../src/errors/kinsumer-errors.js';
import { WriteRejectedError } from '../../../src/errors/write-errors.js';
import type { HeldLease } from '../../../src/ports/lease-store.js';
import type { WritesOutcome } from '../../../src/ports/shard-tracker.js';
import { awsError } from '../../../src/testing/memory-stream.js';
import { advance } from '../../support/virtual-time.js';

// R17: DynamoDB answers a TransactWriteItems on a missing table with ResourceNotFoundException
// without saying which table. A missing checkpoints table is the lease's fault (TableNotFoundError,
// which stops the client), not the record's (WriteRejectedError, to onFailure). DynamoDB's answers
// are injected (no local server deletes a table under a transaction on cue): the real
// DynamoLeaseStore and checkpointer run over a Dynamo whose calls answer as a server would.

const SHARD = 'shardId-000000000000';
const CHECKPOINTS = 'app_checkpoints';
const notFound = () => awsError('ResourceNotFoundException', { message: 'Requested resource not found' });

/** DynamoDB where `totals` exists and the checkpoints table may not; every transaction finds a table missing. */
class MissingTableDynamo extends Dynamo {
  readonly calls: string[] = [];

  constructor(private readonly checkpointsExist: boolean) {
    super(new DynamoDBClient({ region: 'local' }));
  }

  override describeTable(table: string): Observable<TableDescription | undefined> {
    this.calls.push(`DescribeTable ${table}`);
    if (table === 'totals') return of({ TableName: table, KeySchema: [{ AttributeName: 'account', KeyType: 'HASH' }] });
    return throwError(notFound);
  }

  override transactWriteItems(_input: TransactWriteItemsCommandInput): Observable<void> {
    this.calls.push('TransactWriteItems');
    return throwError(notFound);
  }

  override getItem(input: GetItemCommandInput): Observable<Item | undefined> {
    this.calls.push(`GetItem ${input.TableName}`);
    if (input.TableName === CHECKPOINTS && !this.checkpointsExist) return throwError(notFound);
    return of(undefined);
  }
}

function run(checkpointsExist: boolean) {
  const scheduler = new VirtualTimeScheduler();
  const dynamo = new MissingTableDynamo(checkpointsExist);
  const store = new DynamoLeaseStore({ dynamo, table: CHECKPOINTS, clientId: 'me', clientName: 'me', leaseTtlMs: 3_000, now: () => scheduler.now(), scheduler });
  const lease: HeldLease = { shardId: SHARD, ownerId: 'me', leaseCounter: 1, checkpoint: undefined, finished: false };
  const checkpointer = createCheckpointer({ store, lease, commitFrequencyMs: 100, renewIntervalMs: 1_000, scheduler, emit: () => undefined });
  let laneError: unknown;
  checkpointer.run$.subscribe({ error: (error: unknown) => { laneError = error; } });
  const ticket = checkpointer.track({ sequenceNumber: '49590338271490256608559692538361571095921575989136588898' });
  let outcome: WritesOutcome | undefined;
  checkpointer.ackWithWrites?.([ticket], [`${SHARD}/1`], [{
    Update: { TableName: 'totals', Key: { account: { S: 'a' } }, UpdateExpression: 'ADD amount :a', ExpressionAttributeValues: { ':a': { N: '1' } } },
  }], (o) => { outcome = o; });
  advance(scheduler, 1_000);
  return { outcome, laneError, calls: dynamo.calls };
}

describe('a table missing under a transaction of records\' writes (R17)', () => {
  it('the checkpoints table missing: the lane fails with TableNotFoundError naming it; the record is not blamed', () => {
    const { outcome, laneError, calls } = run(false);
    expect(calls).to.include('TransactWriteItems');
    expect(laneError, `calls: ${calls.join(', ')}`).to.be.instanceOf(TableNotFoundError).that.deep.includes({ table: CHECKPOINTS });
    expect(outcome?.kind, `outcome: ${outcome?.kind === 'failed' ? outcome.error.message : outcome?.kind}`).to.equal('abandoned');
  });

  it('a user table missing (the checkpoints table is there): that record\'s WriteRejectedError, the lane goes on', () => {
    const { outcome, laneError } = run(true);
    expect(outcome?.kind).to.equal('failed');
    expect(outcome?.kind === 'failed' ? outcome.error : undefined).to.be.instanceOf(WriteRejectedError);
    expect(laneError).to.equal(undefined);
  });
});
