import type { ParseArgsConfig } from 'node:util';

/** Options every command takes. */
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
  stream: 'Kinesis stream name',
  app: 'application name (tables <app>_clients, <app>_checkpoints, <app>_metadata)',
  region: 'AWS region (default: AWS_REGION / the profile\'s region)',
  endpoint: 'endpoint for both Kinesis and DynamoDB (local servers)',
  'kinesis-endpoint': 'Kinesis endpoint only',
  'dynamodb-endpoint': 'DynamoDB endpoint only',
  profile: 'credentials profile (the SDK\'s default chain otherwise); credentials are never printed',
  help: 'show this help',
};

/** Renders option help as aligned `--name  text` lines. */
export function renderOptions(help: Readonly<Record<string, string>>, options: NonNullable<ParseArgsConfig['options']>): string {
  const rows = Object.entries(help).map(([name, text]) => {
    const spec = options[name];
    const value = spec?.type === 'string' ? ` <${name === 'to' ? 'position' : 'value'}>` : '';
    const short = spec?.short === undefined ? '' : `, -${spec.short}`;
    return [`  --${name}${value}${short}`, text] as const;
  });
  const width = Math.max(...rows.map(([left]) => left.length)) + 2;
  return rows.map(([left, text]) => `${left.padEnd(width)}${text}`).join('\n');
}
