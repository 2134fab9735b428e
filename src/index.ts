/**
 * The consumer group: {@link Kinsumer} and {@link kinsumer}, the tables, the options and the errors.
 *
 * @module kinsumer
 */
export { Kinsumer, kinsumer } from './kinsumer.js';
export { createTables, deleteTables, type TablesOptions } from './dynamodb/tables.js';
export {
  resetCheckpoints, type ResetCheckpointsOptions, type ResetCheckpointsResult, type ShardReset,
} from './reset/reset-checkpoints.js';
export { importKclCheckpoints, type ImportKclOptions } from './kcl/import-kcl.js';
export { exportKclCheckpoints, type ExportKclOptions } from './kcl/export-kcl.js';
export { DEFAULT_KCL_WATCH_MS, type KclMoveOptions } from './kcl/kcl-options.js';
export type { KclPlan, KclPlanLine, KclPlanCheckpoint, KclPlanStart } from './kcl/plan.js';
export {
  KinsumerError, ConfigError, StreamNotFoundError, TableNotFoundError, LeaseLostError, ShutdownTimeoutError, LeaseHeldError,
  RequestTimeoutError, StartTimeoutError,
  CorruptCheckpointError, StreamGoneError,
  ClientReplacedError,
  DataLostError,
} from './errors/kinsumer-errors.js';
export type { DataLostEvent, OnDataLoss } from './reading/data-loss.js';
export { EndpointError, type AwsService } from './errors/endpoint-error.js';
export { WritesTooLargeError, WriteConditionError, WriteRejectedError, type WritesLimit } from './errors/write-errors.js';
export { HandlerResultError, type HandlerOperator } from './errors/handler-result-error.js';
export type { ErrorJson } from './errors/error-json.js';
export { ShardReadError } from './reading/read-errors.js';
export { RecordDecodeError, type RecordFormat } from './reading/payload-decoding.js';
export type { MeterProviderLike, TracerProviderLike } from './telemetry/providers.js';
export type { Clock } from './ports/clock.js';
export {
  DEFAULTS, type KinsumerOptions, type KinsumerSettings, type ResolvedOptions, type StreamRef, type StreamsRef, type StreamList,
} from './options.js';
export type {
  InitialPosition, StartingPosition, KinsumerRecord, AckOptions, ShardLease, CheckpointPosition, KinsumerEvent,
  KinsumerEventType, Logger, StatReceiver, KinsumerStatus, KinsumerState, ShardStatus, ConnectionCounts, ConnectionsStatus, StreamStatus,
} from './types.js';
export { processRecords } from './operators/process-records.js';
export { processBatches } from './operators/process-batches.js';
export { RecordTooOldError } from './operators/record-retry.js';
export { TooManyDeliveriesError } from './operators/delivery-limit.js';
export type {
  RecordOrdering, RetryOptions, ProcessContext, FailedRecord, HandlerResult, RecordHandler, RecordResult, FailureHandler, FailureResult, ProcessedRecord,
  ProcessRecordsOptions, BatchResult, BatchHandler, ProcessedBatch, ProcessBatchesOptions, RetryPredicate,
} from './operators/process-types.js';
