// The demo's terminal view: pure functions from a view model to lines of text, and a small writer
// that redraws them in place on a terminal, or prints plain lines when the output is a pipe.
// Every line is wrapped at word boundaries to the width it is written for: nothing is cut.
import { DEFAULTS } from 'kinsumer';
import { proseWords, wrapWords } from '../../src/cli/wrap.js';
import { settingText, shortShard, type Note, type ShardRow, type ViewModel, type WorkerRow } from './board.js';

/** Pipe mode keeps every line below this, so an ordinary terminal or log viewer does not wrap it. */
export const MAX_LINE = 119;

/**
 * `line` in lines of at most `width` characters, broken at spaces (a unit stays with its number),
 * continuation lines under `indent` (default: the line's own indent). A line that fits is kept as
 * it is; a word wider than a whole line is broken where it must be, so that a terminal never
 * wraps a line by itself.
 */
export function wrapLine(line: string, width: number, indent?: string): string[] {
  if (line.length <= width) return [line];
  const lead = /^ */.exec(line)?.[0] ?? '';
  return wrapAfter(lead, line.slice(lead.length), width, indent ?? lead);
}

/**
 * A table row or a note wrapped in its last column: the first `column` characters (padded cells,
 * a note's clock) are kept as they are, the rest wraps under them.
 */
export function wrapColumn(line: string, width: number, column: number): string[] {
  if (line.length <= width) return [line];
  // A terminal too narrow for the table: its columns give way, the words stay whole.
  if (column > width - 10) return wrapLine(line, width, '  ');
  return wrapAfter(line.slice(0, column), line.slice(column), width, ' '.repeat(column));
}

function wrapAfter(first: string, rest: string, width: number, indent: string): string[] {
  // A hanging indent that leaves less than 10 columns would wrap one word per line: start at the left instead.
  const hanging = indent.length <= width - 10 ? indent : '';
  return wrapWords(proseWords(rest), width, first, hanging).flatMap((wrapped) => {
    if (wrapped.length <= width) return [wrapped];
    const pieces: string[] = [];
    for (let left = wrapped; left.length > 0; left = left.length > width ? hanging + left.slice(width) : '') pieces.push(left.slice(0, width));
    return pieces;
  });
}

/** What the run ends with. */
export interface TallySummary {
  readonly produced: number;
  readonly consumedUnique: number;
  readonly duplicates: number;
  readonly lost: number;
  /** The first few lost records' tags, to look up in the ack logs. */
  readonly lostSample: readonly string[];
  readonly violations: readonly string[];
  readonly failoverMs: number | undefined;
  readonly handoffMs: number | undefined;
  /** The producer's average rate over its run, and what it aimed at. */
  readonly producedRate: number;
  readonly targetRate: number;
  /** The workers' `leaseTtlMs`: the failover figure depends on it. */
  readonly leaseTtlMs: number;
}

function pad(text: string | number, width: number): string {
  return String(text).padEnd(width);
}

function padLeft(text: string | number, width: number): string {
  return String(text).padStart(width);
}

/** `1234` → `1.2 s`; under a second in ms. */
export function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function clock(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

function shardState(row: ShardRow, model: ViewModel): string {
  if (row.state === 'finished') return 'finished';
  if (row.state === 'closed') return 'closed (reading to its end)';
  if (row.owner !== undefined || model.phase === 'done') return 'open';
  const waiting = row.parents.some((parent) => model.shards.find((s) => s.shardId === parent)?.state !== 'finished');
  return waiting ? 'open (waiting for parent)' : 'open (no owner)';
}

function workerShards(row: WorkerRow): string {
  return row.shards.length === 0 ? '-' : row.shards.map(shortShard).join(' ');
}

/**
 * Items joined by `separator` into lines of at most `width` characters (an item is split only
 * when it is wider than a line, at its spaces): the first line starts with `first`, the others
 * with `indent`.
 */
function packed(first: string, indent: string, items: readonly string[], separator = ' · ', width = MAX_LINE): string[] {
  const lines: string[] = [];
  let line = first;
  let empty = true;
  for (const item of items) {
    if (!empty && line.length + separator.length + item.length > width) {
      lines.push(line);
      line = indent;
      empty = true;
    }
    line += empty ? item : `${separator}${item}`;
    empty = false;
  }
  if (!empty) lines.push(line);
  return lines.flatMap((l) => wrapLine(l, width, indent));
}

/** The demo's timings next to the library's defaults: the failover the demo shows depends on them. */
export function renderTimings(timings: Readonly<Partial<Record<keyof typeof DEFAULTS, unknown>>>, width = MAX_LINE): string[] {
  const order = ['leaseTtlMs', 'shardCheckFrequencyMs', 'leaderActionFrequencyMs', 'commitFrequencyMs', 'throttleDelayMs', 'shutdownTimeoutMs'] as const;
  const items = order.flatMap((name) => {
    const value = timings[name];
    return typeof value === 'number' ? [`${name} ${settingText(value)} (default ${settingText(DEFAULTS[name])})`] : [];
  });
  return ['demo timings, shorter than the defaults so a crash shows within the run:', ...packed('  ', '  ', items, ' · ', width)];
}

/** Where the last column of the shard table starts (state), and of the worker table (shards): their continuation lines go there. */
const SHARD_STATE_COLUMN = 57;
const WORKER_SHARDS_COLUMN = 44;
/** Where the text of a note starts, past its `[ 12.3s] `. */
const NOTE_COLUMN = 9;

/**
 * The full board: header, the shard table, the worker table and the latest notes (at most
 * `maxNotes`, and no more than `maxNoteLines` lines of them, the newest kept), every line at most
 * `width` characters.
 */
export function renderBoard(model: ViewModel, maxNotes = 8, width = MAX_LINE, maxNoteLines = Infinity): string[] {
  const lines: string[] = [];
  const producer = model.producerElapsedMs === undefined
    ? ''
    : ` · producer ${clock(Math.min(model.producerElapsedMs, model.durationMs))} of ${clock(model.durationMs)}`;
  lines.push(...wrapLine(model.phase === 'starting'
    ? `kinsumer demo · starting: the workers are taking their leases · ${clock(model.elapsedMs)}`
    : `kinsumer demo · ${model.phase} · ${clock(model.elapsedMs)}${producer}`, width, '  '));
  lines.push(...packed('', '  ', [
    `produced ${model.produced} (${Math.round(model.producedRate)}/s average, target ${model.targetRate}/s)`,
    `consumed ${model.consumedUnique} distinct`,
    `duplicates ${model.duplicates}`,
  ], ' · ', width));
  lines.push('');
  lines.push(...wrapLine(`${pad('shard', 10)}${pad('parent', 10)}${pad('owner', 7)}${padLeft('consumed', 9)}${padLeft('lag rec', 9)}${padLeft('lag', 10)}  state`, width, '  '));
  for (const row of model.shards) {
    const parent = row.parents.length === 0 ? '-' : row.parents.map(shortShard).join('+');
    lines.push(...wrapColumn(
      `${pad(shortShard(row.shardId), 10)}${pad(parent, 10)}${pad(row.owner ?? '-', 7)}${padLeft(row.consumed, 9)}`
      + `${padLeft(row.lagRecords, 9)}${padLeft(formatMs(row.lagMs), 10)}  ${shardState(row, model)}`,
      width, SHARD_STATE_COLUMN,
    ));
  }
  lines.push('');
  lines.push(...wrapLine(`${pad('worker', 8)}${pad('pid', 8)}${pad('state', 10)}${padLeft('rate', 8)}${padLeft('acked', 8)}  shards`, width, '  '));
  for (const row of model.workers) {
    lines.push(...wrapColumn(
      `${pad(row.id, 8)}${pad(row.pid ?? '-', 8)}${pad(row.state, 10)}${padLeft(`${Math.round(row.rate)}/s`, 8)}${padLeft(row.acked, 8)}  ${workerShards(row)}`,
      width, WORKER_SHARDS_COLUMN,
    ));
  }
  // The newest notes that fit, in their order.
  const notes: string[][] = [];
  let noteLines = 0;
  for (const note of maxNotes > 0 ? model.notes.slice(-maxNotes).reverse() : []) {
    const wrapped = wrapColumn(renderNote(note), width, NOTE_COLUMN);
    if (noteLines + wrapped.length > maxNoteLines) break;
    notes.unshift(wrapped);
    noteLines += wrapped.length;
  }
  if (notes.length > 0) {
    lines.push('');
    for (const note of notes) lines.push(...note);
  }
  return lines;
}

/** One note as a line: its time since the start and what happened. */
export function renderNote(note: Note): string {
  return `[${padLeft(clock(note.at), 6)}] ${note.text}`;
}

/**
 * The whole state in plain lines (for a pipe, once a second): totals, then every shard and every
 * worker with labelled units, each line under {@link MAX_LINE} characters.
 */
export function renderStatusLines(model: ViewModel): string[] {
  const shards = model.shards.map((row) => {
    const name = shortShard(row.shardId);
    if (row.state === 'finished') return `${name} finished, ${row.consumed} consumed`;
    return `${name} ${row.owner ?? '-'} ${row.consumed} consumed, lag ${row.lagRecords} records / ${formatMs(row.lagMs)}`;
  });
  const workers = model.workers.map((row) => (row.state === 'running'
    ? `${row.id} ${row.shards.length} ${row.shards.length === 1 ? 'shard' : 'shards'}, ${Math.round(row.rate)}/s`
    : `${row.id} ${row.state}`));
  const indent = ' '.repeat(9);
  return [
    `[${padLeft(clock(model.elapsedMs), 6)}] ${model.phase} · produced ${model.produced} (${Math.round(model.producedRate)}/s)`
    + ` · consumed ${model.consumedUnique} · duplicates ${model.duplicates}`,
    ...packed(indent, indent, shards),
    ...packed(`${indent}workers: `, indent, workers),
  ];
}

/** A tally row: label, figure, and what it means (wrapped under itself to stay within `width`). */
function tallyRow(label: string, figure: string | number, meaning: string, width: number): string[] {
  const left = `  ${pad(label, 17)}${padLeft(figure, 8)}  `;
  return packed(left, ' '.repeat(left.length), proseWords(meaning), ' ', width);
}

/** The closing tally, every line at most `width`; its first line is the one to grep: `tally: produced N, ..., lost N`. */
export function renderTally(tally: TallySummary, width = MAX_LINE): string[] {
  const failover = tally.failoverMs === undefined ? 'not measured' : formatMs(tally.failoverMs);
  const handoff = tally.handoffMs === undefined ? 'not measured' : formatMs(tally.handoffMs);
  const lease = settingText(tally.leaseTtlMs);
  const lines = [
    ...wrapLine(`tally: produced ${tally.produced}, consumed unique ${tally.consumedUnique}, duplicates ${tally.duplicates}, lost ${tally.lost}, failover ${failover}`
    + `${tally.failoverMs === undefined ? '' : ` (leaseTtlMs ${lease})`}`, width, '  '),
    ...tallyRow('produced', tally.produced, `records put by the producer (${Math.round(tally.producedRate)}/s average, target ${tally.targetRate}/s)`, width),
    ...tallyRow('consumed unique', tally.consumedUnique, 'distinct records acked by some worker', width),
    ...tallyRow('duplicates', tally.duplicates, 'deliveries beyond the first (at-least-once: acked but not yet checkpointed when a worker died or let go)', width),
    ...tallyRow('LOST', tally.lost, tally.lost === 0 ? 'every produced record was acked' : `never acked, e.g. ${tally.lostSample.join(', ')}`, width),
    // Its own line: the figure is only as small as the demo's lease TTL.
    ...tallyRow('failover', failover, 'SIGKILL to records flowing again on every shard the dead worker held', width),
    ...wrapLine(`  ${' '.repeat(25)}  bounded by leaseTtlMs: ${lease} in this demo, ${settingText(DEFAULTS.leaseTtlMs)} by default`, width),
    ...tallyRow('split handoff', handoff, 'parent finished to the first record of its children', width),
  ];
  if (tally.violations.length > 0) {
    lines.push(`  ORDER VIOLATIONS ${padLeft(tally.violations.length, 8)}`);
    for (const violation of tally.violations.slice(0, 5)) lines.push(...packed('    ', '      ', violation.split(' '), ' ', width));
  }
  lines.push(tally.lost === 0 && tally.violations.length === 0 ? 'result: OK, nothing lost' : 'result: FAILED');
  return lines;
}

/** Where the view goes: `process.stdout`, or a fake in tests. */
export interface Output {
  readonly isTTY?: boolean;
  readonly columns?: number;
  readonly rows?: number;
  write(text: string): unknown;
}

/** Shows the run: `tick` each second with the latest model, `line` for anything else, `end` once. */
export interface ViewWriter {
  /** The width lines are written for now: the terminal's columns less one, {@link MAX_LINE} in a pipe. */
  width(): number;
  tick(model: ViewModel): void;
  line(text: string): void;
  /** The final board (kept on screen, or printed once in a pipe) and the tally under it. */
  end(model: ViewModel, tally: readonly string[]): void;
}

const ESC = '\u001b[';

/**
 * On a terminal: redraws the board in place each tick (cursor up over the last drawing, clear
 * below). In a pipe: each note once, as it appears, and one status line per tick; no escape codes.
 */
export function createWriter(output: Output): ViewWriter {
  if (output.isTTY === true) {
    let drawn = 0;
    // A line as wide as the terminal wraps by itself, and a board taller than it scrolls: either
    // breaks the cursor-up redraw, which counts the lines it wrote. So every line is wrapped here,
    // one column short of the width, and the oldest notes dropped to fit the height.
    const width = () => (output.columns === undefined || output.columns <= 0 ? MAX_LINE : Math.max(20, output.columns - 1));
    const noteLines = (model: ViewModel, w: number) => (output.rows === undefined || output.rows <= 0 ? Infinity : Math.max(0, output.rows - 1 - renderBoard(model, 0, w).length - 1));
    const erase = () => {
      if (drawn > 0) output.write(`${ESC}${drawn}A\r${ESC}0J`);
      drawn = 0;
    };
    return {
      width,
      tick(model) {
        const w = width();
        const lines = renderBoard(model, 8, w, noteLines(model, w));
        erase();
        output.write(`${lines.join('\n')}\n`);
        drawn = lines.length;
      },
      line(text) {
        // Printed above the board: the next tick redraws below it.
        erase();
        output.write(`${wrapLine(text, width(), '  ').join('\n')}\n`);
      },
      end(model, tally) {
        // The last board stays on screen; the tally goes under it.
        this.tick(model);
        drawn = 0;
        output.write(`\n${tally.flatMap((line) => wrapLine(line, width())).join('\n')}\n`);
      },
    };
  }
  const printed = new Set<string>();
  return {
    width: () => MAX_LINE,
    tick(model) {
      for (const note of model.notes) {
        if (printed.has(note.key)) continue;
        printed.add(note.key);
        output.write(`${wrapColumn(renderNote(note), MAX_LINE, NOTE_COLUMN).join('\n')}\n`);
      }
      for (const line of renderStatusLines(model)) output.write(`${line}\n`);
    },
    line(text) {
      output.write(`${wrapLine(text, MAX_LINE, '  ').join('\n')}\n`);
    },
    end(model, tally) {
      this.tick(model);
      output.write(`\n${renderBoard(model, 0).join('\n')}\n\n${tally.join('\n')}\n`);
    },
  };
}
