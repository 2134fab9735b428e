import { execFile } from 'node:child_process';
import { relative } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import ts from 'typescript';

const run = promisify(execFile);

async function check(command: string, args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run(command, args, { cwd: process.cwd(), maxBuffer: 16 * 1024 * 1024 });
    return stdout + stderr;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed:\n${stdout}${stderr}`);
  }
}

describe('static checks', function () {
  this.timeout(300_000);

  it('typechecks (tsc --noEmit, strict, src + test + examples + bench)', async () => {
    const output = await check('npx', ['--no-install', 'tsc', '-p', 'tsconfig.json', '--noEmit']);
    expect(output.trim()).to.equal('');
  });

  it('lints clean (eslint with typescript-eslint, type-checked rules)', async () => {
    const output = await check('npx', ['--no-install', 'eslint', '.', '--max-warnings', '0']);
    expect(output.trim()).to.equal('');
  });

  it('the API reference builds without warnings (typedoc: every public name documented, exported and linked)', async () => {
    // --emit none: validation only, nothing written; warnings fail the run (check throws with the output).
    const output = await check('npx', ['--no-install', 'typedoc', '--emit', 'none', '--treatWarningsAsErrors']);
    expect(output).to.not.match(/\[(warning|error)\]/);
  });

  it('reads "what time it is" off a scheduler only in src/ports/clock.ts (one seam: review-4 §3.7)', () => {
    // A scheduler's now() is the wall clock under RxJS's own schedulers (Date.now): read anywhere
    // else it is a second rule for the time, as maxRecordAgeMs's once was (R19). Found by type,
    // not by name: any `.now()` call on a value with a scheduler's shape (now and schedule).
    expect(schedulerNowOutsideClock()).to.deep.equal([]);
  });
});

/** `file:line` of every `.now()` called on a scheduler in src/ outside src/ports/clock.ts (checking that it has one is no reading). */
function schedulerNowOutsideClock(): string[] {
  const configPath = ts.findConfigFile(process.cwd(), (path) => ts.sys.fileExists(path), 'tsconfig.build.json');
  if (configPath === undefined) throw new Error('tsconfig.build.json not found');
  const config = ts.getParsedCommandLineOfConfigFile(configPath, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
  if (config === undefined) throw new Error('tsconfig.build.json does not parse');
  const program = ts.createProgram({ rootNames: config.fileNames, options: { ...config.options, noEmit: true } });
  const checker = program.getTypeChecker();
  const found: string[] = [];
  for (const file of program.getSourceFiles()) {
    const path = relative(process.cwd(), file.fileName);
    if (!path.startsWith('src/') || path === 'src/ports/clock.ts') continue;
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'now') {
        const receiver = checker.getNonNullableType(checker.getTypeAtLocation(node.expression.expression));
        if (receiver.getProperty('schedule') !== undefined && receiver.getProperty('now') !== undefined) {
          found.push(`${path}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${node.getText()}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}
