import { expect } from 'chai';
import type { AckLine } from '../../../examples/demo/ack-log.js';
import {
  buildView, heldShards, shortShard, timeline, type BoardInput, type ProcessSnapshot, type PutRecord, type TimedEvent,
} from '../../../examples/demo/board.js';

// Sequence numbers beyond 2^53, as Kinesis gives them: compared as numbers they would tie.
const BASE = 49_600_000_000_000_000_000_000_000_000_000_000_000_000_000n;
const seq = (n: number) => (BASE + BigInt(n)).toString();
const S0 = 'shardId-000000000000';
const S1 = 'shardId-000000000001';
const S2 = 'shardId-000000000002';
const S3 = 'shardId-000000000003';

function ack(w: string, shardId: string, n: number, e: number, data = `${shardId}#${n}`): AckLine {
  return { e, i: n, t: e + 1, w, shardId, seq: seq(n), key: 'k', data };
}

function put(shardId: string, n: number, t: number): PutRecord {
  return { data: `${shardId}#${n}`, shardId, seq: seq(n), t };
}

function proc(id: string, events: TimedEvent[], state: { running?: boolean; signal?: string; code?: number } = {}): ProcessSnapshot {
  const running = state.running ?? true;
  return {
    id, pid: 100, running, events,
    ...(running ? {} : { exit: { code: state.code ?? null, signal: state.signal ?? null, at: 0 } }),
  };
}

const acquired = (shardId: string, at: number): TimedEvent => ({ type: 'lease-acquired', shardId, at });

function input(overrides: Partial<BoardInput>): BoardInput {
  return {
    now: 10_000, startedAt: 0, producerStartedAt: 0, durationMs: 30_000, targetRate: 100, phase: 'running',
    shards: [{ shardId: S0, parents: [], closed: false }],
    produced: [], acks: [], processes: [], incidents: [],
    ...overrides,
  };
}

describe('demo board (the live view model)', () => {
  it('one clock for the whole run: elapsed and note times count from the run\'s start, through starting and running', () => {
    const starting = buildView(input({ now: 2000, startedAt: 0, producerStartedAt: undefined, phase: 'starting' }));
    expect([starting.elapsedMs, starting.producerElapsedMs]).to.deep.equal([2000, undefined]);
    const kill = { kind: 'kill' as const, worker: 'w1', pid: 1, at: 3500, held: [] };
    const running = buildView(input({ now: 2700, startedAt: 0, producerStartedAt: 2000, incidents: [kill] }));
    expect([running.elapsedMs, running.producerElapsedMs]).to.deep.equal([2700, 700]);
    expect(running.notes[0]?.at).to.equal(3500);
  });

  it('the produced rate is the producer\'s average over its run, and does not decay after it stopped', () => {
    const produced = Array.from({ length: 300 }, (_, i) => put(S0, i, 1000 + i * 10));
    const during = buildView(input({ now: 2500, producerStartedAt: 1000, produced: produced.filter((p) => p.t <= 2500) }));
    expect(during.producedRate).to.be.closeTo(151 / 1.5, 0.01);
    const after = buildView(input({ now: 60_000, producerStartedAt: 1000, producerStoppedAt: 4000, produced, phase: 'done' }));
    expect(after.producedRate).to.equal(100);
    expect(after.targetRate).to.equal(100);
  });

  it('the failover note says the lease TTL the new owner had to wait out', () => {
    const kill = { kind: 'kill' as const, worker: 'w1', pid: 1, at: 1000, held: [S0] };
    const view = buildView(input({ leaseTtlMs: 3000, incidents: [kill], acks: [ack('w2', S0, 1, 4000)] }));
    expect(view.notes.find((n) => n.kind === 'failover')?.text).to.equal('failover shard-0: w1 -> w2, records flowing again 3.0 s after the kill (its 3 s lease had to expire)');
  });

  it('shortens shard ids and leaves other names alone', () => {
    expect(shortShard('shardId-000000000012')).to.equal('shard-12');
    expect(shortShard('shardId-000000000000')).to.equal('shard-0');
    expect(shortShard('other')).to.equal('other');
  });

  it('a shard is held from lease-acquired until released or lost, and only by a running process', () => {
    const events = [acquired(S0, 1), acquired(S1, 2), { type: 'lease-released', shardId: S0, at: 3 }, acquired(S2, 4), { type: 'lease-lost', shardId: S2, at: 5 }];
    expect(heldShards(proc('w1', events))).to.deep.equal([S1]);
    expect(heldShards(proc('w1', events, { running: false, signal: 'SIGKILL' }))).to.deep.equal([]);
  });

  it('per shard: owner, distinct records consumed, and records and age behind the checkpoint', () => {
    const view = buildView(input({
      shards: [{ shardId: S0, parents: [], closed: false }, { shardId: S1, parents: [], closed: false }],
      produced: [put(S0, 1, 1000), put(S0, 2, 2000), put(S0, 3, 4000), put(S1, 1, 3000)],
      acks: [ack('w1', S0, 1, 1100), ack('w1', S0, 2, 2100), ack('w2', S0, 2, 2500)],
      processes: [proc('w1', [acquired(S0, 500), { type: 'checkpoint', shardId: S0, at: 2200, checkpoint: { sequenceNumber: seq(1) }, finished: false }])],
    }));
    const [s0, s1] = view.shards;
    // Checkpoint at record 1: records 2 and 3 are behind; the oldest was put at 2000.
    expect(s0).to.deep.include({ owner: 'w1', consumed: 2, lagRecords: 2, lagMs: 8000, state: 'open' });
    // No checkpoint at all: everything put is behind.
    expect(s1).to.deep.include({ owner: undefined, consumed: 0, lagRecords: 1, lagMs: 7000 });
    expect(view).to.deep.include({ produced: 4, consumedUnique: 2, duplicates: 1 });
  });

  it('the highest checkpoint of any process counts, compared as BigInt (a released lease too)', () => {
    const view = buildView(input({
      produced: [put(S0, 1, 0), put(S0, 2, 0), put(S0, 3, 0)],
      processes: [
        proc('w1', [{ type: 'checkpoint', shardId: S0, at: 1, checkpoint: { sequenceNumber: seq(2) }, finished: false }], { running: false, signal: 'SIGKILL' }),
        proc('w2', [{ type: 'lease-released', shardId: S0, at: 2, checkpoint: { sequenceNumber: seq(1) }, finished: false }]),
      ],
    }));
    expect(view.shards[0]?.lagRecords).to.equal(1);
  });

  it('a finished shard is behind by nothing; a closed one is shown closed until then', () => {
    const view = buildView(input({
      shards: [{ shardId: S0, parents: [], closed: true }, { shardId: S1, parents: [], closed: true }],
      produced: [put(S0, 1, 0), put(S1, 1, 0)],
      processes: [proc('w1', [{ type: 'shard-finished', shardId: S0, at: 5, childShardIds: [] }])],
    }));
    expect(view.shards.map((s) => [s.state, s.lagRecords])).to.deep.equal([['finished', 0], ['closed', 1]]);
  });

  it('per worker: the latest process of each id, its state, shards and ack rate over the window', () => {
    const now = 10_000;
    const view = buildView(input({
      now, rateWindowMs: 2000,
      acks: [ack('w1', S0, 1, 7000), ack('w1', S0, 2, 8500), ack('w1', S0, 3, 9000), ack('w2', S1, 1, 9500)],
      processes: [
        proc('w1', [acquired(S0, 1)]),
        proc('w2', [acquired(S1, 1)], { running: false, signal: 'SIGKILL' }),
        proc('w3', []),
        proc('w4', [], { running: false, code: 0 }),
        proc('w2', [{ type: 'rebalance', at: 9000 }]),
      ],
    }));
    expect(view.workers.map((w) => [w.id, w.state, w.shards.length, w.rate, w.acked])).to.deep.equal([
      // 8.5 s and 9 s are within the last 2 s (ack time is e + 1): 2 acks / 2 s.
      ['w1', 'running', 1, 1, 3],
      // The restarted w2 is running (it has joined) and holds nothing yet.
      ['w2', 'running', 0, 0.5, 1],
      ['w3', 'starting', 0, 0, 0],
      ['w4', 'stopped', 0, 0, 0],
    ]);
  });

  it('a killed worker is shown killed, with no shards and no rate', () => {
    const view = buildView(input({
      acks: [ack('w1', S0, 1, 9900)],
      processes: [proc('w1', [acquired(S0, 1)], { running: false, signal: 'SIGKILL' })],
    }));
    expect(view.workers[0]).to.deep.include({ state: 'killed', shards: [], rate: 0 });
  });

  describe('timeline', () => {
    const kill = { kind: 'kill' as const, worker: 'w1', pid: 7, at: 5000, held: [S0, S1] };

    it('a kill, then one failover note per shard of the dead worker, timed from the kill to its first record elsewhere', () => {
      const result = timeline({
        startedAt: 1000,
        incidents: [kill],
        processes: [],
        acks: [ack('w1', S0, 1, 4000), ack('w2', S0, 2, 8000), ack('w2', S0, 3, 8100), ack('w3', S1, 1, 9000)],
      });
      expect(result.notes.map((n) => [n.kind, n.at])).to.deep.equal([['kill', 4000], ['failover', 7000], ['failover', 8000]]);
      expect(result.notes[0]?.text).to.contain('SIGKILL w1 (pid 7)').and.contain('shard-0, shard-1');
      expect(result.notes[1]?.text).to.contain('failover shard-0: w1 -> w2').and.contain('3.0 s after the kill');
      expect(result.failoverMs).to.equal(4000);
    });

    it('the failover time stays unknown while a shard of the dead worker has delivered nothing since', () => {
      const result = timeline({ startedAt: 0, incidents: [kill], processes: [], acks: [ack('w2', S0, 2, 8000)] });
      expect(result.failoverMs).to.equal(undefined);
      expect(result.notes.filter((n) => n.kind === 'failover')).to.have.length(1);
    });

    it('a split: the parent finished, then a handoff note per child timed from the parent finishing', () => {
      const result = timeline({
        startedAt: 0,
        incidents: [{ kind: 'split', parent: S0, children: [S2, S3], at: 3000 }, { kind: 'restart', worker: 'w1', pid: 9, at: 6000 }],
        processes: [proc('w2', [{ type: 'checkpoint', shardId: S0, at: 4000, checkpoint: { sequenceNumber: seq(9) }, finished: true }])],
        acks: [ack('w2', S2, 1, 4500), ack('w3', S3, 1, 5000)],
      });
      expect(result.notes.map((n) => [n.kind, n.at])).to.deep.equal([
        ['split', 3000], ['finished', 4000], ['handoff', 4500], ['handoff', 5000], ['restart', 6000],
      ]);
      expect(result.notes[1]?.text).to.contain('w2 read it to its end');
      expect(result.notes[3]?.text).to.contain('shard-0 -> shard-3: first record on w3, 1.0 s after the parent finished');
      expect(result.handoffMs).to.equal(1000);
    });

    it('before the parent finishes, the split is all there is to tell', () => {
      const result = timeline({ startedAt: 0, incidents: [{ kind: 'split', parent: S0, children: [S2, S3], at: 3000 }], processes: [], acks: [] });
      expect(result.notes.map((n) => n.kind)).to.deep.equal(['split']);
      expect(result.handoffMs).to.equal(undefined);
    });

    it('note keys are stable across recomputations, so each moment is printed once', () => {
      const args = { startedAt: 0, incidents: [kill], processes: [], acks: [ack('w2', S0, 2, 8000)] };
      const first = timeline(args).notes.map((n) => n.key);
      const again = timeline({ ...args, acks: [...args.acks, ack('w2', S0, 3, 9000), ack('w3', S1, 1, 9500)] }).notes.map((n) => n.key);
      expect(again).to.include.members(first);
      expect(new Set(again).size).to.equal(again.length);
    });
  });
});
