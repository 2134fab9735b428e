// The group's three tables are named after the application, as the Go kinsumer names them.
import { ConfigError } from '../errors/kinsumer-errors.js';

// DynamoDB table names: 3..255 of [A-Za-z0-9_.-]; the longest suffix is "_checkpoints" (12).
const APPLICATION_NAME = /^[A-Za-z0-9_.-]{1,243}$/;
const APPLICATION_NAME_RULE = 'must be 1-243 characters of A-Z a-z 0-9 _ . - (it prefixes the DynamoDB table names)';

/** Checks an application name (it prefixes the table names); throws {@link ConfigError}. */
export function checkApplicationName(value: unknown): string {
  if (value === undefined) throw new ConfigError('applicationName', 'is required');
  if (typeof value !== 'string' || !APPLICATION_NAME.test(value)) throw new ConfigError('applicationName', APPLICATION_NAME_RULE);
  return value;
}

/** Table names of an application, as the Go kinsumer names them. */
export function tableNames(applicationName: string): { clients: string; checkpoints: string; metadata: string } {
  return {
    clients: `${applicationName}_clients`,
    checkpoints: `${applicationName}_checkpoints`,
    metadata: `${applicationName}_metadata`,
  };
}
