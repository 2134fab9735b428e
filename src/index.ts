export { Kinsumer, kinsumer } from './kinsumer.js';
export { createTables, deleteTables, type TablesOptions } from './dynamodb/tables.js';
export {
  KinsumerError, ConfigError, StreamNotFoundError, TableNotFoundError, LeaseLostError, ShutdownTimeoutError,
} from './errors.js';
export { DEFAULTS, type KinsumerOptions, type ResolvedOptions, type StreamRef } from './options.js';
export type {
  InitialPosition, StartingPosition, KinsumerRecord, ShardLease, CheckpointPosition, KinsumerEvent,
  KinsumerEventType, Logger, StatReceiver,
} from './types.js';
