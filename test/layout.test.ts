import { readFileSync, readdirSync } from 'node:fs';
import { basename } from 'node:path';
import { expect } from 'chai';
import { cycles, folderOf, moduleEdges, sourceFiles } from './support/module-graph.js';

// The layers of src/ (design §8.4), lowest first: a folder may import only from folders of a lower
// layer. The public face (the four top-level files) sits above them all.
const LAYERS: readonly (readonly string[])[] = [
  ['errors'],
  ['ports', 'connections'],
  ['checkpoint'],
  ['reading'],
  ['kinesis', 'telemetry'],
  ['lease', 'operators'],
  ['group'],
  ['dynamodb'],
  // Operator tools and the testing kit: beside the public face, they may use its options.
  ['reset', 'testing', 'kcl'],
  ['cli'],
];
const APPLICATION_FOLDERS = new Set(['reset', 'testing', 'kcl', 'cli']);
const PUBLIC_FACE = ['index.ts', 'kinsumer.ts', 'options.ts', 'types.ts'];
const ENTRY_POINTS = new Set(['index.ts', 'kinsumer.ts']);
const MAX_LINES = 450;

const layerOf = (folder: string): number => LAYERS.findIndex((layer) => layer.includes(folder));

describe('the layout of src/ (design §8.4)', () => {
  const files = sourceFiles('src');
  const edges = moduleEdges(files).map((edge) => ({ ...edge, a: folderOf('src', edge.from), b: folderOf('src', edge.to) }));
  const show = (list: readonly { from: string; to: string }[]) => list.map((e) => `${e.from} -> ${e.to}`);

  it('holds only the public face at the top, and every folder is a layer', () => {
    const top = readdirSync('src', { withFileTypes: true });
    expect(top.filter((d) => d.isFile()).map((d) => d.name).sort()).to.deep.equal(PUBLIC_FACE);
    const folders = top.filter((d) => d.isDirectory()).map((d) => d.name);
    expect(folders.filter((folder) => layerOf(folder) < 0), 'folders in no layer').to.deep.equal([]);
  });

  it(`has no file over ${MAX_LINES} lines`, () => {
    const long = files.filter((file) => readFileSync(file, 'utf8').split('\n').length > MAX_LINES);
    expect(long).to.deep.equal([]);
  });

  it('imports point down the layers: a folder imports only folders below it, never the entry points', () => {
    const across = edges.filter((e) => e.a !== '.' && e.b !== '.' && e.a !== e.b);
    expect(show(across.filter((e) => layerOf(e.b) >= layerOf(e.a)))).to.deep.equal([]);
    expect(show(edges.filter((e) => e.a !== '.' && e.b === '.' && ENTRY_POINTS.has(basename(e.to))))).to.deep.equal([]);
  });

  it('the core takes only types from the public face (options.ts, types.ts): no run-time import goes up', () => {
    const up = edges.filter((e) => e.a !== '.' && e.b === '.' && !APPLICATION_FOLDERS.has(e.a) && !e.typeOnly);
    expect(show(up)).to.deep.equal([]);
  });

  it('has no import cycle between folders, nor between files at run time', () => {
    const folders = new Map<string, Set<string>>();
    for (const e of edges) {
      if (e.a === e.b || e.a === '.' || e.b === '.') continue;
      folders.set(e.a, (folders.get(e.a) ?? new Set()).add(e.b));
    }
    expect(cycles(folders).map((c) => c.join(' -> '))).to.deep.equal([]);
    const modules = new Map<string, Set<string>>();
    for (const e of edges) if (!e.typeOnly) modules.set(e.from, (modules.get(e.from) ?? new Set()).add(e.to));
    expect(cycles(modules).map((c) => c.join(' -> '))).to.deep.equal([]);
  });

  it('the checker sees a violation when there is one (an upward import, a cycle)', () => {
    const fake = [{ from: 'src/errors/x.ts', to: 'src/group/y.ts', a: 'errors', b: 'group' }];
    expect(fake.filter((e) => layerOf(e.b) >= layerOf(e.a))).to.have.length(1);
    expect(cycles(new Map([['a', new Set(['b'])], ['b', new Set(['a'])]]))).to.deep.equal([['a', 'b', 'a']]);
  });
});
