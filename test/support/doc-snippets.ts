// The TypeScript of the user documentation (README.md and the pages under docs/), as the doc
// tests read it: every ```ts block, with the HTML comment right before it that says what kind of
// block it is (the rendered page does not show the comment). Three kinds besides plain code:
//   <!-- doc-test given               the names it uses without defining them, as declarations;
//   declare function handle(...): …;  compiled with them
//   -->
//   <!-- doc-test acks-every-record   the same, then run on a consumer group in virtual time: every
//   declare const consumer: …;        record put must end up acked
//   -->
//   <!-- doc-test run <name> -->      a whole program: compiled, then run as written (tsx)
// `given` may carry a name too (`<!-- doc-test given first-example`), for a test that runs the
// block in its own way (test/integration/readme-shutdown.test.ts).
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export interface Snippet {
  /** The page it is in, relative to the repository (`README.md`, `docs/operating.md`). */
  readonly document: string;
  /** Where the code starts in its page (1-based). */
  readonly line: number;
  readonly code: string;
  readonly mode: 'plain' | 'given' | 'acks-every-record' | 'run';
  /** The name after the mode, if any: for `run`, which expectations apply. */
  readonly name: string | undefined;
  /** The declarations the comment gives. */
  readonly given: string;
  /** A file name for it, unique among all the snippets of one `docSnippets()` call. */
  readonly file: string;
}

// `<!-- doc-test run name -->` on one line, or `<!-- doc-test mode` + declarations + `-->`, right before the fence.
const FENCE = /(?:<!-- doc-test ([^\n]*?)(?: -->|\n([\s\S]*?)\n-->)\n)?```(?:ts|typescript)\n([\s\S]*?)```/g;
const MARKER = /<!-- doc-test /g;
const MODES: readonly Snippet['mode'][] = ['plain', 'given', 'acks-every-record', 'run'];

/** The user documentation: README.md, then every Markdown page under docs/ (but not the generated docs/api/). */
export function docPages(root = '.'): string[] {
  const pages = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md') && !name.startsWith('api/'))
    .map((name) => `docs/${name}`)
    .sort();
  return ['README.md', ...pages];
}

/** The snippets of one page, numbered from `first` for their file names. */
export function snippetsOf(document: string, text: string, first = 0): Snippet[] {
  const found = [...text.matchAll(FENCE)].map((match, i): Snippet => {
    const [whole, directive = '', given = '', code = ''] = match;
    const [mode = 'plain', name] = directive.trim() === '' ? [] : directive.trim().split(/\s+/);
    if (!(MODES as readonly string[]).includes(mode)) throw new Error(`${document}: unknown doc-test mode '${mode}'`);
    const line = text.slice(0, (match.index ?? 0) + whole.indexOf('```')).split('\n').length + 1;
    return { document, line, code, mode: mode as Snippet['mode'], name, given: given.trim(), file: `snippet-${String(first + i).padStart(2, '0')}.ts` };
  });
  const markers = text.match(MARKER)?.length ?? 0;
  const marked = found.filter((s) => s.mode !== 'plain').length;
  if (marked !== markers) throw new Error(`${document}: ${markers} doc-test comments but ${marked} sit right before a \`\`\`ts block`);
  return found;
}

/** Every page's snippets, file names unique across the pages. */
export function docSnippets(root = '.'): Snippet[] {
  const all: Snippet[] = [];
  for (const page of docPages(root)) all.push(...snippetsOf(page, readFileSync(join(root, page), 'utf8'), all.length));
  return all;
}

/** The one snippet with this name (any mode), wherever it lives. */
export function namedSnippet(all: readonly Snippet[], name: string): Snippet {
  const found = all.filter((s) => s.name === name);
  if (found.length !== 1) throw new Error(`expected one doc-test snippet named '${name}' in ${docPages().join(', ')}, found ${found.length}`);
  return found[0]!;
}

/** Where the reader's `kinsumer` and `kinsumer/testing` come from: the sources. */
export const SOURCES = { kinsumer: resolve('src/index.ts'), 'kinsumer/testing': resolve('src/testing/index.ts') } as const;

/**
 * A reader's project in a new temporary folder: ES modules, the package's dependencies at hand
 * (this repository's node_modules), the package itself mapped to its sources for tsc and tsx, the
 * repository's strict settings; `files` are what tsc checks. Returns the folder.
 */
export async function readerProject(prefix: string, files: readonly string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await symlink(resolve('node_modules'), join(dir, 'node_modules'), 'dir');
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'doc-snippets', private: true, type: 'module' }));
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'ES2022', lib: ['ES2022'], module: 'NodeNext', moduleResolution: 'NodeNext', strict: true,
      noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true, noImplicitOverride: true, noFallthroughCasesInSwitch: true,
      isolatedModules: true, verbatimModuleSyntax: true, skipLibCheck: true, noEmit: true, types: ['node'],
      paths: Object.fromEntries(Object.entries(SOURCES).map(([name, path]) => [name, [path]])),
    },
    files,
  }));
  return dir;
}
