import { type ParseArgsConfig, parseArgs } from 'node:util';
import { didYouMean } from '../errors/did-you-mean.js';
import { EndpointError } from '../errors/endpoint-error.js';
import { ConfigError, KinsumerError } from '../errors/kinsumer-errors.js';
import { packageVersion } from '../telemetry/package-version.js';
import { EXIT, UsageError, type CliIo, type Command, type CommonOption, type ExitCode, type ExitCodeHelp, type OptionValues } from './command.js';
import { deregisterConsumerCommand } from './commands/consumer.js';
import { drainCommand } from './commands/drain.js';
import { exportKclCommand, importKclCommand } from './commands/kcl.js';
import { resetCommand } from './commands/reset.js';
import { statusCommand } from './commands/status.js';
import { createTablesCommand, deleteTablesCommand } from './commands/tables.js';
import { tailCommand } from './commands/tail.js';
import { COMMON_HELP, COMMON_OPTIONS, renderOptions } from './common-options.js';
import { outputWidth, proseWords, twoColumns, usageWords, wrapText, wrapWords } from './wrap.js';

/** Every command, in the order `kinsumer --help` lists them. */
export const COMMANDS: readonly Command[] = [
  createTablesCommand, deleteTablesCommand, statusCommand, tailCommand, resetCommand, importKclCommand, exportKclCommand, deregisterConsumerCommand,
  drainCommand,
];

function mainHelp(commands: readonly Command[], width: number): string {
  return [
    'Usage: kinsumer <command> [options]',
    '',
    ...wrapText('Share one Kinesis stream among many processes: tables, status and checkpoints from the command line.', width),
    '',
    'Commands:',
    ...twoColumns(commands.map((c) => [`  ${c.name}`, c.summary]), width),
    '',
    'Options:',
    ...twoColumns([['  --help, -h', 'this text'], ['  --version, -V', 'print the version']], width),
    '',
    ...wrapText('Run `kinsumer <command> --help` for the options and exit codes of a command.', width),
    ...wrapText('Exit codes: 0 done, 1 failed, 2 bad command line, 3 refused.', width),
    '',
  ].join('\n');
}

const ALL_COMMON: readonly CommonOption[] = ['stream', 'app', 'region', 'endpoint', 'kinesis-endpoint', 'dynamodb-endpoint', 'profile'];

/** Exit codes of a command that does not say more. */
const DEFAULT_EXIT_CODES: ExitCodeHelp = {
  [EXIT.ok]: 'done',
  [EXIT.failure]: 'failed: an AWS error, or the stream or a table is missing',
  [EXIT.usage]: 'bad command line',
};

/** The help lines of the common options a command uses, `--help` last. */
function commonHelp(command: Command): Record<string, string> {
  const used = [...(command.commonOptions ?? ALL_COMMON), 'help'];
  return Object.fromEntries(Object.entries(COMMON_HELP).filter(([name]) => used.includes(name)));
}

/** Every option a command accepts: its own and the common ones it uses. */
export function commandOptions(command: Command): NonNullable<ParseArgsConfig['options']> {
  const used = Object.keys(commonHelp(command));
  return { ...command.options, ...Object.fromEntries(Object.entries(COMMON_OPTIONS).filter(([name]) => used.includes(name))) };
}

/** The usage line wrapped under the command's name: `Usage: kinsumer reset --stream ...` then the options beneath it. */
function usageLines(usage: string, width: number): string[] {
  const [program = '', name = '', ...rest] = usageWords(usage);
  const first = `Usage: ${program} ${name} `;
  // Under the first option when that leaves room, else under the command's name.
  const indent = first.length <= width - 40 ? first.length : 'Usage: kinsumer '.length;
  return wrapWords(rest, width, first, ' '.repeat(indent));
}

function commandHelp(command: Command, width: number): string {
  return [
    ...usageLines(command.usage, width),
    '',
    ...wrapText(command.summary, width),
    '',
    'Options:',
    renderOptions({ ...command.optionHelp, ...commonHelp(command) }, commandOptions(command), width),
    '',
    'Exit codes:',
    ...Object.entries(command.exitCodes ?? DEFAULT_EXIT_CODES).flatMap(([code, meaning]) => wrapWords(proseWords(meaning), width, `  ${code}  `, '     ')),
    '',
  ].join('\n');
}

/** Runs the CLI with `argv` (without node and the script) and returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIo, commands: readonly Command[] = COMMANDS): Promise<ExitCode> {
  const [name, ...rest] = argv;
  // Help wraps at the terminal's width (80 in a pipe): a line wider than the terminal breaks mid-word.
  const width = outputWidth(io.stdout);
  const errorWidth = outputWidth(io.stderr);
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(mainHelp(commands, width));
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === '--version' || name === '-V') {
    io.stdout.write(`${packageVersion()}\n`);
    return EXIT.ok;
  }
  const command = commands.find((c) => c.name === name);
  if (command === undefined) {
    io.stderr.write(`kinsumer: unknown command '${name}'${didYouMean(name, commands.map((c) => c.name))}\n\n${mainHelp(commands, errorWidth)}`);
    return EXIT.usage;
  }
  let values: OptionValues;
  try {
    ({ values } = parseArgs({ args: [...rest], options: commandOptions(command), strict: true, allowPositionals: false }) as { values: OptionValues });
    if (values.help === true) {
      io.stdout.write(commandHelp(command, width));
      return EXIT.ok;
    }
    // `a|b`: one of them.
    const missing = command.required.filter((option) => option.split('|').every((one) => values[one] === undefined));
    if (missing.length > 0) throw new UsageError(`missing ${missing.map(missingText).join(', ')}`);
  } catch (error) {
    io.stderr.write(`kinsumer ${command.name}: ${parseProblem(error, command)}\n\n${commandHelp(command, errorWidth)}`);
    return EXIT.usage;
  }
  try {
    return await command.run(values, io);
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError) {
      io.stderr.write(`kinsumer ${command.name}: ${error.message}\n`);
      return EXIT.usage;
    }
    io.stderr.write(`kinsumer ${command.name}: ${describeError(error)}\n`);
    return EXIT.failure;
  }
}

/** `--to`, or for one of several `--to (or --clear)`. */
function missingText(required: string): string {
  const [first, ...others] = required.split('|');
  return others.length === 0 ? `--${first}` : `--${first} (or ${others.map((o) => `--${o}`).join(', ')})`;
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // An EndpointError says all there is to say; its cause is the SDK's less helpful version.
  if (error instanceof EndpointError) return error.message;
  if (!(error instanceof KinsumerError) || !(error.cause instanceof Error)) return error.message;
  const cause = error.cause instanceof EndpointError ? error.cause.message : `${error.cause.name}: ${error.cause.message}`;
  // A KinsumerError carries an EndpointError among its causes on top of its message already.
  return error.message.includes(error.cause.message) ? error.message : `${error.message} (${cause})`;
}

/** What is wrong with the command line: parseArgs's own words, but an unknown option with the nearest known one. */
function parseProblem(error: unknown, command: Command): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : String(error);
  const unknown = code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /^Unknown option '(--?[^']+)'/.exec(text)?.[1] : undefined;
  if (unknown === undefined) return text;
  const known = Object.keys(commandOptions(command)).map((name) => `--${name}`);
  return `unknown option '${unknown}'${didYouMean(unknown, known)}`;
}
