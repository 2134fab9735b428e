import { PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import fc from 'fast-check';
import { type Observable, VirtualTimeScheduler, defer, finalize, firstValueFrom, tap } from 'rxjs';
import { type Checkpointer, createCheckpointer } from '../../src/checkpointer.js';
import { Dynamo } from '../../src/dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../src/dynamodb/lease-store.js';
import { createTables } from '../../src/dynamodb/tables.js';
import type { LeaseStore, StoredCheckpoint } from '../../src/ports.js';
import type { Position } from '../../src/sequence-number.js';
import { MemoryCheckpointTable, MemoryLeaseStore } from '../../src/testing/memory-lease-store.js';
import { uniqueName, useLocalAws } from '../support/local.js';
import { advance } from '../support/virtual-time.js';

// Model-based: random sequences of emit / ack (any order) / finish / time passing / close run against
// a checkpointer on virtual time and a real store, and against a model a few lines long (the
// contiguous-ack watermark, throttleTime's leading + trailing window, the Go Finished rule). After
// every command the row in the table must be exactly what the model says.

const COMMIT_MS = 1000;
const BASE = 49590338271490256608559692538361571095921575989136588898n;

// ---------------------------------------------------------------- model

interface Model {
  readonly positions: readonly Position[];
  readonly initial: StoredCheckpoint | undefined;
  emitted: number;
  readonly acked: boolean[];
  finishCalled: boolean;
  /** Index + 1 of the last record emitted when finish() was called; 0: nothing read. */
  final: number;
  windowActive: boolean;
  trailingPending: boolean;
  /** Watermark (count of records) stored in the row; 0: the initial checkpoint. */
  rowWatermark: number;
  rowFinished: boolean;
  released: boolean;
}

function watermark(m: Model): number {
  let count = 0;
  while (count < m.emitted && m.acked[count] === true) count += 1;
  return count;
}

function storedAt(m: Model, count: number): StoredCheckpoint | undefined {
  const position = m.positions[count - 1];
  return count === 0 || position === undefined ? m.initial : { type: 'position', position };
}

function finishable(m: Model): boolean {
  const w = watermark(m);
  return m.finishCalled && w === m.emitted && (m.final === 0 || w === m.final);
}

/** What one commit does to the row: the watermark, and Finished when the Go rule allows (once). */
function modelWrite(m: Model): void {
  if (m.released) return;
  m.rowWatermark = Math.max(m.rowWatermark, watermark(m));
  if (finishable(m)) m.rowFinished = true;
}

/** throttleTime(COMMIT_MS, { leading: true, trailing: true }): a trigger outside a window writes at once and opens one. */
function modelTrigger(m: Model): void {
  if (m.released) return;
  if (!m.windowActive) {
    m.windowActive = true;
    modelWrite(m);
  } else m.trailingPending = true;
}

// ---------------------------------------------------------------- real system

interface Real {
  readonly shard: string;
  readonly store: LeaseStore;
  readonly checkpointer: Checkpointer;
  readonly scheduler: VirtualTimeScheduler;
  readonly acks: Array<() => void>;
  /** Resolves once no store call is in flight. */
  settled(): Promise<void>;
  finishCompleted: boolean;
  runError: unknown;
}

/** Wraps a store to know when its calls have answered (the checkpointer sends them from timers and acks). */
function settling(inner: LeaseStore) {
  let inFlight = 0;
  let waiters: Array<() => void> = [];
  const track = <T>(call: () => Observable<T>): Observable<T> => defer(() => {
    inFlight += 1;
    let done = false;
    const settle = () => {
      if (done) return;
      done = true;
      inFlight -= 1;
      if (inFlight === 0) {
        const ready = waiters;
        waiters = [];
        for (const resolve of ready) resolve();
      }
    };
    return call().pipe(tap({ complete: settle, error: settle }), finalize(settle));
  });
  const store: LeaseStore = {
    read: (id) => inner.read(id),
    readMany: (ids) => inner.readMany(ids),
    capture: (id) => track(() => inner.capture(id)),
    commit: (lease, write) => track(() => inner.commit(lease, write)),
    renew: (lease) => track(() => inner.renew(lease)),
    release: (lease, write) => track(() => inner.release(lease, write)),
    resetCheckpoint: (id, checkpoint, options) => track(() => inner.resetCheckpoint(id, checkpoint, options)),
  };
  const settled = () => (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => { waiters.push(resolve); }));
  return { store, settled };
}

async function checkRow(m: Model, r: Real): Promise<void> {
  await r.settled();
  expect(r.runError, 'run$ error').to.equal(undefined);
  const row = await firstValueFrom(r.store.read(r.shard));
  expect(row?.checkpoint, 'stored checkpoint').to.deep.equal(storedAt(m, m.rowWatermark));
  expect(row?.finished, 'Finished').to.equal(m.rowFinished);
  expect(row?.ownerId, 'owner').to.equal(m.released ? undefined : 'me');
  expect(row?.leaseCounter, 'lease counter').to.equal(1);
  if (m.released) expect(row?.lastOwnerId).to.equal('me');
  expect(r.checkpointer.inFlight(), 'records in flight').to.equal(m.acked.slice(0, m.emitted).filter((a) => !a).length);
  expect(r.finishCompleted, 'finish() completed').to.equal(m.finishCalled && (m.rowFinished || m.released));
}

// ---------------------------------------------------------------- commands

class Emit implements fc.AsyncCommand<Model, Real> {
  constructor(readonly count: number) {}
  check = (m: Readonly<Model>) => !m.finishCalled && !m.released && m.emitted + this.count <= m.positions.length;
  async run(m: Model, r: Real): Promise<void> {
    for (let i = 0; i < this.count; i += 1) {
      const position = m.positions[m.emitted];
      if (position === undefined) throw new Error('no position left');
      r.acks.push(r.checkpointer.track(position));
      m.acked.push(false);
      m.emitted += 1;
    }
    await checkRow(m, r);
  }
  toString = () => `emit(${this.count})`;
}

class Ack implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.emitted > 0;
  async run(m: Model, r: Real): Promise<void> {
    const index = this.pick % m.emitted;
    r.acks[index]?.();
    if (m.acked[index] === false) {
      m.acked[index] = true;
      modelTrigger(m);
    }
    await checkRow(m, r);
  }
  toString = () => `ack(#${this.pick})`;
}

class Finish implements fc.AsyncCommand<Model, Real> {
  check = (m: Readonly<Model>) => !m.finishCalled && !m.released;
  async run(m: Model, r: Real): Promise<void> {
    const last = m.positions[m.emitted - 1];
    r.checkpointer.finish(m.emitted === 0 ? undefined : last).subscribe({ complete: () => { r.finishCompleted = true; } });
    m.finishCalled = true;
    m.final = m.emitted;
    modelTrigger(m);
    await checkRow(m, r);
  }
  toString = () => 'finish';
}

class Tick implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    advance(r.scheduler, COMMIT_MS);
    if (m.windowActive && !m.released) {
      if (m.trailingPending) {
        m.trailingPending = false;
        modelWrite(m);
      } else m.windowActive = false;
    }
    await checkRow(m, r);
  }
  toString = () => 'tick';
}

class Close implements fc.AsyncCommand<Model, Real> {
  check = (m: Readonly<Model>) => !m.released;
  async run(m: Model, r: Real): Promise<void> {
    await r.checkpointer.close();
    m.rowWatermark = Math.max(m.rowWatermark, watermark(m));
    if (finishable(m)) m.rowFinished = true;
    m.released = true;
    await checkRow(m, r);
  }
  toString = () => 'close';
}

const commandsArb = fc.commands([
  fc.integer({ min: 1, max: 3 }).map((n) => new Emit(n)),
  fc.nat().map((n) => new Ack(n)),
  fc.nat().map((n) => new Ack(n)),
  fc.constant(new Finish()),
  fc.constant(new Tick()),
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

const initialArb = fc.constantFrom<StoredCheckpoint | undefined>(undefined, { type: 'LATEST' }, { type: 'position', position: { sequenceNumber: BASE.toString() } });

interface Backend {
  /** A store of client `me` on the table, with the virtual clock. */
  readonly store: (now: () => number) => LeaseStore;
  /** Writes the row a previous owner left: its checkpoint, no owner. */
  readonly seed: (shard: string, initial: StoredCheckpoint | undefined) => Promise<void>;
}

async function runModel(backend: () => Backend, numRuns: number): Promise<void> {
  await fc.assert(fc.asyncProperty(positionsArb, initialArb, commandsArb, async (positions, initial, commands) => {
    const { store: rawStore, seed } = backend();
    const scheduler = new VirtualTimeScheduler();
    const shard = uniqueName('model');
    await seed(shard, initial);
    const { store, settled } = settling(rawStore(() => 1_764_694_956_000 + scheduler.now()));
    const lease = await firstValueFrom(store.capture(shard));
    if (lease === undefined) throw new Error('capture failed');
    const checkpointer = createCheckpointer({ store, lease, commitFrequencyMs: COMMIT_MS, renewIntervalMs: 1e9, scheduler, emit: () => undefined });
    const real: Real = { shard, store, checkpointer, scheduler, acks: [], settled, finishCompleted: false, runError: undefined };
    const run = checkpointer.run$.subscribe({ error: (e: unknown) => { real.runError = e; } });
    const model: Model = {
      positions, initial, emitted: 0, acked: [], finishCalled: false, final: 0, windowActive: false, trailingPending: false,
      rowWatermark: 0, rowFinished: false, released: false,
    };
    try {
      await fc.asyncModelRun(() => ({ model, real }), commands);
    } finally {
      run.unsubscribe();
    }
  }), { numRuns });
}

describe('checkpointer model (fc.commands + asyncModelRun)', function () {
  this.timeout(120_000);

  it('on the memory store: the row after every command is what the model says (500 runs)', async () => {
    const table = new MemoryCheckpointTable();
    await runModel(() => ({
      store: (now) => new MemoryLeaseStore({ clientId: 'me', leaseTtlMs: 60_000, now, table }),
      seed: (shard, initial) => {
        table.put({ shardId: shard, checkpoint: initial, ownerId: undefined, ownerName: undefined, lastUpdateNs: 1n, finished: false, leaseCounter: 0, lastOwnerId: undefined });
        return Promise.resolve();
      },
    }), 500);
  });

  describe('on DynamoDB (dynalite)', () => {
    const local = useLocalAws({ kinesis: 'kinesalite', dynamodb: 'dynalite' });
    let table: string;
    before(async () => {
      const app = uniqueName('model');
      await createTables({ dynamodb: local().dynamodb, applicationName: app });
      table = `${app}_checkpoints`;
    });

    it('the row after every command is what the model says (100 runs)', async () => {
      const { dynamodb } = local();
      await runModel(() => ({
        store: (now) => new DynamoLeaseStore({ dynamo: new Dynamo(dynamodb), table, clientId: 'me', clientName: 'model', leaseTtlMs: 60_000, now }),
        seed: async (shard, initial) => {
          // As the Go kinsumer leaves a released row: NULL for an empty sequence number, no owner.
          const sequence: AttributeValue = initial === undefined ? { NULL: true } : { S: initial.type === 'position' ? initial.position.sequenceNumber : 'LATEST' };
          await dynamodb.send(new PutItemCommand({ TableName: table, Item: { Shard: { S: shard }, SequenceNumber: sequence, LastUpdate: { N: '1' } } }));
        },
      }), 100);
    });
  });
});
