import {
  BatchGetItemCommand, DynamoDBClient, GetItemCommand, PutItemCommand, ScanCommand, UpdateItemCommand, type AttributeValue,
  type GetItemCommandInput, type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { expect } from 'chai';
import { type Observable, Subject, firstValueFrom, lastValueFrom, mergeMap, take } from 'rxjs';
import { createTables } from '../../../src/dynamodb/tables.js';
import { rfc1123z } from '../../../src/dynamodb/codec.js';
import { Dynamo, type Item } from '../../../src/dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../../src/dynamodb/lease-store.js';
import { CorruptCheckpointError, KinsumerError, LeaseLostError, TableNotFoundError } from '../../../src/errors/kinsumer-errors.js';
import type { HeldLease, StoredCheckpoint } from '../../../src/ports/lease-store.js';
import { uniqueName, useLocalAws } from '../../support/local.js';

// Sequence numbers as Kinesis writes them (56 digits) and Go-style Unix-nanosecond timestamps.
const SEQ = '49590338271490256608559692538361571095921575989136588898';
const NEXT_SEQ = '49590338271490256608559692538361571095921575989136588999';
const NOW_MS = 1_764_694_956_123;
const TTL_MS = 10_000;
const ns = (ms: number) => `${ms}000000`;
const position = (sequenceNumber: string, subSequenceNumber?: number): StoredCheckpoint => ({
  type: 'position', position: subSequenceNumber === undefined ? { sequenceNumber } : { sequenceNumber, subSequenceNumber },
});

/** Dynamo whose GetItem answers only after `hook` ran (to put a competing write between a capture's read and its write). */
class HookedDynamo extends Dynamo {
  constructor(client: DynamoDBClient, private readonly hook: () => Promise<void>) {
    super(client);
  }

  override getItem(input: GetItemCommandInput): Observable<Item | undefined> {
    return super.getItem(input).pipe(mergeMap(async (item) => {
      await this.hook();
      return item;
    }));
  }
}

describe('DynamoLeaseStore (dynalite)', () => {
  const local = useLocalAws({ kinesis: 'kinesalite', dynamodb: 'dynalite' });
  let table: string;

  before(async () => {
    const app = uniqueName('leases');
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    table = `${app}_checkpoints`;
  });

  const store = (clientId: string, now: () => number = () => NOW_MS, dynamo: Dynamo = new Dynamo(local().dynamodb)) =>
    new DynamoLeaseStore({ dynamo, table, clientId, clientName: `host-${clientId}`, leaseTtlMs: TTL_MS, now });
  const raw = async (shard: string) => (await local().dynamodb.send(new GetItemCommand({ TableName: table, Key: { Shard: { S: shard } }, ConsistentRead: true }))).Item;
  const put = (item: Record<string, AttributeValue>) => local().dynamodb.send(new PutItemCommand({ TableName: table, Item: item }));
  const captured = async (s: DynamoLeaseStore, shard: string): Promise<HeldLease> => {
    const held = await firstValueFrom(s.capture(shard));
    if (held === undefined) throw new Error(`capture of ${shard} failed`);
    return held;
  };
  const write = (o: Observable<void>) => lastValueFrom(o, { defaultValue: undefined });

  describe('rows the Go kinsumer wrote', () => {
    const goRows: Array<[string, Record<string, AttributeValue>, StoredCheckpoint | undefined]> = [
      ['released (owner removed)', { SequenceNumber: { S: SEQ }, LastUpdate: { N: ns(NOW_MS - 1000) }, LastUpdateRFC: { S: rfc1123z(NOW_MS - 1000) } }, position(SEQ)],
      ['committed by a full put (NULL-typed owner and Finished)', {
        SequenceNumber: { S: SEQ }, LastUpdate: { N: ns(NOW_MS - 1000) }, LastUpdateRFC: { S: rfc1123z(NOW_MS - 1000) },
        OwnerID: { NULL: true }, OwnerName: { NULL: true }, Finished: { NULL: true }, FinishedRFC: { NULL: true },
      }, position(SEQ)],
      ['never consumed (NULL sequence number)', { SequenceNumber: { NULL: true }, OwnerID: { NULL: true }, LastUpdate: { N: ns(NOW_MS - 1000) } }, undefined],
      ['reset by an operator to LATEST', { SequenceNumber: { S: 'LATEST' }, LastUpdate: { N: ns(NOW_MS - 1000) } }, { type: 'LATEST' }],
      ['held by a client that stopped renewing (seen unchanged for a TTL)', {
        SequenceNumber: { S: SEQ }, OwnerID: { S: 'go-client' }, OwnerName: { S: 'go-host' }, LastUpdate: { N: ns(NOW_MS - TTL_MS) },
      }, position(SEQ)],
    ];
    for (const [what, attributes, checkpoint] of goRows) {
      it(`captures a row ${what} and resumes from its checkpoint`, async () => {
        const shard = uniqueName('go');
        await put({ Shard: { S: shard }, ...attributes });
        let nowMs = NOW_MS - TTL_MS;
        const me = store('me', () => nowMs);
        // An owned row is watched for a TTL first; a free one is taken at the first look.
        if (attributes.OwnerID?.S !== undefined) expect(await firstValueFrom(me.capture(shard)), 'owned, first seen now').to.equal(undefined);
        nowMs = NOW_MS;
        const held = await captured(me, shard);
        const { capturedAt, ...lease } = held;
        expect(lease).to.deep.equal({ shardId: shard, ownerId: 'me', leaseCounter: 1, checkpoint, finished: false });
        expect(capturedAt, 'DynamoDB\'s clock at the capture (its Date)').to.be.instanceOf(Date);
        const row = await raw(shard);
        expect(row?.SequenceNumber, 'the checkpoint is kept as the Go kinsumer wrote it').to.deep.equal(attributes.SequenceNumber);
        expect(row?.OwnerID).to.deep.equal({ S: 'me' });
        expect(row?.OwnerName).to.deep.equal({ S: 'host-me' });
        expect(row?.LastUpdate, 'Unix nanoseconds, exact beyond 2^53').to.deep.equal({ N: ns(NOW_MS) });
        expect(row?.LastUpdateRFC).to.deep.equal({ S: rfc1123z(NOW_MS) });
        expect(row?.LeaseCounter).to.deep.equal({ N: '1' });
      });
    }

    it('does not take a Go row whose owner renewed within the TTL it was watched, and writes nothing', async () => {
      const shard = uniqueName('live');
      const item = { Shard: { S: shard }, SequenceNumber: { S: SEQ }, OwnerID: { S: 'go-client' }, LastUpdate: { N: ns(NOW_MS - 60 * TTL_MS) } };
      await put(item);
      let nowMs = NOW_MS;
      const me = store('me', () => nowMs);
      expect(await firstValueFrom(me.capture(shard)), 'however old its LastUpdate').to.equal(undefined);
      nowMs += TTL_MS - 1;
      const renewed = { ...item, LastUpdate: { N: ns(NOW_MS - 59 * TTL_MS) } };
      await put(renewed);
      expect(await firstValueFrom(me.capture(shard))).to.equal(undefined);
      nowMs += TTL_MS - 1;
      expect(await firstValueFrom(me.capture(shard))).to.equal(undefined);
      expect(await raw(shard)).to.deep.equal(renewed);
    });

    it('keeps a Go row\'s Finished on capture and on release', async () => {
      const shard = uniqueName('finished');
      const finished = { Finished: { N: ns(NOW_MS - 5000) }, FinishedRFC: { S: rfc1123z(NOW_MS - 5000) } };
      await put({ Shard: { S: shard }, SequenceNumber: { S: SEQ }, LastUpdate: { N: ns(NOW_MS - 5000) }, ...finished });
      const s = store('me');
      const held = await captured(s, shard);
      expect(held.finished).to.equal(true);
      await write(s.release(held, { checkpoint: undefined, finished: false }));
      expect(await raw(shard)).to.deep.include(finished);
    });

    it('leaves a released row the Go kinsumer can capture and resume from (its capture condition holds)', async () => {
      const shard = uniqueName('to-go');
      const s = store('me');
      const held = await captured(s, shard);
      await write(s.release(held, { checkpoint: position(NEXT_SEQ), finished: false }));
      const go = await local().dynamodb.send(new UpdateItemCommand({
        TableName: table,
        Key: { Shard: { S: shard } },
        UpdateExpression: 'SET OwnerID = :me, LastUpdate = :now',
        ConditionExpression: 'attribute_not_exists(OwnerID) OR attribute_type(OwnerID, :null) OR LastUpdate <= :cutoff',
        ExpressionAttributeValues: { ':me': { S: 'go-client' }, ':now': { N: ns(NOW_MS) }, ':null': { S: 'NULL' }, ':cutoff': { N: ns(NOW_MS - TTL_MS) } },
        ReturnValues: 'ALL_NEW',
      }));
      expect(go.Attributes?.SequenceNumber).to.deep.equal({ S: NEXT_SEQ });
    });
  });

  describe('capture, commit, renew, release', () => {
    it('recognises its own live lease, and the new capture fences the old one', async () => {
      const shard = uniqueName('own');
      const s = store('me');
      const first = await captured(s, shard);
      const second = await captured(s, shard);
      expect([first.leaseCounter, second.leaseCounter]).to.deep.equal([1, 2]);
      const error = await write(s.commit(first, { checkpoint: position(SEQ), finished: false })).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(LeaseLostError);
      expect((error as LeaseLostError).shardId).to.equal(shard);
      expect(((error as LeaseLostError).cause as Error).name).to.equal('ConditionalCheckFailedException');
      await write(s.commit(second, { checkpoint: position(SEQ), finished: false }));
      expect((await raw(shard))?.SequenceNumber).to.deep.equal({ S: SEQ });
    });

    it('commit writes the sequence and sub-sequence numbers, a plain record removes the sub-sequence, LATEST is written as the Go magic value', async () => {
      const shard = uniqueName('commit');
      let now = NOW_MS;
      const s = store('me', () => now);
      const held = await captured(s, shard);
      now += 1000;
      await write(s.commit(held, { checkpoint: position(SEQ, 3), finished: false }));
      let row = await raw(shard);
      expect([row?.SequenceNumber, row?.SubSequenceNumber, row?.LastUpdate]).to.deep.equal([{ S: SEQ }, { N: '3' }, { N: ns(now) }]);
      expect(row?.Finished).to.equal(undefined);
      await write(s.commit(held, { checkpoint: position(NEXT_SEQ), finished: false }));
      row = await raw(shard);
      expect([row?.SequenceNumber, row?.SubSequenceNumber]).to.deep.equal([{ S: NEXT_SEQ }, undefined]);
      await write(s.commit(held, { checkpoint: { type: 'LATEST' }, finished: false }));
      expect((await raw(shard))?.SequenceNumber).to.deep.equal({ S: 'LATEST' });
      expect((await firstValueFrom(s.read(shard)))?.checkpoint).to.deep.equal({ type: 'LATEST' });
    });

    it('a commit that finishes writes Finished and FinishedRFC; a commit without a checkpoint leaves the stored one', async () => {
      const shard = uniqueName('finish');
      const s = store('me');
      const held = await captured(s, shard);
      await write(s.commit(held, { checkpoint: position(SEQ), finished: false }));
      await write(s.commit(held, { checkpoint: undefined, finished: true }));
      const row = await raw(shard);
      expect(row).to.deep.include({ SequenceNumber: { S: SEQ }, Finished: { N: ns(NOW_MS) }, FinishedRFC: { S: rfc1123z(NOW_MS) } });
    });

    it('renew moves LastUpdate only', async () => {
      const shard = uniqueName('renew');
      let now = NOW_MS;
      const s = store('me', () => now);
      const held = await captured(s, shard);
      const before = await raw(shard);
      now += 4000;
      await write(s.renew(held));
      expect(await raw(shard)).to.deep.equal({ ...before, LastUpdate: { N: ns(now) }, LastUpdateRFC: { S: rfc1123z(now) } });
    });

    it('release removes the owner, writes the final position and LastOwnerID, and keeps Finished', async () => {
      const shard = uniqueName('release');
      const s = store('me');
      const held = await captured(s, shard);
      await write(s.commit(held, { checkpoint: position(SEQ), finished: true }));
      await write(s.release(held, { checkpoint: position(NEXT_SEQ, 0), finished: false }));
      const row = await raw(shard);
      expect(row?.OwnerID).to.equal(undefined);
      expect(row?.OwnerName).to.equal(undefined);
      expect(row).to.deep.include({ SequenceNumber: { S: NEXT_SEQ }, SubSequenceNumber: { N: '0' }, LastOwnerID: { S: 'me' }, Finished: { N: ns(NOW_MS) } });
      const again = await write(s.release(held, { checkpoint: undefined, finished: false })).catch((e: unknown) => e);
      expect(again, 'a released lease is no longer ours').to.be.instanceOf(LeaseLostError);
    });

    it('two stores racing for one shard: exactly one wins, and the loser\'s stale lease can no longer commit', async () => {
      for (let round = 0; round < 10; round += 1) {
        const shard = uniqueName('race');
        // A held the lease and went quiet; B's clock says it expired. Both capture at once, and
        // both reads complete before either write (a barrier), so only the conditions decide.
        const a = store('a', () => NOW_MS);
        const staleLease = await captured(a, shard);
        let arrived = 0;
        const barrier = new Subject<void>();
        const wait = async () => {
          arrived += 1;
          if (arrived === 2) barrier.next();
          else await firstValueFrom(barrier.pipe(take(1)));
        };
        let bNow = NOW_MS;
        let racing = false;
        const racingA = store('a', () => NOW_MS, new HookedDynamo(local().dynamodb, wait));
        const racingB = store('b', () => bNow, new HookedDynamo(local().dynamodb, async () => { if (racing) await wait(); }));
        // B watched A's row stand still for a TTL.
        expect(await firstValueFrom(racingB.capture(shard))).to.equal(undefined);
        bNow += TTL_MS;
        racing = true;
        const [byA, byB] = await Promise.all([firstValueFrom(racingA.capture(shard)), firstValueFrom(racingB.capture(shard))]);
        const winners = [byA, byB].filter((held) => held !== undefined);
        expect(winners, `round ${round}`).to.have.length(1);
        const winner = winners[0] as HeldLease;
        // Both may have taken a token (2 and 3, in either order): the winner's is on the row, above the stale one.
        expect(winner.leaseCounter).to.be.above(staleLease.leaseCounter);
        expect(await raw(shard)).to.deep.include({ OwnerID: { S: winner.ownerId }, LeaseCounter: { N: String(winner.leaseCounter) } });
        const lost = await write(a.commit(staleLease, { checkpoint: position(SEQ), finished: false })).catch((e: unknown) => e);
        expect(lost).to.be.instanceOf(LeaseLostError);
        await write((winner.ownerId === 'a' ? a : racingB).commit(winner, { checkpoint: position(NEXT_SEQ), finished: false }));
        expect((await raw(shard))?.SequenceNumber).to.deep.equal({ S: NEXT_SEQ });
      }
    });

    it('W9: a release between a capture\'s read and its write makes the capture fail, so the released position is never overwritten', async () => {
      const shard = uniqueName('w9');
      const a = store('a');
      const held = await captured(a, shard);
      await write(a.commit(held, { checkpoint: position(SEQ), finished: false }));
      // B reads the row (A's old position), then A releases with a newer position, then B writes.
      const b = store('b', () => NOW_MS + TTL_MS, new HookedDynamo(local().dynamodb, () => write(a.release(held, { checkpoint: position(NEXT_SEQ), finished: false }))));
      expect(await firstValueFrom(b.capture(shard))).to.equal(undefined);
      expect((await raw(shard))?.SequenceNumber).to.deep.equal({ S: NEXT_SEQ });
      const retried = await captured(store('b', () => NOW_MS + TTL_MS), shard);
      expect(retried.checkpoint).to.deep.equal(position(NEXT_SEQ));
      expect((await raw(shard))?.SequenceNumber).to.deep.equal({ S: NEXT_SEQ });
    });
  });

  describe('fencing tokens', () => {
    const metadata = () => table.replace(/_checkpoints$/, '_metadata');
    const tokenItem = async (shard: string) => (await local().dynamodb.send(new GetItemCommand({ TableName: metadata(), Key: { Key: { S: `LeaseCounter:${shard}` } }, ConsistentRead: true }))).Item;

    /** Counts the requests a capture sends, by operation and table (what a capture costs). */
    class CountingDynamo extends Dynamo {
      readonly calls: string[] = [];

      override getItem(input: GetItemCommandInput): Observable<Item | undefined> {
        this.calls.push(`GetItem ${String(input.TableName)}`);
        return super.getItem(input);
      }

      override updateItem(input: UpdateItemCommandInput): Observable<Item | undefined> {
        this.calls.push(`UpdateItem ${String(input.TableName)}`);
        return super.updateItem(input);
      }

      override updateItemDated(input: UpdateItemCommandInput): ReturnType<Dynamo['updateItemDated']> {
        this.calls.push(`UpdateItem ${String(input.TableName)}`);
        return super.updateItemDated(input);
      }
    }

    it('a capture records its token in the metadata table, which the Go kinsumer never scans; the checkpoints table gets no extra item', async () => {
      const shard = uniqueName('token');
      const held = await captured(store('me'), shard);
      expect(await tokenItem(shard)).to.deep.equal({ Key: { S: `LeaseCounter:${shard}` }, Shard: { S: shard }, LeaseCounter: { N: String(held.leaseCounter) } });
      const { Items } = await local().dynamodb.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
      expect((Items ?? []).filter((item) => item.Shard?.S?.includes(shard)).map((item) => item.Shard?.S)).to.deep.equal([shard]);
    });

    it('costs one write to the metadata table per capture, also after the Go kinsumer dropped the row\'s counter', async () => {
      const shard = uniqueName('cost');
      const first = new CountingDynamo(local().dynamodb);
      const a = store('a', () => NOW_MS, first);
      const lease = await captured(a, shard);
      expect(first.calls, 'a new row').to.deep.equal([`GetItem ${table}`, `UpdateItem ${metadata()}`, `UpdateItem ${table}`]);
      await write(a.release(lease, { checkpoint: position(SEQ), finished: false }));
      const second = new CountingDynamo(local().dynamodb);
      expect((await captured(store('b', () => NOW_MS, second), shard)).leaseCounter).to.equal(2);
      expect(second.calls, 'a row with its counter').to.deep.equal([`GetItem ${table}`, `UpdateItem ${metadata()}`, `UpdateItem ${table}`]);
      // The Go kinsumer's full PutItem: no LeaseCounter any more.
      await put({ Shard: { S: shard }, SequenceNumber: { S: SEQ }, OwnerID: { NULL: true }, OwnerName: { NULL: true }, LastUpdate: { N: ns(NOW_MS) }, Finished: { NULL: true } });
      const third = new CountingDynamo(local().dynamodb);
      expect((await captured(store('c', () => NOW_MS, third), shard)).leaseCounter).to.equal(3);
      expect(third.calls, 'a row the Go kinsumer rewrote').to.deep.equal([`GetItem ${table}`, `UpdateItem ${metadata()}`, `UpdateItem ${table}`]);
    });

    it('a row written before tokens were recorded (counter 5, no metadata item) goes on from its own counter', async () => {
      const shard = uniqueName('upgrade');
      await put({ Shard: { S: shard }, SequenceNumber: { S: SEQ }, LastUpdate: { N: ns(NOW_MS - TTL_MS) }, LeaseCounter: { N: '5' } });
      expect((await captured(store('me'), shard)).leaseCounter).to.equal(6);
      expect((await tokenItem(shard))?.LeaseCounter).to.deep.equal({ N: '6' });
    });

    it('a token record that is not a number is a CorruptCheckpointError of that shard (not an error that stops the client); the row is untouched', async () => {
      const shard = uniqueName('bad-token');
      await local().dynamodb.send(new PutItemCommand({ TableName: metadata(), Item: { Key: { S: `LeaseCounter:${shard}` }, LeaseCounter: { S: 'seven' } } }));
      await put({ Shard: { S: shard }, SequenceNumber: { S: SEQ }, LastUpdate: { N: ns(NOW_MS - TTL_MS) }, LeaseCounter: { N: '2' } });
      const error = await firstValueFrom(store('me').capture(shard)).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(CorruptCheckpointError);
      expect(error).to.deep.include({ shardId: shard, attribute: 'LeaseCounter' });
      expect((error as Error).message).to.contain(`LeaseCounter:${shard}`);
      expect((await raw(shard))?.OwnerID).to.equal(undefined);
    });
  });

  describe('reading', () => {
    it('readMany reads more than one BatchGetItem holds (100 keys), leaves missing rows out, keeps the requested order', async () => {
      const prefix = uniqueName('many');
      const ids = Array.from({ length: 230 }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
      for (let i = 0; i < ids.length; i += 25) {
        await Promise.all(ids.slice(i, i + 25).map((id, j) => put({ Shard: { S: id }, SequenceNumber: { S: String(i + j + 1) }, LastUpdate: { N: ns(NOW_MS) } })));
      }
      const asked = [...ids].reverse().concat([`${prefix}-missing`]);
      const rows = await firstValueFrom(store('me').readMany(asked));
      expect(rows.map((r) => r.shardId)).to.deep.equal([...ids].reverse());
      expect(rows[0]?.checkpoint).to.deep.equal(position('230'));
    });

    const corrupt: Array<[string, Record<string, AttributeValue>]> = [
      ['SequenceNumber', { SequenceNumber: { N: '5' } }],
      ['SequenceNumber', { SequenceNumber: { S: 'not-a-number' } }],
      ['SubSequenceNumber', { SequenceNumber: { S: SEQ }, SubSequenceNumber: { S: '1' } }],
      ['LastUpdate', { LastUpdate: { S: 'yesterday' } }],
      ['OwnerID', { OwnerID: { N: '1' } }],
      ['LeaseCounter', { LeaseCounter: { N: '1.5' } }],
      ['Finished', { Finished: { S: 'yes' } }],
    ];
    for (const [attribute, attributes] of corrupt) {
      it(`a corrupt ${attribute} (${JSON.stringify(Object.values(attributes).at(-1))}) is a KinsumerError naming the shard and the attribute; readMany reports it and returns the others`, async () => {
        const shard = uniqueName('corrupt');
        const good = uniqueName('good');
        await put({ Shard: { S: shard }, ...attributes });
        await put({ Shard: { S: good }, SequenceNumber: { S: SEQ } });
        for (const call of [() => firstValueFrom(store('me').read(shard)), () => firstValueFrom(store('me').capture(shard))]) {
          const error = await call().catch((e: unknown) => e);
          expect(error).to.be.instanceOf(CorruptCheckpointError).and.instanceOf(KinsumerError);
          expect(error).to.deep.include({ shardId: shard, attribute, retriable: false });
          expect((error as Error).message).to.contain(shard).and.contain(attribute);
        }
        const reported: CorruptCheckpointError[] = [];
        const s = new DynamoLeaseStore({
          dynamo: new Dynamo(local().dynamodb), table, clientId: 'me', clientName: 'host', leaseTtlMs: TTL_MS, now: () => NOW_MS,
          onCorruptRow: (e) => reported.push(e),
        });
        const rows = await firstValueFrom(s.readMany([shard, good]));
        expect(rows.map((r) => r.shardId)).to.deep.equal([good]);
        expect(reported.map((e) => [e.shardId, e.attribute])).to.deep.equal([[shard, attribute]]);
      });
    }

    it('readMany reports a corrupt row once while it stays so, and again after it was repaired and broke anew', async () => {
      const shard = uniqueName('corrupt-once');
      const reported: string[] = [];
      const s = new DynamoLeaseStore({
        dynamo: new Dynamo(local().dynamodb), table, clientId: 'me', clientName: 'host', leaseTtlMs: TTL_MS, now: () => NOW_MS,
        onCorruptRow: (e) => reported.push(e.attribute),
      });
      await put({ Shard: { S: shard }, SequenceNumber: { N: '1' } });
      await firstValueFrom(s.readMany([shard]));
      await firstValueFrom(s.readMany([shard]));
      expect(reported).to.deep.equal(['SequenceNumber']);
      await put({ Shard: { S: shard }, LastUpdate: { S: 'now' } });
      await firstValueFrom(s.readMany([shard]));
      await put({ Shard: { S: shard }, SequenceNumber: { S: SEQ } });
      expect((await firstValueFrom(s.readMany([shard]))).map((r) => r.shardId)).to.deep.equal([shard]);
      await put({ Shard: { S: shard }, LastUpdate: { S: 'now' } });
      await firstValueFrom(s.readMany([shard]));
      expect(reported).to.deep.equal(['SequenceNumber', 'LastUpdate', 'LastUpdate']);
    });

    it('a missing table is a TableNotFoundError for every operation', async () => {
      const s = new DynamoLeaseStore({ dynamo: new Dynamo(local().dynamodb), table: 'no_such_checkpoints', clientId: 'me', clientName: 'h', leaseTtlMs: TTL_MS, now: () => NOW_MS });
      const lease: HeldLease = { shardId: 's', ownerId: 'me', leaseCounter: 1, checkpoint: undefined, finished: false };
      const calls: Array<() => Promise<unknown>> = [
        () => firstValueFrom(s.read('s')), () => firstValueFrom(s.readMany(['s'])), () => firstValueFrom(s.capture('s')),
        () => write(s.commit(lease, { checkpoint: undefined, finished: false })), () => write(s.renew(lease)),
        () => write(s.release(lease, { checkpoint: undefined, finished: false })),
      ];
      for (const call of calls) {
        const error = await call().catch((e: unknown) => e);
        expect(error).to.be.instanceOf(TableNotFoundError);
        expect((error as TableNotFoundError).table).to.equal('no_such_checkpoints');
        expect(((error as TableNotFoundError).cause as Error).name).to.equal('ResourceNotFoundException');
      }
    });
  });
});

describe('DynamoLeaseStore.readMany with unprocessed keys (aws-sdk-client-mock: dynalite never throttles a BatchGetItem)', () => {
  it('retries the unprocessed keys until every row is read', async () => {
    const client = new DynamoDBClient({ region: 'us-east-1' });
    const mock = mockClient(client);
    const row = (id: string) => ({ Shard: { S: id }, SequenceNumber: { S: SEQ } });
    mock.on(BatchGetItemCommand)
      .resolvesOnce({ Responses: { t: [row('a')] }, UnprocessedKeys: { t: { Keys: [{ Shard: { S: 'b' } }, { Shard: { S: 'c' } }] } } })
      .resolvesOnce({ Responses: { t: [] }, UnprocessedKeys: { t: { Keys: [{ Shard: { S: 'b' } }, { Shard: { S: 'c' } }] } } })
      .resolvesOnce({ Responses: { t: [row('c'), row('b')] } });
    const s = new DynamoLeaseStore({ dynamo: new Dynamo(client), table: 't', metadataTable: 'm', clientId: 'me', clientName: 'h', leaseTtlMs: TTL_MS, now: () => NOW_MS });
    const rows = await firstValueFrom(s.readMany(['a', 'b', 'c']));
    expect(rows.map((r) => r.shardId)).to.deep.equal(['a', 'b', 'c']);
    const calls = mock.commandCalls(BatchGetItemCommand).map((c) => c.args[0].input.RequestItems?.t?.Keys?.map((k) => k.Shard?.S));
    expect(calls).to.deep.equal([['a', 'b', 'c'], ['b', 'c'], ['b', 'c']]);
    expect(mock.commandCalls(BatchGetItemCommand).every((c) => c.args[0].input.RequestItems?.t?.ConsistentRead === true)).to.equal(true);
    client.destroy();
  });
});
