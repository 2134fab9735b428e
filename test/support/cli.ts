import { runCli } from '../../src/cli/run.js';

/** Runs the CLI in-process and captures what it prints. */
export async function cli(args: readonly string[], signal: AbortSignal = new AbortController().signal): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (text: string) => { stdout += text; } },
    stderr: { write: (text: string) => { stderr += text; } },
    env: process.env,
    signal,
  });
  return { code, stdout, stderr };
}
