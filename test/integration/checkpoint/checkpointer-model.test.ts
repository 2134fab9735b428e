import { PutItemCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import fc from 'fast-check';
import { type Observable, VirtualTimeScheduler, concatMap, defer, firstValueFrom, tap, throwError } from 'rxjs';
import { type Checkpointer, createCheckpointer } from '../../../src/checkpoint/checkpointer.js';
import { Dynamo } from '../../../src/dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../../src/dynamodb/lease-store.js';
import { createTables } from '../../../src/dynamodb/tables.js';
import { LeaseLostError } from '../../../src/errors/kinsumer-errors.js';
import type { ShardTracker } from '../../../src/ports/shard-tracker.js';
import type { CheckpointRow, LeaseStore, StoredCheckpoint } from '../../../src/ports/lease-store.js';
import type { Position } from '../../../src/ports/position.js';
import { MemoryCheckpointTable, MemoryLeaseStore } from '../../../src/testing/memory-lease-store.js';
import type { KinsumerEvent } from '../../../src/types.js';
import { uniqueName, useLocalAws } from '../../support/local.js';
import { advance } from '../../support/virtual-time.js';

/** Tracks a record and returns its ack, as a delivered record's ack() does with its ticket. */
function tracked(tracker: Pick<ShardTracker, 'track' | 'ack'>, position: Position): () => void {
  const ticket = tracker.track(position);
  return () => tracker.ack(ticket);
}

// Model-based: random sequences of emit / ack (any order) / finish / time passing / transient faults
// / a rival capturing the lease / close run against a checkpointer on virtual time and a real store,
// with renewals on and writes that take time, so commands run while writes are in flight. After
// every command the invariants that hold at any moment are checked (the row never ahead of the
// acks, never backwards, Finished only when the Go rule allows, one write at a time, no write after
// the loss or the release); after a Settle or a Close, the exact row the model says.

const COMMIT_MS = 1000;
const RENEW_MS = 400;
/** The memory store answers after this long (virtual time): writes overlap the commands. */
const MEMORY_LATENCY_MS = 150;
const BASE = 49590338271490256608559692538361571095921575989136588898n;
const START: StoredCheckpoint = { type: 'AT_TIMESTAMP', timestamp: new Date(1_764_000_000_000) };
const TRANSIENT = (): Error => Object.assign(new Error('slow down'), { name: 'ProvisionedThroughputExceededException', $metadata: { httpStatusCode: 400 } });
const MAX_QUEUED_FAULTS = 3;

// ---------------------------------------------------------------- model

interface Initial {
  readonly checkpoint: StoredCheckpoint | undefined;
  readonly finished: boolean;
  /** The session keeps a start (a LATEST or timestamp start): given to the checkpointer when the checkpoint is not a position. */
  readonly keepStart: boolean;
}

interface Model {
  readonly positions: readonly Position[];
  readonly initial: Initial;
  emitted: number;
  readonly acked: boolean[];
  finishCalled: boolean;
  /** Records emitted when finish() was called. */
  final: number;
  closed: boolean;
  /** The watermark and the Finished rule when close() resolved: late acks change nothing after it. */
  atClose: { readonly watermark: number; readonly finishable: boolean } | undefined;
  /** A rival captured the lease; the row as it stood right after. */
  stolen: CheckpointRow | undefined;
  /** The highest watermark seen in the row so far (it must never go back). */
  seen: number;
  queuedFaults: number;
}

function watermark(m: Model): number {
  let count = 0;
  while (count < m.emitted && m.acked[count] === true) count += 1;
  return count;
}

function finishable(m: Model): boolean {
  return m.finishCalled && watermark(m) === m.emitted;
}

/** What the row holds for a watermark of `count` records (0: the kept start, or the checkpoint found at capture). */
function storedAt(m: Model, count: number): StoredCheckpoint | undefined {
  const position = m.positions[count - 1];
  if (position !== undefined) return { type: 'position', position };
  return startOf(m.initial) ?? m.initial.checkpoint;
}

function startOf(initial: Initial): StoredCheckpoint | undefined {
  return initial.keepStart && initial.checkpoint?.type !== 'position' ? START : undefined;
}

/** The watermark a stored checkpoint stands for; fails on anything the model cannot explain. */
function watermarkOf(m: Model, checkpoint: StoredCheckpoint | undefined): number {
  if (checkpoint?.type === 'position') {
    const index = m.positions.findIndex((p) => JSON.stringify(p) === JSON.stringify(checkpoint.position));
    if (index >= 0) return index + 1;
    if (JSON.stringify(checkpoint) === JSON.stringify(m.initial.checkpoint)) return 0;
  } else if (JSON.stringify(checkpoint) === JSON.stringify(m.initial.checkpoint) || JSON.stringify(checkpoint) === JSON.stringify(startOf(m.initial))) {
    return 0;
  }
  throw new Error(`the row holds a checkpoint the model cannot explain: ${JSON.stringify(checkpoint)}`);
}

// ---------------------------------------------------------------- real system

interface WriteCall {
  readonly op: 'commit' | 'renew' | 'release';
  answered: boolean;
}

interface Real {
  readonly shard: string;
  readonly checkpointer: Checkpointer;
  readonly scheduler: VirtualTimeScheduler;
  readonly acks: Array<() => void>;
  readonly calls: WriteCall[];
  readonly events: KinsumerEvent[];
  /** Queued faults for the next writes: `before` fails without writing, `after` writes then loses the answer. */
  readonly faults: Array<'before' | 'after'>;
  /** Most writes in flight at once. */
  readonly mostInFlight: () => number;
  /** Calls made when lease-lost was reported: nothing may follow. */
  readonly callsAtLoss: () => number | undefined;
  /** Calls made when close() resolved: nothing may follow. */
  callsAtClose: number | undefined;
  finishCompleted: boolean;
  finishError: unknown;
  runError: unknown;
  readonly row: () => Promise<CheckpointRow | undefined>;
  readonly steal: () => Promise<void>;
  /** Resolves once no write is in flight on a store with real I/O (at once for the memory store: its answers come with virtual time). */
  readonly quiet: () => Promise<void>;
}

/** Counts the writes, holds the count of those in flight, and injects the queued faults. */
function instrumented(inner: LeaseStore, real: Pick<Real, 'calls' | 'faults'> & { mostInFlight: number }, realIo: boolean) {
  let inFlight = 0;
  let waiters: Array<() => void> = [];
  const write = (op: WriteCall['op'], send: () => Observable<void>): Observable<void> => defer(() => {
    const call: WriteCall = { op, answered: false };
    real.calls.push(call);
    inFlight += 1;
    real.mostInFlight = Math.max(real.mostInFlight, inFlight);
    const settle = () => {
      if (call.answered) return;
      call.answered = true;
      inFlight -= 1;
      if (inFlight === 0) {
        const ready = waiters;
        waiters = [];
        for (const resolve of ready) resolve();
      }
    };
    let fault = real.faults.shift();
    // A release whose answer is lost is retried and then finds the row released: a case of its own, not this model's.
    if (fault === 'after' && op === 'release') fault = 'before';
    const answer$ = fault === 'before' ? throwError(TRANSIENT) : send();
    // Answered when the answer arrives, before it travels on: the next write may start from that very notification.
    return (fault === 'after' ? answer$.pipe(concatMap(() => throwError(TRANSIENT))) : answer$).pipe(tap({ complete: settle, error: settle, finalize: settle }));
  });
  const store: LeaseStore = {
    read: (id) => inner.read(id),
    readMany: (ids) => inner.readMany(ids),
    capture: (id) => inner.capture(id),
    commit: (lease, w) => write('commit', () => inner.commit(lease, w)),
    renew: (lease) => write('renew', () => inner.renew(lease)),
    release: (lease, w) => write('release', () => inner.release(lease, w)),
    resetCheckpoint: (id, checkpoint, options) => inner.resetCheckpoint(id, checkpoint, options),
  };
  const quiet = () => (!realIo || inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => { waiters.push(resolve); }));
  return { store, quiet };
}

const tick = () => new Promise<void>((resolve) => { setImmediate(resolve); });

/** Moves virtual time in small steps, letting real I/O answer between them, until `done()` or `maxMs`. */
async function drive(r: Real, maxMs: number, done: () => boolean = () => false): Promise<void> {
  for (let elapsed = 0; elapsed < maxMs && !done(); elapsed += 50) {
    await r.quiet();
    await tick();
    advance(r.scheduler, 50);
  }
  await r.quiet();
  await tick();
}

/** What holds after every command, writes in flight or not. */
async function checkInvariants(m: Model, r: Real): Promise<void> {
  const row = await r.row();
  expect(r.mostInFlight(), 'one write at a time').to.be.at.most(1);
  const stored = watermarkOf(m, row?.checkpoint);
  expect(stored, 'the row is never ahead of the acks').to.be.at.most(watermark(m));
  expect(stored, 'the stored position never moves backwards').to.be.at.least(m.seen);
  m.seen = stored;
  if (row?.finished === true && !m.initial.finished) expect(finishable(m), 'Finished only when every record up to the last is acked').to.equal(true);
  if (m.stolen !== undefined) {
    expect(row?.ownerId, 'the rival keeps the lease').to.equal('rival');
    expect([row?.checkpoint, row?.finished], 'nothing written after the rival\'s capture').to.deep.equal([m.stolen.checkpoint, m.stolen.finished]);
  } else if (r.callsAtClose !== undefined) {
    expect(row?.ownerId, 'released').to.equal(undefined);
  } else {
    expect(row?.ownerId, 'owner').to.equal('me');
  }
  const callsAtLoss = r.callsAtLoss();
  if (callsAtLoss !== undefined) expect(r.calls.length, 'no write after the loss was found').to.equal(callsAtLoss);
  if (r.callsAtClose !== undefined) expect(r.calls.length, 'no write after the release').to.equal(r.callsAtClose);
  if (r.runError !== undefined) {
    expect(r.runError, 'run$ ends only with a lost lease').to.be.instanceOf(LeaseLostError);
    expect(m.stolen, 'and only when it was taken').to.not.equal(undefined);
  }
  expect(r.events.filter((e) => e.type === 'error'), 'no error event').to.deep.equal([]);
  expect(r.checkpointer.inFlight(), 'records in flight').to.equal(m.acked.slice(0, m.emitted).filter((a) => !a).length);
}

/** Once nothing is in flight and the commit window has passed: exactly the row the model says. */
async function checkSettled(m: Model, r: Real): Promise<void> {
  await checkInvariants(m, r);
  const row = await r.row();
  const lostEvents = r.events.filter((e) => e.type === 'lease-lost');
  if (m.stolen !== undefined) {
    // Renewals (or the release) found the loss: run$ ended with it, reported once.
    expect(r.runError, 'run$ error').to.be.instanceOf(LeaseLostError);
    expect(lostEvents, 'lease-lost events').to.have.length(1);
    if (m.finishCalled && !(m.stolen.finished)) expect(r.finishError, 'finish() error').to.be.instanceOf(LeaseLostError);
    return;
  }
  expect(lostEvents).to.deep.equal([]);
  const expected = m.atClose ?? { watermark: watermark(m), finishable: finishable(m) };
  expect(row?.checkpoint, 'stored checkpoint').to.deep.equal(storedAt(m, expected.watermark));
  expect(row?.finished, 'Finished').to.equal(m.initial.finished || expected.finishable);
  if (m.finishCalled) expect(r.finishCompleted, 'finish() completed').to.equal(row?.finished === true || m.closed);
  if (m.closed) expect(r.events.filter((e) => e.type === 'lease-released'), 'lease-released').to.have.length(1);
}

// ---------------------------------------------------------------- commands

type Command = fc.AsyncCommand<Model, Real>;
const open = (m: Readonly<Model>) => !m.closed && m.stolen === undefined;

class Emit implements Command {
  constructor(readonly count: number) {}
  check = (m: Readonly<Model>) => open(m) && !m.finishCalled && m.emitted + this.count <= m.positions.length;
  async run(m: Model, r: Real): Promise<void> {
    for (let i = 0; i < this.count; i += 1) {
      const position = m.positions[m.emitted];
      if (position === undefined) throw new Error('no position left');
      r.acks.push(tracked(r.checkpointer, position));
      m.acked.push(false);
      m.emitted += 1;
    }
    await checkInvariants(m, r);
  }
  toString = () => `emit(${this.count})`;
}

/** Acks come at any time: while writes are in flight, after a loss, after the release (late acks must write nothing). */
class Ack implements Command {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.emitted > 0;
  async run(m: Model, r: Real): Promise<void> {
    const index = this.pick % m.emitted;
    r.acks[index]?.();
    m.acked[index] = true;
    await checkInvariants(m, r);
  }
  toString = () => `ack(#${this.pick})`;
}

class Finish implements Command {
  check = (m: Readonly<Model>) => open(m) && !m.finishCalled;
  async run(m: Model, r: Real): Promise<void> {
    const last = m.positions[m.emitted - 1];
    r.checkpointer.finish(m.emitted === 0 ? undefined : last).subscribe({
      complete: () => { r.finishCompleted = true; },
      error: (error: unknown) => { r.finishError = error; },
    });
    m.finishCalled = true;
    m.final = m.emitted;
    await checkInvariants(m, r);
  }
  toString = () => 'finish';
}

/** Time passes (less than a write takes, a renewal interval, a commit window): writes overlap what comes next. */
class Tick implements Command {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    advance(r.scheduler, this.ms);
    await tick();
    await checkInvariants(m, r);
  }
  toString = () => `tick(${this.ms})`;
}

/** The next writes fail with a transient error: before writing, or after writing (the answer is lost). */
class Fault implements Command {
  constructor(readonly kind: 'before' | 'after') {}
  check = (m: Readonly<Model>) => open(m) && m.queuedFaults < MAX_QUEUED_FAULTS;
  async run(m: Model, r: Real): Promise<void> {
    r.faults.push(this.kind);
    m.queuedFaults += 1;
    await checkInvariants(m, r);
  }
  toString = () => `fault(${this.kind})`;
}

/** Another client captures the lease (its counter moves on): every later write of ours must be fenced. */
class Steal implements Command {
  check = (m: Readonly<Model>) => open(m);
  async run(m: Model, r: Real): Promise<void> {
    await r.steal();
    m.stolen = await r.row();
    await checkInvariants(m, r);
  }
  toString = () => 'steal';
}

class Settle implements Command {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    // A commit window, a renewal, the retries of every queued fault, and the writes' latency.
    await drive(r, 2 * COMMIT_MS + RENEW_MS + 2000);
    m.queuedFaults = r.faults.length;
    await checkSettled(m, r);
  }
  toString = () => 'settle';
}

class Close implements Command {
  check = (m: Readonly<Model>) => !m.closed;
  async run(m: Model, r: Real): Promise<void> {
    let closed = false;
    void r.checkpointer.close().then(() => { closed = true; });
    await drive(r, 20_000, () => closed);
    expect(closed, 'close() resolved').to.equal(true);
    r.callsAtClose = r.calls.length;
    m.closed = true;
    m.atClose = { watermark: watermark(m), finishable: finishable(m) };
    m.queuedFaults = r.faults.length;
    await checkSettled(m, r);
  }
  toString = () => 'close';
}

const commandsArb = fc.commands([
  fc.integer({ min: 1, max: 3 }).map((n) => new Emit(n)),
  fc.nat().map((n) => new Ack(n)),
  fc.nat().map((n) => new Ack(n)),
  fc.constant(new Finish()),
  fc.constantFrom(50, RENEW_MS, COMMIT_MS).map((ms) => new Tick(ms)),
  fc.constantFrom<'before' | 'after'>('before', 'after').map((kind) => new Fault(kind)),
  fc.constant(new Steal()),
  fc.constant(new Settle()),
  fc.constant(new Close()),
], { maxCommands: 30 });

// Records of a shard: plain records and KPL aggregates (sub-records), at increasing sequence numbers.
const positionsArb = fc.array(fc.tuple(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 0, max: 3 })), { minLength: 1, maxLength: 8 })
  .map((groups) => {
    let offset = BASE;
    const positions: Position[] = [];
    for (const [gap, subs] of groups) {
      offset += BigInt(gap);
      const sequenceNumber = offset.toString();
      if (subs === 0) positions.push({ sequenceNumber });
      else for (let i = 0; i < subs; i += 1) positions.push({ sequenceNumber, subSequenceNumber: i });
    }
    return positions;
  });

const initialArb: fc.Arbitrary<Initial> = fc.record({
  checkpoint: fc.constantFrom<StoredCheckpoint | undefined>(undefined, { type: 'LATEST' }, { type: 'position', position: { sequenceNumber: BASE.toString() } }),
  finished: fc.boolean(),
  keepStart: fc.boolean(),
});

interface Backend {
  /** A store of client `clientId` on the table, with the virtual clock. */
  readonly store: (clientId: string, now: () => number, scheduler: VirtualTimeScheduler) => LeaseStore;
  /** Writes the row a previous owner left: its checkpoint, Finished or not, no owner. */
  readonly seed: (shard: string, initial: Initial) => Promise<void>;
  /** The row as it is now (read without the store's latency). */
  readonly row: (shard: string) => Promise<CheckpointRow | undefined>;
  /** Another client takes the lease over: owner `rival`, the counter one up. */
  readonly steal: (shard: string) => Promise<void>;
  /** Writes answer in real time (DynamoDB), not with virtual time. */
  readonly realIo: boolean;
}

async function runModel(backend: () => Backend, numRuns: number): Promise<void> {
  await fc.assert(fc.asyncProperty(positionsArb, initialArb, commandsArb, async (positions, initial, commands) => {
    const { store: storeOf, seed, steal, row, realIo } = backend();
    const scheduler = new VirtualTimeScheduler();
    const shard = uniqueName('model');
    await seed(shard, initial);
    const now = () => 1_764_694_956_000 + scheduler.now();
    const plain = storeOf('me', now, scheduler);
    const capturing = firstValueFrom(plain.capture(shard));
    // The memory store answers with virtual time.
    advance(scheduler, MEMORY_LATENCY_MS);
    const lease = await capturing;
    if (lease === undefined) throw new Error('capture failed');
    const counters = { calls: [] as WriteCall[], faults: [] as Array<'before' | 'after'>, mostInFlight: 0 };
    const { store, quiet } = instrumented(plain, counters, realIo);
    const events: KinsumerEvent[] = [];
    const start = startOf(initial);
    const losses: number[] = [];
    const checkpointer = createCheckpointer({
      store, lease, ...(start === undefined ? {} : { start }), commitFrequencyMs: COMMIT_MS, renewIntervalMs: RENEW_MS, scheduler,
      emit: (event) => {
        events.push(event);
        if (event.type === 'lease-lost') losses.push(counters.calls.length);
      },
    });
    const real: Real = {
      shard, checkpointer, scheduler, acks: [], calls: counters.calls, faults: counters.faults, events,
      mostInFlight: () => counters.mostInFlight,
      callsAtLoss: () => losses[0], callsAtClose: undefined, finishCompleted: false, finishError: undefined, runError: undefined,
      row: () => row(shard),
      steal: () => steal(shard),
      quiet,
    };
    const run = checkpointer.run$.subscribe({ error: (e: unknown) => { real.runError = e; } });
    const model: Model = {
      positions, initial, emitted: 0, acked: [], finishCalled: false, final: 0, closed: false, atClose: undefined, stolen: undefined, seen: 0, queuedFaults: 0,
    };
    try {
      await fc.asyncModelRun(() => ({ model, real }), commands);
    } finally {
      run.unsubscribe();
    }
  }), { numRuns });
}

describe('checkpointer model (fc.commands + asyncModelRun)', function () {
  this.timeout(300_000);

  it('on the memory store (writes take 150 ms of virtual time): invariants after every command, the exact row once settled (300 runs)', async () => {
    const table = new MemoryCheckpointTable();
    await runModel(() => ({
      store: (clientId, now, scheduler) => new MemoryLeaseStore({ clientId, leaseTtlMs: 60_000, now, table, latencyMs: MEMORY_LATENCY_MS, scheduler }),
      seed: (shard, initial) => {
        table.put({
          shardId: shard, checkpoint: initial.checkpoint, ownerId: undefined, ownerName: undefined, lastUpdateNs: 1n, finished: initial.finished,
          leaseCounter: 0, lastOwnerId: undefined,
        });
        return Promise.resolve();
      },
      row: (shard) => Promise.resolve(table.row(shard)),
      steal: (shard) => {
        const row = table.row(shard);
        if (row === undefined) throw new Error('no row');
        table.put({ ...row, ownerId: 'rival', leaseCounter: row.leaseCounter + 1 });
        return Promise.resolve();
      },
      realIo: false,
    }), Number(process.env.MODEL_RUNS ?? 300));
  });

  describe('on DynamoDB (dynalite)', () => {
    const local = useLocalAws({ kinesis: 'kinesalite', dynamodb: 'dynalite' });
    let table: string;
    before(async () => {
      const app = uniqueName('model');
      await createTables({ dynamodb: local().dynamodb, applicationName: app });
      table = `${app}_checkpoints`;
    });

    it('invariants after every command, the exact row once settled (100 runs)', async () => {
      const dynamodb: DynamoDBClient = local().dynamodb;
      await runModel(() => ({
        store: (clientId, now) => new DynamoLeaseStore({ dynamo: new Dynamo(dynamodb), table, clientId, clientName: 'model', leaseTtlMs: 60_000, now }),
        seed: async (shard, initial) => {
          // As the Go kinsumer leaves a released row: NULL for an empty sequence number, no owner.
          const { checkpoint } = initial;
          const sequence: AttributeValue = checkpoint === undefined ? { NULL: true } : { S: checkpoint.type === 'position' ? checkpoint.position.sequenceNumber : 'LATEST' };
          await dynamodb.send(new PutItemCommand({
            TableName: table,
            Item: { Shard: { S: shard }, SequenceNumber: sequence, LastUpdate: { N: '1' }, ...(initial.finished ? { Finished: { N: '1' } } : {}) },
          }));
        },
        row: (shard) => firstValueFrom(new DynamoLeaseStore({ dynamo: new Dynamo(dynamodb), table, clientId: 'reader', clientName: 'model', leaseTtlMs: 60_000, now: Date.now }).read(shard)),
        steal: async (shard) => {
          await dynamodb.send(new UpdateItemCommand({
            TableName: table, Key: { Shard: { S: shard } },
            UpdateExpression: 'SET OwnerID = :rival, LeaseCounter = LeaseCounter + :one',
            ExpressionAttributeValues: { ':rival': { S: 'rival' }, ':one': { N: '1' } },
          }));
        },
        realIo: true,
      }), Number(process.env.MODEL_RUNS ?? 100));
    });
  });
});
