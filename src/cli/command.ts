import type { ParseArgsConfig } from 'node:util';

/** Where a command writes and what it reads from its environment. Injected so tests run commands in-process. */
export interface CliIo {
  /** `columns` and `isTTY` as a terminal's stream has them: help wraps to the width, `status --watch` redraws in place. */
  readonly stdout: CliOutput;
  readonly stderr: CliOutput;
  readonly env: NodeJS.ProcessEnv;
  /** Aborted on SIGINT/SIGTERM (long-running commands such as `tail` stop on it). */
  readonly signal: AbortSignal;
}

/** Where the CLI writes: `process.stdout`, or a fake in tests. */
export interface CliOutput {
  write(text: string): unknown;
  /** The terminal's width; absent when the output is not a terminal. */
  readonly columns?: number | undefined;
  readonly isTTY?: boolean | undefined;
}

/** Exit codes of the CLI. */
export const EXIT = {
  ok: 0,
  /** The command ran and failed (AWS error, missing table, ...). */
  failure: 1,
  /** Bad command line. */
  usage: 2,
  /** The command refused to act (e.g. `reset` while leases are held, without --force). */
  refused: 3,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** What an exit code means, for one command's `--help`. */
export type ExitCodeHelp = Readonly<Partial<Record<ExitCode, string>>>;

/** The options several commands share; each command names the ones it uses. */
export type CommonOption = 'stream' | 'app' | 'region' | 'endpoint' | 'kinesis-endpoint' | 'dynamodb-endpoint' | 'profile';

/** Parsed option values: strings and booleans as node:util parseArgs gives them. */
export type OptionValues = Record<string, string | boolean | undefined>;

/** One `kinsumer <name>` command. */
export interface Command {
  readonly name: string;
  readonly summary: string;
  /** Lines printed under "Usage:" by --help. */
  readonly usage: string;
  /** Options of this command (the common ones are added by the runner). */
  readonly options: NonNullable<ParseArgsConfig['options']>;
  /** Help lines for each option of this command, by name. */
  readonly optionHelp: Readonly<Record<string, string>>;
  /** The common options this command uses (`--help` always comes too). Default: every one. */
  readonly commonOptions?: readonly CommonOption[];
  /** What each exit code means for this command, shown by `--help`. Default: 0 done, 1 failed, 2 bad command line. */
  readonly exitCodes?: ExitCodeHelp;
  /** Option names the command cannot run without; `a|b`: one of the two. */
  readonly required: readonly string[];
  run(values: OptionValues, io: CliIo): Promise<ExitCode>;
}

/** A bad command line: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
