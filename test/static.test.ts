import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';

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
});
