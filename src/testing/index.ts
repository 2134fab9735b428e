/**
 * The testing kit: local Kinesis and DynamoDB servers in-process, stream helpers, and in-memory
 * backends that run a whole consumer group on virtual time.
 *
 * @module kinsumer/testing
 */
export {
  startLocalAws, localKinesisClient, localDynamoDbClient,
  type LocalAws, type LocalAwsConfig, type LocalAwsOptions, type LocalKinesisKind, type LocalDynamoDbKind,
} from './local-aws.js';
export {
  createStream, deleteStream, waitForStreamStatus, listShards, openShardIds, putRecords, splitShard,
  mergeShards, adjacentOpenShards, type RecordToPut, type PutResult, type WaitOptions,
} from './streams.js';
// freePort, javaAvailable (servers.ts) and awsError (memory-stream.ts) are the suite's own helpers:
// not part of the kit, the tests import them from their files.
export {
  startKinesalite, startDynalite, startKinesisLocal, startDynamoDbLocal,
  type RunningServer, type KinesaliteOptions, type DynaliteOptions, type KinesisLocalOptions, type DynamoDbLocalOptions,
} from './servers.js';
export { MemoryStream, type MemoryStreamOptions, type MemoryRecordInput, type MemoryPutResult, type StreamOperation, type StreamCall } from './memory-stream.js';
export type { StreamLimits } from '../ports/stream.js';
export { MemoryFanOut, type MemoryFanOutOptions } from './memory-fan-out.js';
export { MemoryStreams, type MemoryStreamsOptions, type MemoryStreamSetOptions } from './memory-streams.js';
export { MemoryLeaseStore, MemoryCheckpointTable, type MemoryLeaseStoreOptions, type MemoryLeaseOperation } from './memory-lease-store.js';
export { MemoryItemTables, CLIENT_TOKEN_WINDOW_MS, type CancellationCode, type ExtraAction, type ExtraCheck } from './memory-items.js';
export { UnsupportedExpressionError } from './memory-expressions.js';
export {
  MemoryMembershipStore, MemoryMetadataStore, MemoryCoordinationTables, type MemoryCoordinationOptions, type MemoryCoordinationOperation,
} from './memory-coordination.js';
export type { MemoryClientRow, MemoryLeaderItem } from './memory-coordination.js';
// The seams the in-memory backends implement: a KinsumerBackend (Kinsumer's second argument)
// returns these ports, so a consumer group can run without AWS, on virtual time.
export type { KinsumerBackend, KinsumerPorts } from '../ports/backend.js';
export type { StreamPort, IssuedIterator, IteratorStart, RawRecord, RecordsPage, ShardInfo, FanOutPort, StreamConsumerInfo, ShardEvent, ShardEventPull } from '../ports/stream.js';
export type { LeaseStore, CheckpointRow, StoredCheckpoint, HeldLease, CheckpointWrite, AckedRange, DeliveredThrough, WritesTransaction } from '../ports/lease-store.js';
export type {
  MembershipStore, MetadataStore, LiveClient, Leader, ShardCache, CachedShard, Registration, Heartbeat, MemberView, MemberLife, MemberSelf,
} from '../ports/coordination.js';
export type { Position } from '../ports/position.js';
