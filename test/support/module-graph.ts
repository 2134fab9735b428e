// The import graph of src/, as the layout test reads it: every relative import and re-export of
// every file, with whether it is type-only (erased at run time) and which folder it crosses into.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';

/** One import or re-export statement between two files of src/. */
export interface ModuleEdge {
  readonly from: string;
  readonly to: string;
  /** `import type` / `export type`: nothing of it remains at run time. */
  readonly typeOnly: boolean;
}

/** Every .ts file under `root`, as paths relative to the working directory. */
export function sourceFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (path.endsWith('.ts')) files.push(path);
    }
  };
  walk(root);
  return files.sort();
}

const IMPORT = /^(?:import|export)(\s+type)?\s[^;]*?from\s+['"](\.[^'"]+)['"]/gms;

/** The relative imports of the given files. */
export function moduleEdges(files: readonly string[]): ModuleEdge[] {
  return files.flatMap((from) => [...readFileSync(from, 'utf8').matchAll(IMPORT)].map((m) => ({
    from,
    to: normalize(join(dirname(from), (m[2] ?? '').replace(/\.js$/, '.ts'))),
    typeOnly: m[1] !== undefined,
  })));
}

/** The folder of a file under `root` (`'.'` for a file at its top level). */
export function folderOf(root: string, file: string): string {
  const parts = relative(root, file).split(sep);
  return parts.length > 1 ? (parts[0] as string) : '.';
}

/** Cycles in a directed graph given as adjacency sets, each as the list of its nodes. */
export function cycles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (node: string, path: string[]): void => {
    state.set(node, 'open');
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next, [...path, next]);
    }
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node, [node]);
  return found;
}
