import type { ParseArgsConfig } from 'node:util';
import { checkApplicationName } from '../dynamodb/table-names.js';
import { ConfigError } from '../errors/kinsumer-errors.js';
import { type StreamRef } from '../options.js';
import { checkStreamList } from '../ports/stream-key.js';
import { type OptionValues, UsageError } from './command.js';
import { twoColumns } from './wrap.js';

/** Options several commands take (each command names the ones it uses), and `--help`. */
export const COMMON_OPTIONS: NonNullable<ParseArgsConfig['options']> = {
  stream: { type: 'string' },
  app: { type: 'string' },
  region: { type: 'string' },
  endpoint: { type: 'string' },
  'kinesis-endpoint': { type: 'string' },
  'dynamodb-endpoint': { type: 'string' },
  profile: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

export const COMMON_HELP: Readonly<Record<string, string>> = {
  stream: 'the Kinesis stream, by name or ARN',
  app: 'application name (tables <app>_clients, <app>_checkpoints, <app>_metadata)',
  region: 'AWS region (default: AWS_REGION / the profile\'s region)',
  endpoint: 'endpoint of every AWS service the command calls (a local server)',
  'kinesis-endpoint': 'Kinesis endpoint only',
  'dynamodb-endpoint': 'DynamoDB endpoint only',
  profile: 'credentials profile (the SDK\'s default chain otherwise); credentials are never printed',
  help: 'show this help',
};

/** What `--help` shows as an option's value, where `<value>` would say too little. */
const PLACEHOLDERS: Readonly<Record<string, string>> = {
  to: 'position', from: 'position', 'consumer-name': 'name', shard: 'id,...', limit: 'N', 'lease-ttl-ms': 'ms', 'refresh-ms': 'ms', interval: 'seconds',
  'lease-table': 'table', 'watch-ms': 'ms', timestamp: 'ISO time', 'initial-position': 'position',
  stream: 'name|arn', streams: 'name|arn,...', app: 'name', region: 'region', endpoint: 'url', 'kinesis-endpoint': 'url', 'dynamodb-endpoint': 'url', profile: 'name',
};

/** Renders option help as `--name  text` lines, the texts aligned and wrapped to `width` under a hanging indent. */
export function renderOptions(help: Readonly<Record<string, string>>, options: NonNullable<ParseArgsConfig['options']>, width: number): string {
  const rows = Object.entries(help).map(([name, text]) => {
    const spec = options[name];
    const value = spec?.type === 'string' ? ` <${PLACEHOLDERS[name] ?? 'value'}>` : '';
    const short = spec?.short === undefined ? '' : `, -${spec.short}`;
    return [`  --${name}${value}${short}`, text] as const;
  });
  return twoColumns(rows, width).join('\n');
}

/** A string option's value; `undefined` when not given. */
export function textOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** `--app`, checked as the library checks `applicationName` (a bad one is a usage error). */
export function applicationOption(values: OptionValues): string {
  return checkApplicationName(textOption(values, 'app'));
}

/** `--stream`: a name, or an ARN (`arn:...`). */
export function streamOption(values: OptionValues): StreamRef {
  const value = textOption(values, 'stream');
  if (value === undefined || value === '') throw new UsageError('missing --stream');
  return value.startsWith('arn:') ? { streamArn: value } : { streamName: value };
}

/** The group's stream option: `--stream` (a one-stream group) or `--streams` (a group that reads streams). */
export type GroupStreams =
  | { readonly stream: StreamRef; readonly streams?: undefined }
  | { readonly streams: readonly string[]; readonly stream?: undefined };

/** `--streams`, as commands that read a group over many streams take it. */
export const STREAMS_OPTION = { streams: { type: 'string' } } as const;

/** Help of `--streams`, beside `--stream`'s. */
export const STREAMS_HELP = 'a group that reads several streams (its streams option): the streams, by name or ARN, comma-separated; instead of --stream';

/**
 * `--stream` or `--streams` (exactly one): which streams the group reads, as its options say. A
 * one-stream group's rows are plain shard ids, a `streams` group's are keys: the two never mix.
 */
export function groupStreamsOption(values: OptionValues): GroupStreams {
  const text = textOption(values, 'streams');
  if (text === undefined) {
    if (textOption(values, 'stream') === undefined) throw new UsageError('missing --stream (or --streams, for a group that reads several streams)');
    return { stream: streamOption(values) };
  }
  if (textOption(values, 'stream') !== undefined) throw new UsageError('give --stream (a one-stream group) or --streams (a group that reads streams), not both');
  try {
    return { streams: checkStreamList(text.split(',').map((item) => item.trim()).filter((item) => item !== ''), '--streams') };
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(`--streams ${error.rule}`);
    throw error;
  }
}

/** A whole-number option of at least `min`; `fallback` when not given. */
export function integerOption(values: OptionValues, name: string, fallback: number, min = 1): number {
  const text = textOption(values, name);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min) throw new UsageError(`--${name} must be a whole number >= ${min}, not '${text}'`);
  return value;
}

/** A comma-separated list option (`--shard a,b`); `undefined` when not given. */
export function listOption(values: OptionValues, name: string): string[] | undefined {
  const text = textOption(values, name);
  if (text === undefined) return undefined;
  const items = text.split(',').map((item) => item.trim()).filter((item) => item !== '');
  if (items.length === 0) throw new UsageError(`--${name} needs at least one value`);
  return [...new Set(items)];
}

/**
 * An ISO 8601 timestamp with a date and a time (`2026-01-31T12:00:00Z`, offsets allowed). A day
 * the month does not have is refused: Date.parse would quietly roll 02-30 over into March.
 */
export function parseTimestamp(text: string, name: string): Date | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}/.exec(text);
  const ms = Date.parse(text);
  if (match === null || Number.isNaN(ms)) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) throw new UsageError(`--${name} ${text}: no such day`);
  return new Date(ms);
}
