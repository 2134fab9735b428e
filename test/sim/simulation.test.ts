import { expect } from 'chai';
import { runSchedule } from './run.js';
import { CLASSIC_KINDS, DEFAULT_KINDS, type Command, type FaultKind, KINDS_OF_ISSUE_24, KINDS_OF_ISSUE_30, KINDS_OF_ISSUE_32, type Schedule, type SimConfig } from './schedule.js';
import { simulateSeed } from './search.js';
import { replayCommand } from './report.js';

// A small group that does nothing unusual, for hand-written schedules.
const QUIET: SimConfig = {
  rngSeed: 7,
  clients: 2,
  shards: 2,
  start: 'TRIM_HORIZON',
  startAgoMs: 0,
  preRecords: 20,
  recordsPerSecond: 10,
  timings: {
    throttleDelayMs: 200, commitFrequencyMs: 200, shardCheckFrequencyMs: 500, leaderActionFrequencyMs: 1000,
    leaseTtlMs: 3000, shutdownTimeoutMs: 5000, maxInFlightRecords: 20,
  },
  storeLatencyMs: 0,
  skewsMs: Array.from({ length: 10 }, () => 0),
  handlers: Array.from({ length: 8 }, () => ({ mode: 'sync' as const })),
  readMode: 'polling',
  aggregatePercent: 0,
  partitionKeys: 1_000_000,
};

const every = new Set<FaultKind>(DEFAULT_KINDS);
/** Seeds 1..this with every kind, in `npm test` (each a few seconds: the wall time is in view). */
const RECORD_PATH_SEEDS = 6;
/** Seeds 1..this of the effects table (issue 24), in `npm test`. */
const EFFECTS_SEEDS = 4;
/**
 * The seed that finds double applications with the lease (and token) condition dropped from the
 * memory store's transaction, at the schedule it shrank to: seed 37 of effects,pause,fault,hang,crash,
 * process-records with sabotage 'unfenced-transaction' (the first of 300 seeds that breaks
 * effects-once). Issue 24 found it as seed 15; once leases lived by their owner's heartbeat (issue
 * 32) it was seed 31; with the delivery count's recordings riding the commits, seed 31's run no
 * longer put a transaction beside a fenced lease, and seed 37 is the first again.
 */
const EFFECTS_TEETH = {
  seed: 37,
  kinds: new Set<FaultKind>(['effects', 'pause', 'fault', 'hang', 'crash', 'process-records']),
  path: '0:14:5:4:4:8:22:22:23:17:16:20:15:17',
} as const;
/** The kinds of the second round: their seeds and shrunk paths replay the schedules they always did. */
const classic = new Set<FaultKind>(CLASSIC_KINDS);

function schedule(commands: Command[], config: Partial<SimConfig> = {}): Schedule {
  return { config: { ...QUIET, ...config }, commands };
}

/** Kinds of trouble to leave out, e.g. SIM_EXCLUDE=never-ack,ooo-ack,latest,reset,skew,hang,dup-id while their fixes are not merged. */
function kindsFromEnvironment(kinds: readonly FaultKind[]): Set<FaultKind> {
  const excluded = new Set((process.env.SIM_EXCLUDE ?? '').split(',').map((k) => k.trim()).filter((k) => k !== ''));
  return new Set(kinds.filter((k) => !excluded.has(k)));
}

describe('simulation of whole groups (design §7.6)', function () {
  this.timeout(120_000);

  describe('the checker fails a group that breaks a guarantee', () => {
    it('a stream that hides one record from every reader: lost-record', async () => {
      const result = await runSchedule(schedule([{ waitTenths: 10, type: 'produce', count: 30 }]), { kinds: every, sabotage: 'drop-record' });
      expect([...result.counts.keys()]).to.include('lost-record');
      expect(result.violations.find((v) => v.invariant === 'lost-record')?.message).to.match(/1 of \d+ records never acked/);
    });

    it('a lease store that accepts a zombie\'s writes: fenced-write', async () => {
      // c0 freezes for two TTLs: c1 takes its shard. A zombie's only write once it thaws is a commit
      // of acks that came due while it was frozen (a slow handler's), before its next heartbeat is
      // refused (its life ended): that commit must be fenced.
      const commands: Command[] = [{ waitTenths: 10, type: 'pause', client: 0, tenths: 20 }, { waitTenths: 30, type: 'produce', count: 10 }];
      const slow = { handlers: [{ mode: 'slow' as const, delayMs: 300 }, ...QUIET.handlers.slice(1)] };
      const result = await runSchedule(schedule(commands, slow), { kinds: every, sabotage: 'ignore-fence' });
      expect([...result.counts.keys()]).to.include('fenced-write');
    });

    it('a lease store whose transactions carry no condition on the checkpoint row: records\' writes applied twice (effects-once)', async () => {
      // The teeth seed at the schedule it shrank to with the condition dropped from the memory
      // store's transaction (issue 24's teeth, found again under issue 32's liveness).
      const outcome = await simulateSeed(EFFECTS_TEETH.seed, { kinds: EFFECTS_TEETH.kinds, maxCommands: 30, shrink: false, path: EFFECTS_TEETH.path, sabotage: 'unfenced-transaction' });
      expect([...outcome.result.counts.keys()]).to.include('effects-once');
      expect(outcome.result.violations.find((v) => v.invariant === 'effects-once')?.message).to.match(/its writes were applied 2 times/);
    });

    it('the same group with honest ports breaks nothing', async () => {
      const commands: Command[] = [{ waitTenths: 10, type: 'pause', client: 0, tenths: 20 }, { waitTenths: 30, type: 'produce', count: 10 }];
      const result = await runSchedule(schedule(commands), { kinds: every });
      expect(result.violations).to.deep.equal([]);
      expect(result.stats.deliveries).to.be.greaterThan(0);
      expect(result.stats.captures).to.be.greaterThan(2);
    });
  });

  it('a seed replays bit for bit: the same schedule, steps, checks and findings', async () => {
    const options = { kinds: every, maxCommands: 12, shrink: false };
    const [first, second] = [await simulateSeed(1, options), await simulateSeed(1, options)];
    expect(second.schedule).to.deep.equal(first.schedule);
    expect({ ...second.result, counts: [...second.result.counts] }).to.deep.equal({ ...first.result, counts: [...first.result.counts] });
  });

  // A fixed set of seeds with every kind of trouble of the second round (the schedules they always
  // had). On a branch where a defect is not fixed yet, the seeds that find it fail here: SIM_EXCLUDE
  // leaves those kinds out.
  describe('fixed seeds', () => {
    const kinds = kindsFromEnvironment(CLASSIC_KINDS);
    const maxCommands = 20;
    for (let seed = 1; seed <= 16; seed += 1) {
      it(`seed ${seed} (${kinds.size === CLASSIC_KINDS.length ? 'every classic kind' : [...kinds].join(',')}) keeps every invariant`, async () => {
        const outcome = await simulateSeed(seed, { kinds, maxCommands, shrink: false });
        const found = outcome.result.violations.map((v) => `${v.invariant}: ${v.message}`);
        expect(found, `replay: ${replayCommand(seed, kinds, maxCommands)}`).to.deep.equal([]);
      });
    }
  });

  // Every kind of trouble, the record path's included (operators, KPL, fan-out, wall-clock steps,
  // quiet shards, retained memory): a few short schedules.
  describe('fixed seeds, every kind', () => {
    const kinds = kindsFromEnvironment(DEFAULT_KINDS);
    const maxCommands = 10;
    for (let seed = 1; seed <= RECORD_PATH_SEEDS; seed += 1) {
      it(`seed ${seed} (${kinds.size === DEFAULT_KINDS.length ? 'every kind' : [...kinds].join(',')}) keeps every invariant`, async () => {
        const outcome = await simulateSeed(seed, { kinds, maxCommands, shrink: false });
        const found = outcome.result.violations.map((v) => `${v.invariant}: ${v.message}`);
        expect(found, `replay: ${replayCommand(seed, kinds, maxCommands)}`).to.deep.equal([]);
      });
    }
  });

  // Issue 24: records acked with writes of their own, committed with their checkpoint; every kind
  // of trouble the classic rounds have, and the operators. Each record's writes applied exactly
  // once if checkpointed, never otherwise (effects-once), beside every other invariant.
  describe('the effects table (issue 24)', () => {
    const kinds = kindsFromEnvironment([...CLASSIC_KINDS, 'process-records', 'process-batches', 'effects']);
    const maxCommands = 12;
    for (let seed = 1; seed <= EFFECTS_SEEDS; seed += 1) {
      it(`seed ${seed} (${[...kinds].join(',')}) keeps every invariant`, async () => {
        const outcome = await simulateSeed(seed, { kinds, maxCommands, shrink: false });
        expect(outcome.result.effects?.records, 'records\' writes applied').to.be.greaterThan(0);
        const found = outcome.result.violations.map((v) => `${v.invariant}: ${v.message}`);
        expect(found, `replay: ${replayCommand(seed, kinds, maxCommands)}`).to.deep.equal([]);
      });
    }

    it(`seed ${EFFECTS_TEETH.seed} at its shrunk schedule (the teeth above) keeps every invariant with honest ports`, async () => {
      const outcome = await simulateSeed(EFFECTS_TEETH.seed, { kinds: EFFECTS_TEETH.kinds, maxCommands: 30, shrink: false, path: EFFECTS_TEETH.path });
      expect(outcome.result.effects?.records).to.be.greaterThan(0);
      expect(outcome.result.violations).to.deep.equal([]);
    });
  });

  // Seeds `npm run simulate` found on the merged fixes, replayed at their shrunk schedules: each is a
  // defect that was fixed (see docs/simulation.md), kept so it cannot come back unnoticed.
  describe('seeds the simulator found', () => {
    const found: readonly { seed: number; path: string; what: string }[] = [
      { seed: 67, path: '0:0:1:0:0:4:1:1:2:1:3:2:2:2:2:1:2:5:1:1:11:11:11:3:5:1:2:5:2:3:3:3:3:3:3:3:3:3:3:3:3:3:7:12:12:12:17:5:16:15:15:15:17:16', what: 'a reset to LATEST, then a graceful hand-off re-read acked records (graceful-redelivery)' },
      { seed: 104, path: '0:1:0:1:0:0:1:0:0:0:0:0:0:1:2:0:0:1:0:0:0:3:5:2:3:7:5:0:0:1:1:3:1:1:2:1:2:1:2:4:1:1:4:3:3:4:3:3:3:3:3:3:4:4:4:4:4:4:4:4:4:4:4:4:4:4:4:7:4:4:5:5:4:4:4:4:10:3:8:9:13:13:13:8', what: 'a forced reset to LATEST and a merge (graceful-redelivery)' },
      { seed: 432, path: '0:0:3:1:1:0:0:0:1:1:3:4:1:1:0:2:3:2:0:2:0:0:3:5:5:5:5:5:5:5:5:5:5:5:5:5:5:5:5:5:8:2:0:1:0:1:1:1:2:0:0:4:2:3:7:4:3:3:3:7:5:4:0:1:7:12:12:13:4:14:13:13:13:13:13:11', what: 'a reset of a Finished shard to TRIM_HORIZON: the fenced owner captured it again and read it from the start (graceful-redelivery)' },
      { seed: 1164, path: '0:1:1:6:7:6:7:6:7:8:6:6:7:14:9:6:6:6:8:6:6:6:6:6:6:6:6:6:6:8:8:9:0:1:7:0:0:9:6:6:6:6:7:7:7:9:9:9:11:11:11:11:11:11:11:11:11', what: 'a forced reset to a timestamp, then to LATEST: the kept start re-read what was acked before the first reset (graceful-redelivery)' },
      { seed: 1463, path: '0:0:3:4:3:3:1:2:10:6:2:4:6:5:7:7:2:2:4:2:2:10:10:10:10:10:10:10:10:10:10:10:10:10:10:14:4:4:4:4:4:4:2:4:6:8:19:18:23:29:29', what: 'a slow LATEST group reading a merged child from its start: the calm phase took the catch-up for a stall (lost-record, a checker fault)' },
      { seed: 206, path: '0:0:2:3:3:4:4:3:5:7:5:5:8:5:5:12:6:7:12:12:12:12:12:12:12:12:12:16:5:10:5:6:15:18:20:18:18:19:19:1', what: 'a LATEST owner frozen after its first delivery: the next read records from before the start (first-delivery-order)' },
    ];
    for (const { seed, path, what } of found) {
      it(`seed ${seed}: ${what}`, async () => {
        const outcome = await simulateSeed(seed, { kinds: classic, maxCommands: 30, shrink: false, path });
        const violations = outcome.result.violations.map((v) => `${v.invariant}: ${v.message}`);
        expect(violations, `replay: ${replayCommand(seed, classic, 30, path)} --no-shrink`).to.deep.equal([]);
      });
    }
  });

  // Issue 23's seeds, replayed at their shrunk schedules with the kinds they were found with: seed 7
  // found processBatches' window timed on a stepped wall clock (fixed by schedulerClock); the others
  // found R10, R11 and R12 (and 0460f69, the reset's start) with each fix reverted (docs/simulation.md, "Teeth: the third review").
  describe('seeds the simulator found in issue 23', () => {
    const found: readonly { seed: number; kinds: readonly FaultKind[]; path: string; what: string }[] = [
      { seed: 7, kinds: ['step', 'process-batches'], path: '0:19:0:2:1:2:0:8:13:0:2:0:2:4:4:0:2:1:2:1:5:0:2:2:3:0:1:0:4:5:5:5:0:0:0:0:0:0:0:0:0:0:0:0:0:1:0:0:1:2:2:2:2:2:2:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:1:0:1:2:1:1:1:1:2:2:5:1:1:3:3:4:5:5:4', what: 'a -60 s step during a 5 s processBatches window held the batch a minute (read-stall)' },
      { seed: 6, kinds: ['step'], path: '0:0:0:0:0:1:0:1:1:1:1:1:1:0:0:0:2:2:1:3:1:1:2:4:3:3:3:4', what: 'R10: a -60 s step stalled the shard\'s polls (read-stall)' },
      { seed: 51, kinds: ['step'], path: '0:0:1:0:2:3:2:2:2:2:2:1:1:2:1:2:2:2:2:2:2:6:5:5:6:6', what: 'R10: a +1 s step took a live lease (live-lease-taken)' },
      { seed: 5, kinds: ['step', 'pause'], path: '0:0:1:1:1:1:1:1:2:4:4:4:11:1:1:1:1:1:1:4:5:5:9:13:14:13', what: 'R10: a -20 s step, then a pause: the fenced owner delivered on (zombie-emission)' },
      { seed: 68, kinds: ['memory', 'process-records'], path: '0:1:0:1:0:4:1:2:5:0:0:0:0:1:0:0:0:0', what: 'R11: processRecords kept settled records reachable (retained-memory)' },
      { seed: 7, kinds: ['memory', 'process-batches'], path: '0:0:1:0:2:1:2:2:2:2:2:2:3:2:3:3:3:3:3:3', what: 'R11: processBatches kept settled records reachable (retained-memory)' },
      { seed: 5, kinds: ['reset', 'latest'], path: '0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:4:2:2:4:5:7:7:2:3:5:5', what: 'R12, the reset\'s start: a record put just after a reset to LATEST, before the next iterator, was never read (lost-record)' },
      { seed: 337, kinds: KINDS_OF_ISSUE_24, path: '0:0:6:6:2:5:0:6:0:2:5:0:8', what: 'a forced reset to LATEST of a parent just finished: its children start at the reset\'s moment (lost-record, read-stall; a checker fault)' },
      { seed: 963, kinds: KINDS_OF_ISSUE_24, path: '0:0:1:1:1:1:2:1:2:4', what: 'children readable only when a slow parent finished, long after the calm (read-stall; a checker fault)' },
      { seed: 10, kinds: ['quiet', 'latest'], path: '0:0:2:2:1', what: 'R12: a fresh LATEST group handed a shard off before its first record: the next owner read a minute before the start (before-start)' },
      { seed: 490, kinds: KINDS_OF_ISSUE_24, path: '0:0:0:0:1:2:1:2:2:2:2:3:2:2', what: 'R12, the start kept at capture: an owner crashed before its first iterator\'s stream time was stored; the next owner read from its clock less five minutes (before-start)' },
      { seed: 1162, kinds: KINDS_OF_ISSUE_24, path: '0:1:6:9:9:9:9:9:9:9:9', what: 'R12, the start kept at capture: the same after a freeze (before-start)' },
    ];
    for (const { seed, kinds, path, what } of found) {
      it(`seed ${seed} (${kinds === KINDS_OF_ISSUE_24 ? 'every kind of issue 24' : kinds.join(',')}): ${what}`, async () => {
        const only = new Set(kinds);
        const outcome = await simulateSeed(seed, { kinds: only, maxCommands: 30, shrink: false, path });
        const violations = outcome.result.violations.map((v) => `${v.invariant}: ${v.message}`);
        expect(violations, `replay: ${replayCommand(seed, only, 30, path)} --no-shrink`).to.deep.equal([]);
      });
    }
  });

  // Issue 30's teeth, at their shrunk schedules with the kinds they were found with (docs/simulation.md,
  // "Teeth: the fourth review"): R18 found with lazy unpacking reverted (a page of KPL aggregates made
  // into records at once), R15 found on a branch without its fix (a child of a finished parent reset
  // to LATEST started at a new tip). On a branch where R15 is not fixed yet, SIM_EXCLUDE=reset-finished
  // leaves its seed out.
  describe('seeds the simulator found in issue 30', () => {
    const excluded = new Set((process.env.SIM_EXCLUDE ?? '').split(',').map((k) => k.trim()));
    const found: readonly { seed: number; kinds: readonly FaultKind[]; path: string; what: string }[] = [
      { seed: 58, kinds: ['memory', 'kpl', 'slow'], path: '0:5:4:0:2:0', what: 'R18: a page of KPL aggregates unpacked at once kept 14 user records waiting for room, bound 9 (retained-memory)' },
      { seed: 10, kinds: ['reset-finished', 'latest'], path: '0:0:0:1:0:0:0:2:2:2:0:2:2:2:2:2:3:0:2:2:2:2:3:3:3:3', what: 'R15: the children of a finished parent reset to LATEST started at a new tip: records put after the reset were lost (lost-record)' },
      { seed: 281, kinds: KINDS_OF_ISSUE_30, path: '0:0:0:0:0:0:1:1:1:1:0:0:1:0:0:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:2:2:2:6:0:5:5:5:5:9:9:14:14:14', what: 'a merge of a split\'s children, none read before their finished grandparent was reset to LATEST, read from the reset\'s moment: the checker owed it whole (read-stall, lost-record; a checker fault)' },
    ];
    for (const { seed, kinds, path, what } of found) {
      (kinds.some((kind) => excluded.has(kind)) ? it.skip : it)(`seed ${seed} (${kinds === KINDS_OF_ISSUE_30 ? 'every kind of issue 30' : kinds.join(',')}): ${what}`, async () => {
        const only = new Set(kinds);
        const outcome = await simulateSeed(seed, { kinds: only, maxCommands: 30, shrink: false, path });
        const violations = outcome.result.violations.map((v) => `${v.invariant}: ${v.message}`);
        expect(violations, `replay: ${replayCommand(seed, only, 30, path)} --no-shrink`).to.deep.equal([]);
      });
    }
  });

  // Issue 32's seeds, at their shrunk schedules with every kind of issue 32 (docs/simulation.md).
  describe('seeds the simulator found in issue 32', () => {
    const found: readonly { seed: number; path: string; what: string; open?: string }[] = [
      { seed: 112, path: '0', what: 'a process stopping after its pipeline failed was refused (replaced) and heartbeat once more as a newcomer: it took the place back, and both emitted (twin-emission)' },
      { seed: 49, path: '0:0:2:2:1:2:3:1:4:1', what: 'status().lastError kept an error whose unformatted stack held a processBatches batch of a lease lost to a reset: 15 records reachable, bound 12 (retained-memory)' },
      { seed: 74, path: '0:0:1:0:6:2:1:0:3:5:2:4:4:4:4:3:6:3:1:4:4:4:4:4:4:4:4:4:4:4:4:4:4:4:4:4:4:4:4', what: 'the same with two processes replaced while they ran: the old one took the place back and emitted under fenced leases (zombie-emission)',
        // Open (docs/simulation.md, issue 32): since the merge of i31-bytes the same schedule meets a
        // second defect — a forced reset's revocation (Revoked on the owner's row) is acknowledged by
        // the heartbeat that reads it; when that heartbeat's answer is lost, the owner is never told and
        // emits under the fenced lease until a write of it is refused (zombie-emission, 1.8 s and more).
        open: 'a revocation acknowledged by a heartbeat whose answer was lost is never told to the owner' },
      // Found by the 2,000-seed run on the merged main (2026-12-05, docs/simulation.md), not fixed: kept
      // at their shrunk paths so the fix can be shown on them.
      { seed: 74, path: '0:0:4:3:2:1', what: 'a forced reset\'s revocation whose acknowledging heartbeat lost its answer: the owner emitted under the fenced lease 20 s (zombie-emission; the whole run\'s first failure)',
        open: 'a revocation acknowledged by a heartbeat whose answer was lost is never told to the owner' },
      { seed: 101, path: '0', what: 'every shard reset to LATEST --force during 2 % transient faults: an owner emitted under a fenced lease 2.9 s after its last confirmation (zombie-emission; also in npm run simulate -- --seeds 300)',
        open: 'a revocation acknowledged by a heartbeat whose answer was lost is never told to the owner' },
      { seed: 225, path: '0:2:1:1:0:0:0:0:0:0:1:0:1:4:0:3:3:3:3:3:3:3:3:3:5:4:4:4:5:4:6', what: 'a process frozen while replaced woke after its replacement had stopped (and deleted the row) and went on as the same life (twin-emission)',
        open: 'a deleted clients row is no fence: a replaced process that never saw its refusal re-registers' },
      { seed: 682, path: '0:12:14:3', what: 'a crashed member\'s shard captured about 1.1 s after the TTL, past the model bound TTL + throttleDelayMs + 250 ms (crash-failover)',
        open: 'failover slower than the model bound, not understood' },
      { seed: 810, path: '0:6:1:4:1:3', what: 'forced resets during 29 % transient faults: shards without an owner 23 s after the calm (unowned-shard)',
        open: 'likely the revocation acknowledgement above' },
      { seed: 1213, path: '0:0:1:0:0:2:3:2:2:2:1:3:1:2:1:3:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:7:6:6:6:6:12:12:18:11',
        what: 'a member frozen in its first TTL woke and captured a lease whose owner had renewed 31 ms earlier (live-lease-taken)',
        open: 'a member that slept judges a life expired without a read sent after its wake-up' },
    ];
    for (const { seed, path, what, open } of found) {
      (open === undefined ? it : it.skip)(`seed ${seed} (every kind of issue 32): ${what}${open === undefined ? '' : ` — skipped, open: ${open}`}`, async () => {
        const only = new Set(KINDS_OF_ISSUE_32);
        const outcome = await simulateSeed(seed, { kinds: only, maxCommands: 30, shrink: false, path });
        const violations = outcome.result.violations.map((v) => `${v.invariant}: ${v.message}`);
        expect(violations, `replay: ${replayCommand(seed, only, 30, path)} --no-shrink`).to.deep.equal([]);
      });
    }
  });
});
