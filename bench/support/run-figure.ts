// Runs one figure module in this process and writes its result as JSON: the child side of
// bench/run.ts. The module is imported dynamically and must export a `Figure` (see harness.ts).
//
//   node --import tsx bench/support/run-figure.ts <module.ts> --out <file.json> [--quick | --tiny]
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { type Figure, runFigure } from './harness.js';

function isFigure(value: unknown): value is Figure {
  return typeof value === 'object' && value !== null && typeof (value as Figure).name === 'string' && typeof (value as Figure).run === 'function';
}

async function run(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE = '1';
  const [file, ...argv] = process.argv.slice(2);
  const outAt = argv.indexOf('--out');
  const out = outAt >= 0 ? argv[outAt + 1] : undefined;
  if (file === undefined || out === undefined) throw new Error('usage: run-figure.ts <module.ts> --out <file.json> [--quick | --tiny]');
  const module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const figure = Object.values(module).find(isFigure);
  if (figure === undefined) throw new Error(`${file} exports no Figure (an object with name and run(options))`);
  const tiny = argv.includes('--tiny');
  const result = await runFigure(figure, { quick: tiny || argv.includes('--quick'), tiny });
  writeFileSync(out, JSON.stringify(result));
}

run().then(() => process.exit(0), (error: unknown) => {
  console.error(error);
  process.exit(1);
});
