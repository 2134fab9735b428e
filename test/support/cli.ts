import { runCli } from '../../src/cli/run.js';

/** What a CLI run printed, and its exit code. */
export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A CLI command running in-process: its output so far, a way to stop it (SIGINT), its end. */
export interface RunningCli {
  stdout(): string;
  stderr(): string;
  /** Aborts the command's signal, as SIGINT/SIGTERM does in the real bin. */
  interrupt(): void;
  readonly done: Promise<CliResult>;
}

/** Starts the CLI in-process with captured output; long-running commands (`tail`) are watched while they run. */
export function startCli(args: readonly string[]): RunningCli {
  let stdout = '';
  let stderr = '';
  const controller = new AbortController();
  const done = runCli(args, {
    stdout: { write: (text: string) => { stdout += text; } },
    stderr: { write: (text: string) => { stderr += text; } },
    env: process.env,
    signal: controller.signal,
  }).then((code) => ({ code, stdout, stderr }));
  return { stdout: () => stdout, stderr: () => stderr, interrupt: () => controller.abort(), done };
}

/**
 * Runs the CLI in-process and captures what it prints. `columns`: the output is a terminal that
 * wide (without it, the output is not a terminal, as in a pipe).
 */
export async function cli(args: readonly string[], signal: AbortSignal = new AbortController().signal, columns?: number): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const terminal = columns === undefined ? {} : { columns, isTTY: true };
  const code = await runCli(args, {
    stdout: { write: (text: string) => { stdout += text; }, ...terminal },
    stderr: { write: (text: string) => { stderr += text; }, ...terminal },
    env: process.env,
    signal,
  });
  return { code, stdout, stderr };
}

/** The endpoint options that point the CLI at the suite's local servers. */
export function endpointArgs(local: { readonly endpoints: { readonly kinesis: string; readonly dynamodb: string } }): string[] {
  return ['--kinesis-endpoint', local.endpoints.kinesis, '--dynamodb-endpoint', local.endpoints.dynamodb];
}

/** The exit codes a command's --help documents (its `Exit codes:` section, one `  N  meaning` line each). */
export function documentedCodes(help: string): number[] {
  const section = help.split('\nExit codes:\n')[1] ?? '';
  return [...section.matchAll(/^ {2}(\d) {2}\S/gm)].map((m) => Number(m[1]));
}
