// How import-kcl and export-kcl show their plan to a person, at the terminal's width (80 in a
// pipe): a row per shard with its sequence numbers shortened as `status` shows them, and each
// line's reason under the table, wrapped; a block per shard when even the short rows are too wide
// (a start AT_TIMESTAMP beside a forced write). `--wide`: a line per shard with everything in full,
// as wide as it takes. Pure.
import { planStartText } from '../../kcl/kinsumer-side.js';
import type { KclPlan, KclPlanCheckpoint, KclPlanLine } from '../../kcl/plan.js';
import { counted, renderTable, shortSequence } from '../format.js';
import { proseWords, wrapText, wrapWords } from '../wrap.js';

/** Which way the checkpoints move: the plan's columns come in that order. */
export type KclDirection = 'import' | 'export';

/** A sequence number (56 digits) wherever it stands in a cell or a sentence. */
const SEQUENCE_NUMBER = /\d{20,}/g;

/** An ISO time on a whole second: its `.000` says nothing. */
const WHOLE_SECOND = /(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.000Z/g;

/** `text` with its sequence numbers shortened (`496808…243330`) and its whole-second times without `.000`. */
export function shortNumbers(text: string): string {
  return text.replace(SEQUENCE_NUMBER, (digits) => shortSequence(digits)).replace(WHOLE_SECOND, '$1Z');
}

function kclText(kcl: KclPlanCheckpoint | undefined): string {
  if (kcl === undefined) return '-';
  return kcl.subSequenceNumber === undefined ? kcl.checkpoint : `${kcl.checkpoint}/${kcl.subSequenceNumber}`;
}

function actionText(line: KclPlanLine): string {
  return line.forced === true ? 'write (forced)' : line.action;
}

function headersOf(direction: KclDirection): string[] {
  return direction === 'import' ? ['SHARD', 'KCL CHECKPOINT', 'KINSUMER START', 'ACTION'] : ['SHARD', 'KINSUMER CHECKPOINT', 'KCL CHECKPOINT', 'ACTION'];
}

function cellsOf(line: KclPlanLine, direction: KclDirection): string[] {
  const kcl = kclText(line.kcl);
  const start = planStartText(line.start);
  return [line.shardId, ...(direction === 'import' ? [kcl, start] : [start, kcl]), actionText(line)];
}

/** The plan as a person reads it; see the file comment. */
export function planView(plan: KclPlan, direction: KclDirection, width: number, wide = false): string {
  const headers = headersOf(direction);
  if (wide) return renderTable([...headers, 'WHY'], plan.shards.map((line) => [...cellsOf(line, direction), line.reason ?? '']));
  const rows = plan.shards.map((line) => cellsOf(line, direction).map(shortNumbers));
  const table = renderTable(headers, rows);
  if (table.split('\n').every((row) => row.length <= width)) {
    const reasons = plan.shards.flatMap((line) => (line.reason === undefined ? [] : wrapText(`${line.shardId}: ${shortNumbers(line.reason)}`, width, '  ')));
    return reasons.length === 0 ? table : `${table}\n${reasons.map((row) => `${row}\n`).join('')}`;
  }
  return plan.shards.map((line, i) => blockOf(line, headers, rows[i] ?? [], width)).join('\n');
}

// `shardId  action`, then a labelled line for each side and for the reason.
function blockOf(line: KclPlanLine, headers: readonly string[], cells: readonly string[], width: number): string {
  const labels = [headers[1] ?? '', headers[2] ?? '', 'WHY'];
  const column = Math.max(...labels.map((label) => label.length)) + 4;
  const labelled = (label: string, text: string) => wrapWords(proseWords(text), width, `  ${label.padEnd(column - 2)}`, ' '.repeat(column));
  return [
    `${cells[0] ?? ''}  ${cells[3] ?? ''}`,
    ...labelled(labels[0] ?? '', cells[1] ?? ''),
    ...labelled(labels[1] ?? '', cells[2] ?? ''),
    ...(line.reason === undefined ? [] : labelled('WHY', shortNumbers(line.reason))),
  ].map((row) => `${row}\n`).join('');
}

/** What the run left alone in the KCL table, if anything. */
export function ignoredLines(plan: KclPlan): string[] {
  const { otherStreams, otherItems } = plan.ignored;
  return [
    ...(otherStreams > 0 ? [`left alone: ${counted(otherStreams, 'lease')} of other streams`] : []),
    ...(otherItems > 0 ? [`left alone: ${counted(otherItems, 'item')} that ${otherItems === 1 ? 'is not a lease' : 'are not leases'} (KCL 3.5's leader, migration, worker-metrics and stream items)`] : []),
  ];
}

/** The shards a plan writes (in a dry run: would write). */
export function writtenShards(plan: KclPlan): string[] {
  return plan.shards.filter((line) => line.action === 'write').map((line) => line.shardId);
}
