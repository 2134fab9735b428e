/**
 * The consumer group: {@link Kinsumer} and {@link kinsumer}, the tables, the options and the errors.
 *
 * @module kinsumer
 */
export { Kinsumer, kinsumer } from './kinsumer.js';
export { createTables, deleteTables, type TablesOptions } from './dynamodb/tables.js';
export {
  KinsumerError, ConfigError, StreamNotFoundError, TableNotFoundError, LeaseLostError, ShutdownTimeoutError, LeaseHeldError,
} from './errors.js';
export { EndpointError, type AwsService } from './endpoint-errors.js';
export { CorruptCheckpointError } from './dynamodb/lease-store.js';
export { ShardReadError } from './shard-reader.js';
export { RecordDecodeError, type RecordFormat } from './record-data.js';
export { DEFAULTS, type KinsumerOptions, type KinsumerSettings, type ResolvedOptions, type StreamRef } from './options.js';
export type {
  InitialPosition, StartingPosition, KinsumerRecord, ShardLease, CheckpointPosition, KinsumerEvent,
  KinsumerEventType, Logger, StatReceiver,
} from './types.js';
