// Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time by function and by source
// (kinsumer's own modules, RxJS, the benchmark's synthetic stream, Node, GC).
//
//   npx tsx bench/support/cpu-profile.ts <file.cpuprofile> [top]
import { readFileSync } from 'node:fs';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

function source(url: string, name: string): string {
  if (name === '(garbage collector)') return 'GC';
  if (name === '(idle)' || name === '(program)') return name;
  if (url.includes('/src/')) return `kinsumer ${url.slice(url.indexOf('/src/') + 1)}`;
  if (url.includes('/bench/')) return `bench ${url.slice(url.indexOf('/bench/') + 1)}`;
  if (url.includes('node_modules/rxjs')) return 'rxjs';
  if (url.includes('node_modules/')) return `node_modules ${url.split('node_modules/')[1]?.split('/')[0] ?? ''}`;
  if (url.startsWith('node:') || url === '') return 'node / V8 built-ins';
  return url;
}

const [file, topArg] = process.argv.slice(2);
if (file === undefined) throw new Error('usage: cpu-profile.ts <file.cpuprofile> [top]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const selfMicros = new Map<number, number>();
profile.samples.forEach((id, i) => selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...selfMicros.values()].reduce((a, b) => a + b, 0);
const byFunction = new Map<string, number>();
const bySource = new Map<string, number>();
for (const node of profile.nodes) {
  const micros = selfMicros.get(node.id) ?? 0;
  const { functionName, url } = node.callFrame;
  const name = functionName === '' ? '(anonymous)' : functionName;
  const where = source(url, name);
  byFunction.set(`${name}  [${where}]`, (byFunction.get(`${name}  [${where}]`) ?? 0) + micros);
  bySource.set(where, (bySource.get(where) ?? 0) + micros);
}
const show = (map: Map<string, number>, top: number): string => [...map].sort((a, b) => b[1] - a[1]).slice(0, top)
  .map(([key, micros]) => `${((100 * micros) / total).toFixed(1).padStart(5)} %  ${key}`).join('\n');
console.log(`self time by source (${(total / 1e6).toFixed(1)} s sampled)\n${show(bySource, 12)}\n\nself time by function\n${show(byFunction, Number(topArg ?? 20))}`);
