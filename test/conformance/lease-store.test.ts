import {
  GetItemCommand, PutItemCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient, type GetItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { type Observable, Subject, firstValueFrom, lastValueFrom, mergeMap, take } from 'rxjs';
import { nanosFromMillis, rfc1123z } from '../../src/dynamodb/codec.js';
import { createTables } from '../../src/dynamodb/tables.js';
import { Dynamo, type Item } from '../../src/dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../src/dynamodb/lease-store.js';
import { KinsumerError, LeaseLostError, TableNotFoundError } from '../../src/errors/kinsumer-errors.js';
import { ACKED_RANGES_HARD_MAX_BYTES, ACKED_RANGES_MAX_BYTES, encodeAckedRanges } from '../../src/checkpoint/acked-ranges.js';
import type { AckedRange, HeldLease, LeaseStore, StoredCheckpoint } from '../../src/ports/lease-store.js';
import { itemSize } from '../../src/checkpoint/transact-writes.js';
import { MemoryCheckpointTable, MemoryLeaseStore, startLocalAws, type LocalAws } from '../../src/testing/index.js';
import { uniqueName } from '../support/local.js';
import { TIERS, skipUnless } from '../support/tiers.js';

// The lease store's capture / commit / release / fencing semantics, on each tier of local DynamoDB
// (dynalite, and Amazon's DynamoDB Local): the conditions, NULL types and big nanosecond numbers
// it relies on must behave the same on both. The guarantees every LeaseStore makes (leaseStoreSpec)
// run on the in-memory store too, so the fake the layers above are tested with cannot drift.

const SEQ = '49590338271490256608559692538361571095921575989136588898';
const LATER = '49590338271490256608559692538361571095921575989136589000';
const NOW_MS = 1_764_694_956_789;
const TTL_MS = 10_000;
const ns = (ms: number) => `${ms}000000`;
const at = (sequenceNumber: string): StoredCheckpoint => ({ type: 'position', position: { sequenceNumber } });
const beyond = (offset: bigint, subSequenceNumber?: number) => {
  const sequenceNumber = (BigInt(SEQ) + offset).toString();
  return subSequenceNumber === undefined ? { sequenceNumber } : { sequenceNumber, subSequenceNumber };
};
/** Acked ranges beyond SEQ: KPL sub-records of one aggregate, a run ending with a whole aggregate, a single record. */
const RANGES: AckedRange[] = [
  { from: beyond(3n, 1), to: beyond(3n, 4) },
  { from: beyond(5n, 0), to: beyond(40n) },
  { from: beyond(2_564_131_663_402_632_534_000_926_720n), to: beyond(2_564_131_663_402_632_534_000_926_720n) },
];
const OTHER_RANGES: AckedRange[] = [{ from: beyond(7n), to: beyond(9n) }];

/** Dynamo whose GetItem answers only after `hook` ran: puts a competing write between a capture's read and write. */
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

/** Lease stores of several clients over one (shared) checkpoints table, and the Go kinsumer writing to it. */
interface LeaseStoreBackend {
  /** `now`: the wall clock, written; `elapsedNow`: the monotonic clock expiry is timed on (default `now`). */
  store(clientId: string, now: () => number, elapsedNow?: () => number): LeaseStore;
  /**
   * The Go kinsumer's capture and commit, as kinsumer-go-behavior.md §3.2 describes them: it reads
   * the row into its own record and writes the whole row back with a full PutItem — Shard,
   * SequenceNumber, LastUpdate(RFC), OwnerID, OwnerName, Finished(RFC), NULL for empties — so every
   * attribute it does not know (LeaseCounter, LastOwnerID, ...) is gone afterwards.
   */
  goWrite(shardId: string, write: { readonly ownerId: string; readonly sequenceNumber?: string; readonly nowMs: number }): Promise<void>;
  /**
   * The clock that names a reset's moment and a capture's (`capturedAt`): DynamoDB's (its `Date`
   * header, the server's in whole seconds), the in-memory table's own.
   */
  storeNow(): number;
}

/** What every LeaseStore guarantees, whatever holds the rows. */
function leaseStoreSpec(backend: () => LeaseStoreBackend): void {
  describe('LeaseStore guarantees', () => {
    const clock = { now: NOW_MS };
    beforeEach(() => { clock.now = NOW_MS; });
    const store = (clientId: string) => backend().store(clientId, () => clock.now);
    const write = (o: Observable<void>) => lastValueFrom(o, { defaultValue: undefined });
    const held = async (s: LeaseStore, shard: string): Promise<HeldLease> => {
      const lease = await firstValueFrom(s.capture(shard));
      if (lease === undefined) throw new Error(`capture of ${shard} failed`);
      return lease;
    };

    it('reset is a fence: after an unforced reset of an expired owner, that owner\'s commit is LeaseLostError and the row keeps the reset', async () => {
      const shard = uniqueName('zombie');
      const zombie = store('zombie');
      const lease = await held(zombie, shard);
      await write(zombie.commit(lease, { checkpoint: at(SEQ), finished: false }));
      // Paused past its TTL (GC pause, SIGSTOP, partition): expired, but alive and about to write.
      const operator = store('operator');
      await firstValueFrom(operator.read(shard));
      clock.now += TTL_MS;
      await write(operator.resetCheckpoint(shard, { type: 'TRIM_HORIZON' }, { force: false }));
      const reset = await firstValueFrom(zombie.read(shard));
      expect(reset?.ownerId, 'the reset removes the owner').to.equal(undefined);
      expect(reset?.leaseCounter, 'the reset moves the lease counter').to.be.above(lease.leaseCounter);
      const error = await write(zombie.commit(lease, { checkpoint: at(LATER), finished: false })).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(LeaseLostError);
      expect(await write(zombie.release(lease, { checkpoint: at(LATER), finished: false })).catch((e: unknown) => e)).to.be.instanceOf(LeaseLostError);
      expect((await firstValueFrom(zombie.read(shard)))?.checkpoint).to.deep.equal({ type: 'TRIM_HORIZON' });
      expect((await held(store('next'), shard)).checkpoint, 'the next owner starts where the operator said').to.deep.equal({ type: 'TRIM_HORIZON' });
    });

    // R12: a LATEST start is kept from this moment (it came before the first iterator was asked
    // for), never from the client's clock, which a crash before the iterator's answer would hand on.
    it('a capture reports the store\'s clock when it accepted it (capturedAt), whatever the client\'s clock says', async () => {
      const shard = uniqueName('captured-at');
      const from = backend().storeNow() - 1000;
      const lease = await held(store('a'), shard);
      expect(lease.capturedAt?.getTime(), 'the store\'s clock, not the client\'s (NOW_MS)').to.be.within(from, backend().storeNow());
    });

    it('acked ranges (§7.3): written with a commit, replaced by the next, written with the release, read by the next capture, BigInt-exact with KPL sub-records', async () => {
      const shard = uniqueName('ranges');
      const a = store('a');
      const lease = await held(a, shard);
      await write(a.commit(lease, { checkpoint: at(SEQ), finished: false, acked: OTHER_RANGES }));
      expect((await firstValueFrom(a.read(shard)))?.acked).to.deep.equal(OTHER_RANGES);
      await write(a.commit(lease, { checkpoint: at(SEQ), finished: false, acked: RANGES }));
      expect((await firstValueFrom(a.read(shard)))?.acked, 'replaced').to.deep.equal(RANGES);
      await write(a.renew(lease));
      expect((await firstValueFrom(a.read(shard)))?.acked, 'a renewal keeps them').to.deep.equal(RANGES);
      await write(a.release(lease, { checkpoint: at(SEQ), finished: false, acked: OTHER_RANGES }));
      const b = store('b');
      const next = await held(b, shard);
      expect(next.acked, 'the next owner gets the ranges of the release').to.deep.equal(OTHER_RANGES);
      expect(next.checkpoint).to.deep.equal(at(SEQ));
      await write(b.commit(next, { checkpoint: at(LATER), finished: false }));
      expect((await firstValueFrom(b.read(shard)))?.acked, 'a commit without ranges removes them').to.equal(undefined);
    });

    it('acked ranges beyond the hard cap are never cut silently: the write fails (KinsumerError) and the row keeps what it had (review-4 §3.3)', async () => {
      const shard = uniqueName('ranges-cap');
      const a = store('a');
      const lease = await held(a, shard);
      await write(a.commit(lease, { checkpoint: at(SEQ), finished: false, acked: RANGES }));
      // Single records 10^18 apart: 13 characters each, far more than 16 KiB of them.
      const many: AckedRange[] = Array.from({ length: 2_000 }, (_, i) => ({ from: beyond(10n ** 18n * BigInt(i + 1)), to: beyond(10n ** 18n * BigInt(i + 1)) }));
      expect(encodeAckedRanges(at(SEQ), many, Number.POSITIVE_INFINITY)?.text.length).to.be.above(ACKED_RANGES_HARD_MAX_BYTES);
      const error = await write(a.commit(lease, { checkpoint: at(SEQ), finished: false, acked: many })).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(KinsumerError);
      expect(String(error)).to.match(/acked ranges/);
      expect((await firstValueFrom(a.read(shard)))?.acked, 'nothing written').to.deep.equal(RANGES);
    });

    /** Runs a reset; the window, on the store's clock, its moment lies in (less a second: the `Date` header's resolution). */
    const resetWindow = async (reset: () => Promise<void>): Promise<[number, number]> => {
      const storeNow = () => backend().storeNow();
      const from = storeNow() - 1000;
      await reset();
      return [from, storeNow()];
    };
    const timeFloor = (checkpoint: StoredCheckpoint | undefined) => (checkpoint?.type === 'LATEST' ? checkpoint.notBefore?.getTime() : undefined);

    it('a reset to LATEST after a reset to a timestamp keeps a time floor (StartTimestamp): the later of that time and its own moment (R12); a position after it drops it', async () => {
      const shard = uniqueName('timefloor');
      const a = store('a');
      const lease = await held(a, shard);
      await write(a.release(lease, { checkpoint: at(SEQ), finished: false }));
      const when = new Date(NOW_MS - 60_000);
      await write(store('operator').resetCheckpoint(shard, { type: 'AT_TIMESTAMP', timestamp: when }, { force: false }));
      const [from, to] = await resetWindow(() => write(store('operator').resetCheckpoint(shard, { type: 'LATEST' }, { force: false })));
      const stored = (await firstValueFrom(a.read(shard)))?.checkpoint;
      expect(stored?.type).to.equal('LATEST');
      expect(timeFloor(stored), 'the reset\'s moment, after the replaced timestamp').to.be.within(Math.max(from, when.getTime()), to);
      const b = store('b');
      const next = await held(b, shard);
      expect(next.checkpoint).to.deep.equal(stored);
      await write(b.commit(next, { checkpoint: at(LATER), finished: false }));
      expect((await firstValueFrom(b.read(shard)))?.checkpoint).to.deep.equal(at(LATER));
    });

    it('a reset to LATEST keeps the checkpoint it replaced as a floor; a kept start carries it; a later position drops it', async () => {
      const shard = uniqueName('floor');
      const a = store('a');
      const lease = await held(a, shard);
      await write(a.release(lease, { checkpoint: { type: 'position', position: { sequenceNumber: SEQ, subSequenceNumber: 3 } }, finished: false }));
      const [from, to] = await resetWindow(() => write(store('operator').resetCheckpoint(shard, { type: 'LATEST' }, { force: false })));
      const floor = { sequenceNumber: SEQ, subSequenceNumber: 3 };
      const first = (await firstValueFrom(a.read(shard)))?.checkpoint;
      expect(first).to.deep.include({ type: 'LATEST', after: floor });
      expect(timeFloor(first), 'the reset\'s moment (R12)').to.be.within(from, to);
      // Design §8.3: the moment is stored as such (ResetTimestamp): the next owner reads from it.
      expect(first?.type === 'LATEST' ? first.resetAt?.getTime() : undefined, 'the reset\'s moment, where reading starts').to.be.within(from, to);
      // Reset to LATEST again: the floor stays the last position consumed; the time floor is the later reset's.
      const [again, until] = await resetWindow(() => write(store('operator').resetCheckpoint(shard, { type: 'LATEST' }, { force: false })));
      const second = (await firstValueFrom(a.read(shard)))?.checkpoint;
      expect(second).to.deep.include({ type: 'LATEST', after: floor });
      expect(timeFloor(second)).to.be.within(Math.max(again, timeFloor(first) ?? 0), until);
      const b = store('b');
      const next = await held(b, shard);
      expect(next.checkpoint).to.deep.equal(second);
      const kept = { type: 'AT_TIMESTAMP' as const, timestamp: new Date(NOW_MS - 300_000), after: floor };
      await write(b.commit(next, { checkpoint: kept, finished: false }));
      expect((await firstValueFrom(b.read(shard)))?.checkpoint).to.deep.equal(kept);
      await write(b.commit(next, { checkpoint: at(LATER), finished: false }));
      expect((await firstValueFrom(b.read(shard)))?.checkpoint).to.deep.equal(at(LATER));
      // A reset to a timestamp or TRIM_HORIZON means "read again from there": no floor.
      await write(b.release(next, { checkpoint: at(LATER), finished: false }));
      await write(store('operator').resetCheckpoint(shard, { type: 'TRIM_HORIZON' }, { force: false }));
      expect((await firstValueFrom(a.read(shard)))?.checkpoint).to.deep.equal({ type: 'TRIM_HORIZON' });
    });

    it('CheckpointUpdate: set by a commit or release that moves the checkpoint, kept by renewals, same-checkpoint commits and captures; a Go kinsumer write drops it', async () => {
      const shard = uniqueName('advance');
      const a = store('a');
      const lease = await held(a, shard);
      const row = async () => firstValueFrom(store('reader').read(shard));
      expect((await row())?.checkpointUpdateNs, 'captured, nothing checkpointed').to.equal(undefined);
      clock.now += 1000;
      const firstMove = clock.now;
      await write(a.commit(lease, { checkpoint: at(SEQ), finished: false }));
      expect((await row())?.checkpointUpdateNs).to.equal(nanosFromMillis(firstMove));
      clock.now += 1000;
      await write(a.renew(lease));
      clock.now += 1000;
      await write(a.commit(lease, { checkpoint: at(SEQ), finished: false, acked: OTHER_RANGES }));
      const unmoved = await row();
      expect(unmoved?.lastUpdateNs, 'LastUpdate moves with every write').to.equal(nanosFromMillis(clock.now));
      expect(unmoved?.checkpointUpdateNs, 'a renewal and a commit at the same checkpoint are no progress').to.equal(nanosFromMillis(firstMove));
      clock.now += 1000;
      const released = clock.now;
      await write(a.release(lease, { checkpoint: at(LATER), finished: false }));
      expect((await row())?.checkpointUpdateNs, 'the release moved it').to.equal(nanosFromMillis(released));
      clock.now += 1000;
      const b = store('b');
      const next = await held(b, shard);
      await write(b.commit(next, { checkpoint: at(LATER), finished: false }));
      expect((await row())?.checkpointUpdateNs, 'a capture and a commit where the last owner left it keep it').to.equal(nanosFromMillis(released));
      clock.now += TTL_MS;
      await backend().goWrite(shard, { ownerId: 'go-client', sequenceNumber: LATER, nowMs: clock.now });
      expect((await row())?.checkpointUpdateNs, 'the Go kinsumer rewrites the row without it').to.equal(undefined);
    });

    it('acked ranges: a Go kinsumer capture (a full PutItem) drops them, so the next owner only gets duplicates; a reset removes them', async () => {
      const shard = uniqueName('ranges-go');
      const a = store('a');
      const lease = await held(a, shard);
      await write(a.commit(lease, { checkpoint: at(SEQ), finished: false, acked: RANGES }));
      expect((await firstValueFrom(a.read(shard)))?.acked, 'written').to.deep.equal(RANGES);
      clock.now += TTL_MS;
      await backend().goWrite(shard, { ownerId: 'go-client', nowMs: clock.now });
      // The Go client dies: b takes its lease after watching the row stand still for a TTL.
      const b = store('b');
      await firstValueFrom(b.read(shard));
      clock.now += TTL_MS;
      const next = await held(b, shard);
      expect([next.checkpoint, next.acked]).to.deep.equal([at(SEQ), undefined]);

      const reset = uniqueName('ranges-reset');
      const c = store('c');
      const third = await held(c, reset);
      await write(c.release(third, { checkpoint: at(SEQ), finished: false, acked: RANGES }));
      expect((await firstValueFrom(c.read(reset)))?.acked, 'released').to.deep.equal(RANGES);
      await write(store('operator').resetCheckpoint(reset, at(SEQ), { force: false }));
      const afterReset = await held(store('d'), reset);
      expect([afterReset.checkpoint, afterReset.acked], 'read again from the reset, nothing skipped').to.deep.equal([at(SEQ), undefined]);
    });

    it('fencing tokens only grow, also after the Go kinsumer rewrote the row without LeaseCounter (1, 2, then above 2)', async () => {
      const shard = uniqueName('rollback');
      const a = store('a');
      const first = await held(a, shard);
      await write(a.release(first, { checkpoint: at(SEQ), finished: false }));
      const b = store('b');
      const second = await held(b, shard);
      await write(b.release(second, { checkpoint: at(SEQ), finished: false }));
      expect([first.leaseCounter, second.leaseCounter]).to.deep.equal([1, 2]);
      // A rollback: a Go kinsumer client captures the shard and commits, both by full PutItem, then dies.
      clock.now += 1;
      await backend().goWrite(shard, { ownerId: 'go-client', sequenceNumber: SEQ, nowMs: clock.now });
      await backend().goWrite(shard, { ownerId: 'go-client', sequenceNumber: LATER, nowMs: clock.now });
      expect((await firstValueFrom(a.read(shard)))?.leaseCounter, 'the Go kinsumer dropped the counter').to.equal(0);
      // The Go client died: c takes its lease after watching it stand still for a TTL.
      const c = store('c');
      expect(await firstValueFrom(c.capture(shard))).to.equal(undefined);
      clock.now += TTL_MS;
      const third = await held(c, shard);
      expect(third.checkpoint, 'the Go kinsumer\'s checkpoint is kept').to.deep.equal(at(LATER));
      expect(third.leaseCounter).to.be.above(second.leaseCounter);
      // And the token after that grows from there, not from the row the Go kinsumer left.
      const d = store('d');
      await firstValueFrom(d.read(shard));
      clock.now += TTL_MS;
      expect((await held(d, shard)).leaseCounter).to.be.above(third.leaseCounter);
    });

    for (const [label, skewMs] of [['5 minutes behind', -300_000], ['5 minutes ahead', 300_000]] as const) {
      it(`an owner whose clock runs ${label} keeps its lease while it renews; another client takes it one TTL after the row stood still under its eyes`, async () => {
        const shard = uniqueName('skew');
        const owner = backend().store('owner', () => clock.now + skewMs);
        const lease = await held(owner, shard);
        const rival = store('rival');
        for (let renewal = 0; renewal < 6; renewal += 1) {
          expect(await firstValueFrom(rival.capture(shard)), `renewal ${renewal}`).to.equal(undefined);
          clock.now += TTL_MS / 3;
          await write(owner.renew(lease));
        }
        expect(await firstValueFrom(rival.capture(shard)), 'the last renewal, seen now').to.equal(undefined);
        clock.now += TTL_MS - 1;
        expect(await firstValueFrom(rival.capture(shard)), 'one ms short of a TTL').to.equal(undefined);
        clock.now += 1;
        expect((await firstValueFrom(rival.capture(shard)))?.ownerId).to.equal('rival');
        expect(await write(owner.renew(lease)).catch((e: unknown) => e), 'the old owner is fenced').to.be.instanceOf(LeaseLostError);
      });
    }

    it('R10: a 20 s forward step of the capturer\'s wall clock captures no lease renewed 1 s ago; a backward step delays no expiry (the monotonic clock times it)', async () => {
      const shard = uniqueName('wall-step');
      const owner = store('owner');
      const lease = await held(owner, shard);
      let stepMs = 0;
      const rival = backend().store('rival', () => clock.now + stepMs, () => clock.now);
      await firstValueFrom(rival.readMany([shard]));
      // One second of real time: the owner's next renewal is not due; the rival's wall clock jumps 20 s (> the TTL).
      clock.now += 1000;
      stepMs = 20_000;
      expect(await firstValueFrom(rival.capture(shard)), 'captured from a live owner').to.equal(undefined);
      await write(owner.renew(lease));
      expect(await firstValueFrom(rival.capture(shard)), 'the renewal, seen now').to.equal(undefined);
      // The owner stops renewing; the rival's wall clock steps back a minute: the row still expires one TTL later.
      stepMs = -60_000;
      clock.now += TTL_MS - 1;
      expect(await firstValueFrom(rival.capture(shard)), 'one ms short of a TTL').to.equal(undefined);
      clock.now += 1;
      expect((await firstValueFrom(rival.capture(shard)))?.ownerId).to.equal('rival');
    });

    it('a client that has just come (seen nothing yet) takes no owned lease, however old its LastUpdate; a free one at once', async () => {
      const shard = uniqueName('fresh-eyes');
      const owner = backend().store('owner', () => clock.now - 3_600_000);
      const lease = await held(owner, shard);
      clock.now += 10 * TTL_MS;
      expect(await firstValueFrom(store('newcomer').capture(shard))).to.equal(undefined);
      await write(owner.release(lease, { checkpoint: at(SEQ), finished: false }));
      expect((await firstValueFrom(store('other').capture(shard)))?.ownerId, 'a released lease is free at once').to.equal('other');
    });

    it('a second process with the same clientId does not take its twin\'s live lease; the process that holds it captures it again at once (R8)', async () => {
      const shard = uniqueName('twins');
      const first = store('same');
      const twin = store('same');
      const lease = await held(first, shard);
      expect(await firstValueFrom(twin.capture(shard)), 'another process, same clientId').to.equal(undefined);
      const again = await held(first, shard);
      expect(again.leaseCounter).to.be.above(lease.leaseCounter);
    });
  });
}

describe('conformance: lease store in memory', () => {
  // The table's clock plays DynamoDB's (the host's, as dynalite's Date is).
  let table = new MemoryCheckpointTable({ now: () => Date.now() });
  beforeEach(() => { table = new MemoryCheckpointTable({ now: () => Date.now() }); });
  leaseStoreSpec(() => ({
    store: (clientId, now, elapsedNow) => new MemoryLeaseStore({ clientId, clientName: `host-${clientId}`, leaseTtlMs: TTL_MS, now, ...(elapsedNow === undefined ? {} : { elapsedNow }), table }),
    storeNow: () => Date.now(),
    goWrite: (shardId, { ownerId, sequenceNumber, nowMs }) => {
      const row = table.row(shardId);
      table.put({
        shardId, checkpoint: sequenceNumber === undefined ? row?.checkpoint : at(sequenceNumber), ownerId, ownerName: ownerId,
        lastUpdateNs: nanosFromMillis(nowMs), finished: row?.finished ?? false, leaseCounter: 0, lastOwnerId: undefined,
      });
      return Promise.resolve();
    },
  }));
});

for (const tier of TIERS) {
  describe(`conformance: lease store on ${tier.name}`, function () {
    this.timeout(180_000);
    skipUnless(tier);
    let local: LocalAws;
    let table: string;
    before(async () => {
      local = await startLocalAws(tier.options);
      const app = uniqueName('conf-lease');
      await createTables({ dynamodb: local.dynamodb, applicationName: app });
      table = `${app}_checkpoints`;
    });
    after(async () => { await local?.stop(); });

    const store = (clientId: string, now: () => number = () => NOW_MS, dynamo: Dynamo = new Dynamo(local.dynamodb)) =>
      new DynamoLeaseStore({ dynamo, table, clientId, clientName: `host-${clientId}`, leaseTtlMs: TTL_MS, now });
    const raw = async (shard: string) => (await local.dynamodb.send(new GetItemCommand({ TableName: table, Key: { Shard: { S: shard } }, ConsistentRead: true }))).Item;
    const put = (item: Record<string, AttributeValue>) => local.dynamodb.send(new PutItemCommand({ TableName: table, Item: item }));
    const write = (o: Observable<void>) => lastValueFrom(o, { defaultValue: undefined });
    const capture = (s: DynamoLeaseStore, shard: string) => firstValueFrom(s.capture(shard));
    const held = async (s: DynamoLeaseStore, shard: string): Promise<HeldLease> => {
      const lease = await capture(s, shard);
      if (lease === undefined) throw new Error(`capture of ${shard} failed`);
      return lease;
    };

    leaseStoreSpec(() => ({
      store: (clientId, now, elapsedNow) => new DynamoLeaseStore({
        dynamo: new Dynamo(local.dynamodb), table, clientId, clientName: `host-${clientId}`, leaseTtlMs: TTL_MS, now, ...(elapsedNow === undefined ? {} : { elapsedNow }),
      }),
      storeNow: () => Date.now(),
      goWrite: async (shardId, { ownerId, sequenceNumber, nowMs }) => {
        const row = await raw(shardId);
        const kept = (attribute: string): AttributeValue => row?.[attribute] ?? { NULL: true };
        await put({
          Shard: { S: shardId },
          SequenceNumber: sequenceNumber === undefined ? kept('SequenceNumber') : { S: sequenceNumber },
          LastUpdate: { N: nanosFromMillis(nowMs).toString() },
          LastUpdateRFC: { S: rfc1123z(nowMs) },
          OwnerID: { S: ownerId },
          OwnerName: { S: ownerId },
          Finished: kept('Finished'),
          FinishedRFC: kept('FinishedRFC'),
        });
      },
    }));

    it('capture: a shard without a row, a NULL-typed owner, an owner seen unchanged for a TTL; not a live foreign owner; its own live lease', async () => {
      const fresh = uniqueName('fresh');
      let bNow = NOW_MS;
      const b = store('b', () => bNow);
      const { capturedAt: _freshAt, ...freshLease } = await held(store('a'), fresh);
      expect(freshLease).to.deep.equal({ shardId: fresh, ownerId: 'a', leaseCounter: 1, checkpoint: undefined, finished: false });
      expect(await capture(b, fresh), 'live foreign owner').to.equal(undefined);
      bNow += TTL_MS;
      expect((await held(b, fresh)).leaseCounter, 'expired at exactly one TTL of watching').to.equal(2);
      expect((await held(b, fresh)).leaseCounter, 'its own lease').to.equal(3);

      const nullOwner = uniqueName('null-owner');
      await put({ Shard: { S: nullOwner }, SequenceNumber: { S: SEQ }, OwnerID: { NULL: true }, OwnerName: { NULL: true }, LastUpdate: { N: ns(NOW_MS) }, Finished: { NULL: true } });
      expect(await held(store('a'), nullOwner)).to.deep.include({ leaseCounter: 1, checkpoint: at(SEQ), finished: false });
    });

    it('writes CheckpointUpdate as LastUpdate is written (Unix ns, and CheckpointUpdateRFC), and reads a row with an unreadable one as if it had none', async () => {
      const shard = uniqueName('advance-raw');
      const a = store('a', () => NOW_MS + 5);
      const lease = await held(a, shard);
      await write(a.commit(lease, { checkpoint: at(SEQ), finished: false }));
      const item = await raw(shard);
      expect(item?.CheckpointUpdate).to.deep.equal({ N: ns(NOW_MS + 5) });
      expect(item?.CheckpointUpdateRFC).to.deep.equal({ S: rfc1123z(NOW_MS + 5) });
      await put({ ...item, CheckpointUpdate: { S: 'yesterday' } });
      const row = await firstValueFrom(a.read(shard));
      expect(row?.checkpoint).to.deep.equal(at(SEQ));
      expect(row?.checkpointUpdateNs).to.equal(undefined);
    });

    it('stores LastUpdate in Unix nanoseconds beyond 2^53 exactly, and takes a nanosecond\'s change as a renewal', async () => {
      const shard = uniqueName('nanos');
      let bNow = NOW_MS;
      const b = store('b', () => bNow);
      await held(store('a'), shard);
      expect((await raw(shard))?.LastUpdate).to.deep.equal({ N: ns(NOW_MS) });
      expect(await capture(b, shard)).to.equal(undefined);
      bNow += TTL_MS - 1;
      // Not representable as a double: a Number would not see this write.
      await put({ ...(await raw(shard)), LastUpdate: { N: (BigInt(ns(NOW_MS)) + 1n).toString() } });
      expect(await capture(b, shard), 'a renewal one nanosecond later').to.equal(undefined);
      bNow += TTL_MS - 1;
      expect(await capture(b, shard), 'not yet a TTL since b saw it change').to.equal(undefined);
      bNow += 1;
      expect((await capture(b, shard))?.ownerId).to.equal('b');
    });

    it('commit and release are fenced on owner and lease counter', async () => {
      const shard = uniqueName('fence');
      const a = store('a');
      const old = await held(a, shard);
      const current = await held(a, shard);
      for (const fenced of [
        () => write(a.commit(old, { checkpoint: at(LATER), finished: false })),
        () => write(a.renew(old)),
        () => write(a.release(old, { checkpoint: at(LATER), finished: false })),
        () => write(store('b').commit({ ...current, ownerId: 'b' }, { checkpoint: at(LATER), finished: false })),
      ]) {
        const error = await fenced().catch((e: unknown) => e);
        expect(error).to.be.instanceOf(LeaseLostError);
        expect(((error as LeaseLostError).cause as Error).name).to.equal('ConditionalCheckFailedException');
      }
      expect((await raw(shard))?.SequenceNumber).to.equal(undefined);
      await write(a.commit(current, { checkpoint: at(SEQ), finished: false }));
      expect((await raw(shard))?.SequenceNumber).to.deep.equal({ S: SEQ });
    });

    it('release removes the owner, writes the final position and LastOwnerID, keeps Finished; the next owner resumes there', async () => {
      const shard = uniqueName('release');
      const a = store('a');
      const lease = await held(a, shard);
      await write(a.commit(lease, { checkpoint: at(SEQ), finished: true }));
      await write(a.release(lease, { checkpoint: at(LATER), finished: false }));
      const row = await raw(shard);
      expect([row?.OwnerID, row?.OwnerName]).to.deep.equal([undefined, undefined]);
      expect(row).to.deep.include({ SequenceNumber: { S: LATER }, LastOwnerID: { S: 'a' }, Finished: { N: ns(NOW_MS) } });
      expect(await held(store('b'), shard)).to.deep.include({ ownerId: 'b', leaseCounter: 2, checkpoint: at(LATER), finished: true });
    });

    it('two clients capturing at once (both read before either writes): exactly one wins', async () => {
      for (let round = 0; round < 5; round += 1) {
        const shard = uniqueName('race');
        let arrived = 0;
        const both = new Subject<void>();
        const barrier = async () => {
          arrived += 1;
          if (arrived === 2) both.next();
          else await firstValueFrom(both.pipe(take(1)));
        };
        const results = await Promise.all(['a', 'b'].map((id) => capture(store(id, () => NOW_MS, new HookedDynamo(local.dynamodb, barrier)), shard)));
        const winners = results.filter((r) => r !== undefined);
        expect(winners, `round ${round}`).to.have.length(1);
        // The loser may have taken a token too (token 1 or 2 wins): the row carries the winner's.
        expect((await raw(shard))?.LeaseCounter).to.deep.equal({ N: String(winners[0]?.leaseCounter) });
      }
    });

    it('a release between a capture\'s read and its write fails the capture instead of rewinding the checkpoint (W9)', async () => {
      const shard = uniqueName('w9');
      const a = store('a');
      const lease = await held(a, shard);
      await write(a.commit(lease, { checkpoint: at(SEQ), finished: false }));
      let bNow = NOW_MS;
      let armed = false;
      const b = store('b', () => bNow, new HookedDynamo(local.dynamodb, async () => {
        if (armed) await write(a.release(lease, { checkpoint: at(LATER), finished: false }));
      }));
      expect(await capture(b, shard), 'live').to.equal(undefined);
      bNow += TTL_MS;
      armed = true;
      expect(await capture(b, shard)).to.equal(undefined);
      expect((await raw(shard))?.SequenceNumber).to.deep.equal({ S: LATER });
    });

    it('an AckedRanges attribute that cannot be trusted is ignored, not corrupt: the row reads, the lease is captured, nothing is skipped', async () => {
      const written = encodeAckedRanges(at(SEQ), RANGES)?.text ?? '';
      const untrusted: [string, AttributeValue][] = [
        ['garbage', { S: 'garbage' }],
        ['a number', { N: '5' }],
        ['a list', { L: [{ S: written }] }],
        ['NULL', { NULL: true }],
        ['another format version', { S: `9${written.slice(1)}` }],
        ['written with another checkpoint', { S: encodeAckedRanges(at(LATER), [{ from: beyond(200n), to: beyond(300n) }])?.text ?? '' }],
        ['out of order', { S: `${written},0` }],
      ];
      for (const [what, value] of untrusted) {
        const shard = uniqueName('ranges-bad');
        await put({ Shard: { S: shard }, SequenceNumber: { S: SEQ }, LastUpdate: { N: ns(NOW_MS - TTL_MS) }, AckedRanges: value });
        const row = await firstValueFrom(store('a').read(shard));
        expect([row?.checkpoint, row?.acked], what).to.deep.equal([at(SEQ), undefined]);
        expect((await firstValueFrom(store('a').readMany([shard]))).map((r) => r.shardId), what).to.deep.equal([shard]);
        expect((await held(store('a'), shard)).acked, what).to.equal(undefined);
      }
      // The same text, with the checkpoint it was written with, is trusted.
      const trusted = uniqueName('ranges-good');
      await put({ Shard: { S: trusted }, SequenceNumber: { S: SEQ }, AckedRanges: { S: written } });
      expect((await held(store('a'), trusted)).acked).to.deep.equal(RANGES);
    });

    it('a row the Go kinsumer wrote has no ranges; its release (an UpdateItem, which keeps the attribute) moves the checkpoint, so the ranges are no longer trusted', async () => {
      const goRow = uniqueName('ranges-go-row');
      await put({ Shard: { S: goRow }, SequenceNumber: { S: SEQ }, LastUpdate: { N: ns(NOW_MS) }, LastUpdateRFC: { S: rfc1123z(NOW_MS) }, OwnerID: { NULL: true }, OwnerName: { NULL: true }, Finished: { NULL: true }, FinishedRFC: { NULL: true } });
      const { capturedAt: _goRowAt, ...goRowLease } = await held(store('a'), goRow);
      expect(goRowLease).to.deep.equal({ shardId: goRow, ownerId: 'a', leaseCounter: 1, checkpoint: at(SEQ), finished: false });

      const shard = uniqueName('ranges-go-release');
      const a = store('a');
      const lease = await held(a, shard);
      await write(a.release(lease, { checkpoint: at(SEQ), finished: false, acked: RANGES }));
      expect((await raw(shard))?.AckedRanges?.S).to.be.a('string');
      await local.dynamodb.send(new UpdateItemCommand({
        TableName: table, Key: { Shard: { S: shard } },
        UpdateExpression: 'SET SequenceNumber = :seq, LastUpdate = :now REMOVE OwnerID, OwnerName',
        ExpressionAttributeValues: { ':seq': { S: LATER }, ':now': { N: ns(NOW_MS) } },
      }));
      expect((await raw(shard))?.AckedRanges?.S, 'the attribute is still there').to.be.a('string');
      const next = await held(store('b'), shard);
      expect([next.checkpoint, next.acked]).to.deep.equal([at(LATER), undefined]);
    });

    // The checkpoint state caps the ranges at ACKED_RANGES_MAX_BYTES, but ranges holding committed
    // writes (design §8.1) are never dropped and may outgrow it: the store writes up to the hard cap.
    it(`the largest row it writes: ranges at the hard cap (${ACKED_RANGES_HARD_MAX_BYTES} bytes) with 1024-character client ids and names stays far below the 400 KB item limit`, async () => {
      const shard = `shardId-${'9'.repeat(120)}`;
      const longId = (c: string) => c.repeat(1024);
      // 128-digit sequence numbers (the most isSequenceNumber accepts), ranges far more than fit.
      const base = `9${'0'.repeat(127)}`;
      const at128 = (offset: bigint, sub?: number) => ({ sequenceNumber: (BigInt(base) + offset).toString(), ...(sub === undefined ? {} : { subSequenceNumber: sub }) });
      const many = Array.from({ length: 5000 }, (_, i) => ({ from: at128(10n ** 60n * BigInt(4 * i + 1), 2 ** 50), to: at128(10n ** 60n * BigInt(4 * i + 3), 2 ** 52) }));
      const first = store(longId('a'));
      const lease = await held(first, shard);
      await write(first.release(lease, { checkpoint: { type: 'position', position: at128(0n, 2 ** 52) }, finished: false }));
      const big = new DynamoLeaseStore({ dynamo: new Dynamo(local.dynamodb), table, clientId: longId('b'), clientName: longId('n'), leaseTtlMs: TTL_MS, now: () => NOW_MS });
      const second = await held(big, shard);
      const checkpoint: StoredCheckpoint = { type: 'position', position: at128(0n, 2 ** 52) };
      const fitting = many.slice(0, encodeAckedRanges(checkpoint, many, ACKED_RANGES_HARD_MAX_BYTES)?.kept ?? 0);
      await write(big.commit(second, { checkpoint, finished: true, acked: fitting }));
      const item = await raw(shard) ?? {};
      const ranges = item.AckedRanges?.S ?? '';
      expect(ranges.length, 'as many ranges as the hard cap takes').to.be.within(ACKED_RANGES_HARD_MAX_BYTES - 200, ACKED_RANGES_HARD_MAX_BYTES);
      expect(Object.keys(item).sort()).to.deep.equal(['AckedRanges', 'CheckpointUpdate', 'CheckpointUpdateRFC', 'Finished', 'FinishedRFC', 'LastOwnerID', 'LastUpdate', 'LastUpdateRFC', 'LeaseCounter', 'OwnerID', 'OwnerName', 'Shard', 'SequenceNumber', 'SubSequenceNumber'].sort());
      const size = itemSize(item);
      // CheckpointUpdate and its RFC form add about 80 bytes.
      expect(size, 'bytes, as DynamoDB counts them').to.be.within(11_000 + ACKED_RANGES_MAX_BYTES, 11_800 + ACKED_RANGES_MAX_BYTES);
      expect(size).to.be.below(409_600 / 20);
    });

    it('readMany reads more than 100 rows (several BatchGetItem calls)', async () => {
      const prefix = uniqueName('many');
      const ids = Array.from({ length: 120 }, (_, i) => `${prefix}-${i}`);
      await Promise.all(ids.map((id) => put({ Shard: { S: id }, SequenceNumber: { S: SEQ } })));
      const rows = await firstValueFrom(store('a').readMany([...ids, `${prefix}-missing`]));
      expect(rows.map((r) => r.shardId)).to.deep.equal(ids);
    });

    it('a missing table is a TableNotFoundError', async () => {
      const s = new DynamoLeaseStore({ dynamo: new Dynamo(local.dynamodb), table: 'missing_checkpoints', clientId: 'a', clientName: 'h', leaseTtlMs: TTL_MS, now: () => NOW_MS });
      expect(await firstValueFrom(s.capture('x')).catch((e: unknown) => e)).to.be.instanceOf(TableNotFoundError);
      expect(await firstValueFrom(s.readMany(['x'])).catch((e: unknown) => e)).to.be.instanceOf(TableNotFoundError);
    });
  });
}
