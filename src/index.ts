export { Kinsumer, kinsumer } from './kinsumer.js';
export { createTables, deleteTables, type TablesOptions } from './dynamodb/tables.js';
export {
  KinsumerError, ConfigError, StreamNotFoundError, TableNotFoundError, LeaseLostError, ShutdownTimeoutError, LeaseHeldError,
} from './errors.js';
export { CorruptCheckpointError } from './dynamodb/lease-store.js';
export { ShardReadError } from './shard-reader.js';
export { DEFAULTS, type KinsumerOptions, type ResolvedOptions, type StreamRef } from './options.js';
export type {
  InitialPosition, StartingPosition, KinsumerRecord, ShardLease, CheckpointPosition, KinsumerEvent,
  KinsumerEventType, Logger, StatReceiver,
} from './types.js';
export { processRecords } from './operators/process-records.js';
export { processBatches } from './operators/process-batches.js';
export { RecordTooOldError } from './operators/record-retry.js';
export type {
  RecordOrdering, RetryOptions, ProcessContext, FailedRecord, HandlerResult, RecordHandler, FailureHandler, ProcessedRecord,
  ProcessRecordsOptions, BatchResult, BatchHandler, ProcessedBatch, ProcessBatchesOptions,
} from './operators/process-types.js';
