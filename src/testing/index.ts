export {
  startLocalAws, localKinesisClient, localDynamoDbClient,
  type LocalAws, type LocalAwsConfig, type LocalAwsOptions, type LocalKinesisKind, type LocalDynamoDbKind,
} from './local-aws.js';
export {
  createStream, deleteStream, waitForStreamStatus, listShards, openShardIds, putRecords, splitShard,
  mergeShards, adjacentOpenShards, type RecordToPut, type PutResult, type WaitOptions,
} from './streams.js';
export {
  startKinesalite, startDynalite, startKinesisLocal, startDynamoDbLocal, javaAvailable, freePort,
  type RunningServer, type KinesaliteOptions, type DynaliteOptions, type KinesisLocalOptions, type DynamoDbLocalOptions,
} from './servers.js';
export { MemoryStream, awsError, type MemoryStreamOptions, type MemoryRecordInput, type MemoryPutResult, type StreamOperation, type StreamCall } from './memory-stream.js';
export { MemoryLeaseStore, MemoryCheckpointTable, type MemoryLeaseStoreOptions, type MemoryLeaseOperation } from './memory-lease-store.js';
export {
  MemoryMembershipStore, MemoryMetadataStore, MemoryCoordinationTables, type MemoryCoordinationOptions, type MemoryCoordinationOperation,
} from './memory-coordination.js';
