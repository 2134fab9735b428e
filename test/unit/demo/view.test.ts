import { expect } from 'chai';
import type { Note, ShardRow, ViewModel, WorkerRow } from '../../../examples/demo/board.js';
import { FLEET_TIMINGS } from '../../../examples/demo/fleet.js';
import {
  createWriter, formatMs, renderBoard, renderNote, renderStatusLines, renderTally, renderTimings, type TallySummary,
} from '../../../examples/demo/view.js';

const S = (n: number) => `shardId-${String(n).padStart(12, '0')}`;

function shard(n: number, fields: Partial<ShardRow> = {}): ShardRow {
  return { shardId: S(n), parents: [], owner: 'w1', consumed: 10, lagRecords: 0, lagMs: 0, state: 'open', ...fields };
}

function worker(id: string, fields: Partial<WorkerRow> = {}): WorkerRow {
  return { id, pid: 4242, state: 'running', shards: [], rate: 0, acked: 0, ...fields };
}

function note(at: number, text: string, kind: Note['kind'] = 'kill'): Note {
  return { key: `${kind}:${text}`, at, kind, text };
}

function model(fields: Partial<ViewModel> = {}): ViewModel {
  return {
    elapsedMs: 12_345, producerElapsedMs: 10_345, durationMs: 30_000, phase: 'running', produced: 1200, producedRate: 99.6, targetRate: 100,
    consumedUnique: 1187, duplicates: 3,
    shards: [
      shard(0, { owner: 'w2', consumed: 310, lagRecords: 2, lagMs: 150 }),
      shard(1, { owner: undefined, consumed: 290, lagRecords: 40, lagMs: 3210 }),
      shard(2, { state: 'finished', consumed: 300 }),
      shard(3, { parents: [S(2)], owner: 'w3' }),
    ],
    workers: [worker('w1', { state: 'killed' }), worker('w2', { shards: [S(0), S(4)], rate: 51.4, acked: 620 }), worker('w3', { shards: [S(3)], rate: 49, acked: 577 })],
    notes: [],
    failoverMs: undefined,
    handoffMs: undefined,
    ...fields,
  };
}

const ESC = '\u001b';

/** A fake stdout: what was written, as one string. */
function output(tty: { columns?: number; rows?: number } | undefined) {
  const written: string[] = [];
  return {
    ...(tty === undefined ? {} : { isTTY: true, ...tty }),
    write(text: string) { written.push(text); return true; },
    text: () => written.join(''),
    writes: written,
  };
}

describe('demo view (rendering the live view)', () => {
  it('formats durations: ms below a second, one decimal of seconds above', () => {
    expect(formatMs(0)).to.equal('0 ms');
    expect(formatMs(999.4)).to.equal('999 ms');
    expect(formatMs(3210)).to.equal('3.2 s');
  });

  describe('the board', () => {
    it('has a header with phase, the run\'s clock, the producer\'s progress and totals (average rate next to the target)', () => {
      const [title, totals] = renderBoard(model());
      expect(title).to.equal('kinsumer demo · running · 12.3s · producer 10.3s of 30.0s');
      expect(totals).to.equal('produced 1200 (100/s average, target 100/s) · consumed 1187 distinct · duplicates 3');
      // Before the producer starts there is no producer progress to show.
      expect(renderBoard(model({ phase: 'starting', elapsedMs: 4000, producerElapsedMs: undefined }))[0])
        .to.equal('kinsumer demo · starting: the workers are taking their leases · 4.0s');
    });

    it('one row per shard: short id, parent, owner, consumed, lag in records and time, state', () => {
      const lines = renderBoard(model());
      const header = lines.findIndex((l) => l.startsWith('shard '));
      expect(lines[header]).to.match(/^shard\s+parent\s+owner\s+consumed\s+lag rec\s+lag\s+state$/);
      expect(lines[header + 1]).to.match(/^shard-0\s+-\s+w2\s+310\s+2\s+150 ms\s+open$/);
      expect(lines[header + 2]).to.match(/^shard-1\s+-\s+-\s+290\s+40\s+3\.2 s\s+open \(no owner\)$/);
      expect(lines[header + 3]).to.match(/^shard-2\s+.*finished$/);
      expect(lines[header + 4]).to.match(/^shard-3\s+shard-2\s+w3\s/);
    });

    it('a child without an owner waits for its parent until the parent is finished', () => {
      const waiting = model({ shards: [shard(0, { state: 'closed' }), shard(4, { parents: [S(0)], owner: undefined })] });
      expect(renderBoard(waiting).find((l) => l.startsWith('shard-4'))).to.match(/open \(waiting for parent\)$/);
      expect(renderBoard(waiting).find((l) => l.startsWith('shard-0'))).to.match(/closed \(reading to its end\)$/);
      const free = model({ shards: [shard(0, { state: 'finished' }), shard(4, { parents: [S(0)], owner: undefined })] });
      expect(renderBoard(free).find((l) => l.startsWith('shard-4'))).to.match(/open \(no owner\)$/);
      expect(renderBoard({ ...free, phase: 'done' }).find((l) => l.startsWith('shard-4'))).to.match(/\sopen$/);
    });

    it('one row per worker: pid, state, rate, acked and the shards it holds', () => {
      const lines = renderBoard(model());
      expect(lines.find((l) => l.startsWith('w1'))).to.match(/^w1\s+4242\s+killed\s+0\/s\s+0\s+-$/);
      expect(lines.find((l) => l.startsWith('w2'))).to.match(/^w2\s+4242\s+running\s+51\/s\s+620\s+shard-0 shard-4$/);
    });

    it('ends with the latest notes, as many as asked for', () => {
      const notes = [note(1000, 'one'), note(2000, 'two'), note(3000, 'three')];
      const lines = renderBoard(model({ notes }), 2);
      expect(lines.slice(-2)).to.deep.equal(['[  2.0s] two', '[  3.0s] three']);
      expect(renderBoard(model({ notes }), 0).some((l) => l.includes('one'))).to.equal(false);
    });
  });

  it('a note is its time since the start and its text', () => {
    expect(renderNote(note(12_345, 'SIGKILL w1'))).to.equal('[ 12.3s] SIGKILL w1');
  });

  it('the status lines carry every shard and worker with labelled units (lag N records / T)', () => {
    const lines = renderStatusLines(model());
    expect(lines[0]).to.equal('[ 12.3s] running · produced 1200 (100/s) · consumed 1187 · duplicates 3');
    const rest = lines.slice(1).join(' · ');
    for (const item of [
      'shard-0 w2 310 consumed, lag 2 records / 150 ms', 'shard-1 - 290 consumed, lag 40 records / 3.2 s',
      'shard-2 finished, 300 consumed', 'shard-3 w3 10 consumed, lag 0 records / 0 ms',
      'workers: w1 killed', 'w2 2 shards, 51/s', 'w3 1 shard, 49/s',
    ]) expect(rest).to.contain(item);
    expect(lines.slice(1).every((l) => l.startsWith(' '.repeat(9)))).to.equal(true);
  });

  it('in a pipe, every line stays under 120 characters: many shards, long notes, the final board and the tally', () => {
    const busy = model({
      elapsedMs: 1_234_567, producedRate: 4999, targetRate: 5000, produced: 9_999_999, consumedUnique: 9_999_999, duplicates: 99_999,
      shards: Array.from({ length: 12 }, (_, i) => shard(i, { owner: i % 3 === 0 ? undefined : `w${i % 3}`, consumed: 999_999, lagRecords: 99_999, lagMs: 999_999, parents: i > 5 ? [S(i - 6)] : [] })),
      workers: Array.from({ length: 6 }, (_, i) => worker(`w${i}`, { shards: [S(i), S(i + 6)], rate: 4999, acked: 9_999_999 })),
      notes: [
        note(7_500, 'SIGKILL w1 (pid 1234567) while it held shard-0, shard-1, shard-2, shard-3: no release, no final commit'),
        note(10_400, 'failover shard-1: w1 -> w3, records flowing again 2.9 s after the kill (its 3 s lease had to expire)', 'failover'),
      ],
    });
    const out = output(undefined);
    const writer = createWriter(out);
    for (const line of renderTimings(FLEET_TIMINGS)) writer.line(line);
    writer.tick(busy);
    writer.end({ ...busy, phase: 'done' }, renderTally({
      produced: 9_999_999, consumedUnique: 9_999_990, duplicates: 99_999, lost: 9, lostSample: ['key-001#99999', 'key-002#99999', 'key-003#99999'],
      violations: ['per-shard order: shardId-000000000001: key-001#5 (49600000000000000000000000000000000000000000000000000005) received before key-001#4'],
      failoverMs: 2900, handoffMs: 300, producedRate: 4999, targetRate: 5000, leaseTtlMs: 3000,
    }));
    const long = out.text().split('\n').filter((l) => l.length >= 120);
    expect(long).to.deep.equal([]);
  });

  // Newcomer trial 3, in an 80-column terminal: the notes were cut at the right edge (`... no
  // release, no f`), the status line lost its duplicate count, and the banner, the timings and
  // the tally broke mid-word (`(default\n 1 s)`, `failover 3.1\ns`, `target 1\n00/s`).
  it('at 80 columns on a terminal: every line fits, no word is cut, no unit is parted from its number, nothing is lost', () => {
    const kill = 'SIGKILL w1 (pid 5950) while it held shard-0, shard-1: no release, no final commit';
    const failover = 'failover shard-1: w1 -> w3, records flowing again 3.1 s after the kill (its 3 s lease had to expire)';
    const busy = model({
      produced: 2960, producedRate: 98.7, targetRate: 100, consumedUnique: 1668, duplicates: 28,
      shards: [shard(0, { state: 'closed' }), shard(4, { parents: [S(0)], owner: undefined }), shard(5, { parents: [S(0)], owner: undefined })],
      workers: [worker('w1', { state: 'killed' }), worker('w2', { shards: Array.from({ length: 9 }, (_, i) => S(i)), rate: 51.4, acked: 620 })],
      notes: [note(10_200, kill), note(13_300, failover, 'failover'), note(14_000, 'handoff shard-0 -> shard-5: first record on w2, 0.4 s after the parent finished', 'handoff')],
    });
    const out = output({ columns: 80, rows: 45 });
    const writer = createWriter(out);
    expect(writer.width()).to.equal(79);
    writer.line('kinsumer demo: 4-shard stream, 3 worker processes, producer target 100 records/s for 30 s');
    for (const line of renderTimings(FLEET_TIMINGS, writer.width())) writer.line(line);
    writer.tick(busy);
    writer.end({ ...busy, phase: 'done' }, renderTally({
      produced: 2960, consumedUnique: 2960, duplicates: 28, lost: 0, lostSample: [], violations: [],
      failoverMs: 3100, handoffMs: 400, producedRate: 98.7, targetRate: 100, leaseTtlMs: 3000,
    }, writer.width()));
    const text = out.text().replace(/\u001b\[\d*[A-Za-z]/g, '').replace(/\r/g, '');
    const lines = text.split('\n');
    expect(lines.filter((l) => l.length > 80)).to.deep.equal([]);
    const flat = text.replace(/\s+/g, ' ');
    for (const whole of [kill, failover, 'duplicates 28', 'commitFrequencyMs 500 ms (default 1 s)', 'target 100/s', 'open (waiting for parent)', 'failover 3.1 s (leaseTtlMs 3 s)']) {
      expect(flat, whole).to.contain(whole);
    }
    // A number at the end of a line is never followed by its unit on the next.
    for (const [i, line] of lines.entries()) {
      const next = (lines[i + 1] ?? '').trimStart();
      expect(/\d$/.test(line) && /^(s|ms)\b/.test(next), `${line} / ${next}`).to.equal(false);
    }
  });

  it('says the demo\'s timings next to the library\'s defaults', () => {
    const text = renderTimings(FLEET_TIMINGS).join('\n');
    expect(text).to.contain('leaseTtlMs 3 s (default 15 s)');
    expect(text).to.contain('shardCheckFrequencyMs 500 ms (default 5 s)');
    expect(text).to.contain('commitFrequencyMs 500 ms (default 1 s)');
  });

  describe('the tally', () => {
    const ok: TallySummary = {
      produced: 1200, consumedUnique: 1200, duplicates: 24, lost: 0, lostSample: [], violations: [], failoverMs: 3100, handoffMs: 250,
      producedRate: 99.6, targetRate: 100, leaseTtlMs: 3000,
    };

    it('starts with one line to grep, and says OK when nothing was lost', () => {
      const lines = renderTally(ok);
      expect(lines[0]).to.equal('tally: produced 1200, consumed unique 1200, duplicates 24, lost 0, failover 3.1 s (leaseTtlMs 3 s)');
      expect(lines.find((l) => l.includes('split handoff'))).to.contain('250 ms');
      expect(lines.at(-1)).to.equal('result: OK, nothing lost');
    });

    it('says the lease TTL next to the failover figure, and the producer\'s average rate next to its target', () => {
      const text = renderTally(ok).join('\n');
      expect(text).to.match(/failover +3\.1 s  SIGKILL to records flowing again [^\n]*\n +bounded by leaseTtlMs: 3 s in this demo, 15 s by default/);
      expect(text).to.contain('records put by the producer (100/s average, target 100/s)');
    });

    it('names lost records and order violations, and says FAILED', () => {
      const lines = renderTally({ ...ok, consumedUnique: 1198, lost: 2, lostSample: ['key-001#4', 'key-002#9'], violations: ['per-shard order: x'], failoverMs: undefined });
      expect(lines[0]).to.contain('lost 2, failover not measured');
      expect(lines.find((l) => l.includes('LOST'))).to.contain('key-001#4, key-002#9');
      expect(lines.some((l) => l.includes('ORDER VIOLATIONS'))).to.equal(true);
      expect(lines).to.include('    per-shard order: x');
      expect(lines.at(-1)).to.equal('result: FAILED');
    });
  });

  describe('the writer', () => {
    it('in a pipe: plain lines, one status line per tick, each note once, no escape codes', () => {
      const out = output(undefined);
      const writer = createWriter(out);
      const kill = note(3000, 'SIGKILL w1');
      writer.line('started w1 (pid 1)');
      writer.tick(model({ notes: [kill] }));
      writer.tick(model({ notes: [kill, note(6000, 'failover shard-0', 'failover')] }));
      writer.end(model({ phase: 'done' }), ['tally: produced 1']);
      const lines = out.text().split('\n');
      expect(out.text()).to.not.contain(ESC);
      expect(lines.filter((l) => l.endsWith('SIGKILL w1'))).to.have.length(1);
      expect(lines.filter((l) => l.endsWith('failover shard-0'))).to.have.length(1);
      expect(lines.filter((l) => /^\[ *[\d.]+s\] (running|done) · /.test(l))).to.have.length(3);
      // The final board is printed once in full, then the tally.
      expect(lines.some((l) => /^shard-0\s+-\s+w2/.test(l))).to.equal(true);
      expect(lines.filter((l) => l !== '').at(-1)).to.equal('tally: produced 1');
    });

    it('on a terminal: each tick moves the cursor up over the last board and clears below it', () => {
      const out = output({ columns: 200, rows: 50 });
      const writer = createWriter(out);
      writer.tick(model());
      const height = renderBoard(model()).length;
      expect(out.writes[0]).to.not.contain(ESC);
      writer.tick(model());
      expect(out.writes[1]).to.equal(`${ESC}[${height}A\r${ESC}[0J`);
      expect(out.writes[2]?.split('\n')).to.have.length(height + 1);
    });

    it('on a terminal: a line goes above the board, which the next tick redraws below it', () => {
      const out = output({ columns: 200, rows: 50 });
      const writer = createWriter(out);
      writer.tick(model());
      writer.line('restarted w1');
      writer.tick(model());
      expect(out.writes.slice(1)).to.deep.equal([
        `${ESC}[${renderBoard(model()).length}A\r${ESC}[0J`, 'restarted w1\n', `${renderBoard(model()).join('\n')}\n`,
      ]);
    });

    it('on a terminal: long lines wrap to the width, nothing cut, and the oldest notes are dropped to fit the height', () => {
      const out = output({ columns: 40, rows: 30 });
      const writer = createWriter(out);
      const notes = Array.from({ length: 8 }, (_, i) => note(i * 1000, `note ${i} ${'word '.repeat(12)}end`));
      writer.tick(model({ notes }));
      const lines = out.text().split('\n').slice(0, -1);
      expect(lines.every((l) => l.length <= 39)).to.equal(true);
      expect(lines.length).to.be.at.most(29);
      expect(lines.some((l) => l.includes('note 0'))).to.equal(false);
      // The newest note is kept whole: its text continues under itself until its last word.
      const newest = lines.findIndex((l) => /^\[ +7\.0s\] note 7/.test(l));
      expect(newest).to.be.greaterThan(0);
      expect(lines.slice(newest).join(' ').replace(/\s+/g, ' ')).to.equal(`[ 7.0s] note 7 ${'word '.repeat(12)}end`);
      expect(lines.slice(newest + 1).every((l) => l.startsWith(' '.repeat(9)))).to.equal(true);
      // The redraw moves up over exactly the lines it wrote.
      writer.tick(model({ notes }));
      expect(out.writes[1]).to.equal(`${ESC}[${lines.length}A\r${ESC}[0J`);
    });

    it('on a terminal: the end leaves the last board on screen with the tally under it', () => {
      const out = output({ columns: 200, rows: 50 });
      const writer = createWriter(out);
      writer.tick(model());
      writer.end(model({ phase: 'done' }), ['tally: produced 1200', 'result: OK, nothing lost']);
      const last = out.writes.at(-1);
      expect(last).to.equal('\ntally: produced 1200\nresult: OK, nothing lost\n');
      expect(out.writes.at(-2)).to.contain('kinsumer demo · done');
    });
  });
});
