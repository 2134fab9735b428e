// import-kcl / export-kcl plans at 80 columns (issue 34 item 6, newcomer trial 4 §2b: 150–310
// columns a line, two 56-digit sequence numbers and the reason on each). Pure.
import { expect } from 'chai';
import { ignoredLines, planView } from '../../../src/cli/commands/kcl-view.js';
import { reportLines } from '../../../src/cli/wrap.js';
import type { KclPlan, KclPlanLine } from '../../../src/index.js';

const SEQ = '49680840417564901387444416823464503004629127665526243330';
const PENDING = '49680840417564901387444416823464503004629127665526405682';

function plan(shards: readonly KclPlanLine[], ignored = { otherStreams: 0, otherItems: 0 }): KclPlan {
  return { shards, written: 0, refused: [], dryRun: true, watchedMs: 0, ignored };
}

const longest = (text: string) => Math.max(...text.split('\n').map((line) => line.length));

const IMPORT: KclPlanLine[] = [
  { shardId: 'shardId-000000000000', kcl: { checkpoint: SEQ, subSequenceNumber: 0 }, start: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ }, action: 'refuse', reason: 'its KCL lease moved during the watch (a live KCL worker) (--force writes it anyway)' },
  { shardId: 'shardId-000000000001', kcl: { checkpoint: 'TRIM_HORIZON' }, start: { type: 'TRIM_HORIZON' }, action: 'write' },
  { shardId: 'shardId-000000000002', kcl: { checkpoint: 'SHARD_END' }, start: { type: 'FINISHED' }, action: 'write' },
  { shardId: 'shardId-000000000003', kcl: { checkpoint: SEQ, subSequenceNumber: 0 }, start: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ }, action: 'write', reason: `pendingCheckpoint ${PENDING}/0 (prepared, not committed) is not used, as the KCL does not resume from it` },
];

describe('kcl plans as text (80 columns)', () => {
  it('a row per shard with sequence numbers shortened as status shows them, each reason under the table, wrapped', () => {
    const text = planView(plan(IMPORT), 'import', 80);
    expect(longest(text), text).to.be.at.most(80);
    expect(text.split('\n').slice(0, 5)).to.deep.equal([
      'SHARD                 KCL CHECKPOINT   KINSUMER START       ACTION',
      'shardId-000000000000  496808…243330/0  after 496808…243330  refuse',
      'shardId-000000000001  TRIM_HORIZON     TRIM_HORIZON         write',
      'shardId-000000000002  SHARD_END        FINISHED             write',
      'shardId-000000000003  496808…243330/0  after 496808…243330  write',
    ]);
    expect(text).to.contain('\nshardId-000000000000: its KCL lease moved during the watch (a live KCL worker)\n  (--force writes it anyway)\n');
    expect(text.replace(/\n {2}/g, ' ')).to.contain('shardId-000000000003: pendingCheckpoint 496808…405682/0 (prepared, not committed) is not used');
  });

  it('a block per shard when even the short rows do not fit (a timestamp beside a forced write)', () => {
    const lines: KclPlanLine[] = [
      { shardId: 'shardId-000000000001', kcl: { checkpoint: 'AT_TIMESTAMP' }, start: { type: 'AT_TIMESTAMP', timestamp: new Date('2026-01-31T12:00:00.250Z') }, action: 'write', forced: true, reason: 'a live kinsumer client (w-alpha) holds it: written because of --force' },
      { shardId: 'shardId-000000000002', kcl: { checkpoint: SEQ, subSequenceNumber: 0 }, start: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ }, action: 'write' },
    ];
    const text = planView(plan(lines), 'export', 80);
    expect(longest(text), text).to.be.at.most(80);
    expect(text).to.equal([
      'shardId-000000000001  write (forced)',
      '  KINSUMER CHECKPOINT  AT_TIMESTAMP 2026-01-31T12:00:00.250Z',
      '  KCL CHECKPOINT       AT_TIMESTAMP',
      '  WHY                  a live kinsumer client (w-alpha) holds it: written',
      '                       because of --force',
      '',
      'shardId-000000000002  write',
      '  KINSUMER CHECKPOINT  after 496808…243330',
      '  KCL CHECKPOINT       496808…243330/0',
      '',
    ].join('\n'));
  });

  it('--wide: a line per shard with everything in full', () => {
    const text = planView(plan(IMPORT), 'import', 80, true);
    expect(text.split('\n')[0]).to.match(/^SHARD +KCL CHECKPOINT +KINSUMER START +ACTION +WHY$/);
    expect(text).to.match(new RegExp(`^shardId-000000000000 +${SEQ}/0 +after ${SEQ} +refuse +its KCL lease moved`, 'm'));
    expect(longest(text)).to.be.greaterThan(150);
  });

  it('what was left alone, counted in the singular for one', () => {
    expect(ignoredLines(plan([], { otherStreams: 1, otherItems: 1 }))).to.deep.equal([
      'left alone: 1 lease of other streams',
      "left alone: 1 item that is not a lease (KCL 3.5's leader, migration, worker-metrics and stream items)",
    ]);
    expect(ignoredLines(plan([], { otherStreams: 0, otherItems: 3 }))[0]).to.match(/^left alone: 3 items that are not leases/);
    expect(longest(reportLines(ignoredLines(plan([], { otherStreams: 2, otherItems: 3 })), 80))).to.be.at.most(80);
  });
});
