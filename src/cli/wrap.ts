// Text for an 80-column terminal: words on lines no wider than the terminal, continuation lines
// under a hanging indent. Pure.

/** Columns when the output is not a terminal (a pipe, a file, a test): what a default terminal has. */
export const DEFAULT_WIDTH = 80;

/** The width to write for: the terminal's columns, {@link DEFAULT_WIDTH} when the output is not a terminal. */
export function outputWidth(output: { readonly columns?: number | undefined }): number {
  const { columns } = output;
  return typeof columns === 'number' && Number.isFinite(columns) && columns > 0 ? Math.floor(columns) : DEFAULT_WIDTH;
}

/**
 * The words of a line of prose. A unit keeps to its number (`3 s`, `500 ms`): broken between
 * them, `3.1` ends one line and `s` starts the next, which reads as a typo.
 */
export function proseWords(text: string): string[] {
  const words: string[] = [];
  for (const word of text.split(' ').filter((w) => w !== '')) {
    const last = words.at(-1);
    if (last !== undefined && /\d$/.test(last) && /^(ms|s|min|h|%|KiB|MiB|MB|kB)\b/.test(word)) words[words.length - 1] = `${last} ${word}`;
    else words.push(word);
  }
  return words;
}

/**
 * The words of a command line as `--help` shows it: a bracketed group (`[--shard <id>[,<id>...]]`,
 * `<ISO timestamp>`, `(--consumer-name <name> | --app <name>)`) stays whole, like the option it is.
 */
export function usageWords(text: string): string[] {
  const words: string[] = [];
  let word = '';
  let depth = 0;
  for (const char of text) {
    if (char === ' ' && depth === 0) {
      if (word !== '') words.push(word);
      word = '';
      continue;
    }
    if (char === '[' || char === '<' || char === '(') depth += 1;
    if ((char === ']' || char === '>' || char === ')') && depth > 0) depth -= 1;
    word += char;
  }
  if (word !== '') words.push(word);
  return words;
}

/**
 * `words` on lines of at most `width` characters, one space apart: the first line starts with
 * `first`, the others with `indent` (a hanging indent). A word longer than a whole line is put on
 * a line of its own rather than cut.
 */
export function wrapWords(words: readonly string[], width: number, first: string, indent: string): string[] {
  const lines: string[] = [];
  let line = first;
  let empty = true;
  for (const word of words) {
    if (!empty && line.length + 1 + word.length > width) {
      lines.push(line);
      line = indent;
      empty = true;
    }
    line += empty ? word : ` ${word}`;
    empty = false;
  }
  if (!empty || lines.length === 0) lines.push(line.trimEnd());
  return lines;
}

/** Prose wrapped to `width`, continuation lines under `indent` (default: as deep as the first line's own indent). */
export function wrapText(text: string, width: number, indent?: string): string[] {
  const lead = /^ */.exec(text)?.[0] ?? '';
  return wrapWords(proseWords(text.slice(lead.length)), width, lead, indent ?? lead);
}

/**
 * Lines of a command's report at `width`: a line that fits is kept as it is (its spacing too); a
 * longer one is wrapped, its continuation lines two deeper than its own indent. Each ends with a newline.
 */
export function reportLines(lines: readonly string[], width: number): string {
  return lines
    .flatMap((line) => (line.length <= width ? [line] : wrapText(line, width, `${/^ */.exec(line)?.[0] ?? ''}  `)))
    .map((line) => `${line}\n`)
    .join('');
}

/**
 * Two columns: each label, then its text wrapped under a hanging indent at the text column. When
 * the terminal leaves the text less than `minText` columns, each text goes under its label instead.
 */
export function twoColumns(rows: readonly (readonly [label: string, text: string])[], width: number, minText = 30): string[] {
  const column = Math.max(...rows.map(([label]) => label.length)) + 2;
  if (width - column < minText) {
    const under = ' '.repeat(6);
    return rows.flatMap(([label, text]) => [label, ...wrapWords(proseWords(text), width, under, under)]);
  }
  const hanging = ' '.repeat(column);
  return rows.flatMap(([label, text]) => wrapWords(proseWords(text), width, label.padEnd(column), hanging));
}
