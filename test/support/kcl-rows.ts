// Writes a KCL lease table exactly as the AWS KCL writes it (design §8.2, notes/kcl-facts.md): the
// table as the KCL creates it, leases created with PutItem + Expected{leaseKey Exists=false}, and
// every later change an UpdateItem with the legacy Expected / AttributeUpdates parameters, with
// the attributes and types each KCL version writes, down to its quirks (1.0-1.3 wrote no
// sub-sequence number; the create path writes pendingCheckpointState as N, the update path as B;
// parentShardId is a string set; 3.5 marks created leases with entityType and keeps other kinds
// of items in the same table).
import {
  CreateTableCommand, DescribeTableCommand, PutItemCommand, UpdateItemCommand, UpdateTableCommand,
  type AttributeValue, type AttributeValueUpdate, type DynamoDBClient, type ExpectedAttributeValue,
} from '@aws-sdk/client-dynamodb';

/** The KCL versions whose lease formats differ. */
export type KclVersion = '1.3' | '1.x' | '2.x' | '3.x' | '3.5';

type Item = Record<string, AttributeValue>;

/** A checkpoint as the KCL's checkpointer writes it: a sentinel, or a sequence number and its sub-sequence number. */
export type KclWrittenCheckpoint = 'TRIM_HORIZON' | 'LATEST' | 'AT_TIMESTAMP' | 'SHARD_END' | { readonly sequenceNumber: string; readonly subSequenceNumber: number };

/** Creates the lease table as the KCL does (hash key leaseKey, on demand); 3.x adds its owner index afterwards with UpdateTable. */
export async function createKclTable(dynamodb: DynamoDBClient, table: string, version: KclVersion): Promise<void> {
  await dynamodb.send(new CreateTableCommand({
    TableName: table,
    AttributeDefinitions: [{ AttributeName: 'leaseKey', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'leaseKey', KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
  }));
  await waitActive(dynamodb, table);
  if (version === '3.x' || version === '3.5') {
    const index = {
      IndexName: 'LeaseOwnerToLeaseKeyIndex',
      KeySchema: [{ AttributeName: 'leaseOwner', KeyType: 'HASH' as const }, { AttributeName: 'leaseKey', KeyType: 'RANGE' as const }],
      Projection: { ProjectionType: 'KEYS_ONLY' as const },
    };
    const addIndex = (create: typeof index & { ProvisionedThroughput?: { ReadCapacityUnits: number; WriteCapacityUnits: number } }) => dynamodb.send(new UpdateTableCommand({
      TableName: table,
      AttributeDefinitions: [{ AttributeName: 'leaseOwner', AttributeType: 'S' }, { AttributeName: 'leaseKey', AttributeType: 'S' }],
      GlobalSecondaryIndexUpdates: [{ Create: create }],
    }));
    try {
      await addIndex(index);
    } catch (error) {
      // dynalite wants a throughput on every index, also of an on-demand table; DynamoDB and DynamoDB Local do not.
      if (!/provisionedThroughput/i.test((error as Error).message)) throw error;
      await addIndex({ ...index, ProvisionedThroughput: { ReadCapacityUnits: 10, WriteCapacityUnits: 10 } });
    }
    await waitActive(dynamodb, table);
  }
}

/** Polls until the table and its indexes are ACTIVE (local servers take milliseconds). */
async function waitActive(dynamodb: DynamoDBClient, table: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: table }));
    if (Table?.TableStatus === 'ACTIVE' && (Table.GlobalSecondaryIndexes ?? []).every((i) => i.IndexStatus === 'ACTIVE')) return;
    if (Date.now() > deadline) throw new Error(`table ${table} is not ACTIVE after 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A lease as shard sync or a parent's SHARD_END creates it. */
export interface NewLease {
  readonly shardId: string;
  readonly checkpoint?: KclWrittenCheckpoint;
  readonly parentShardIds?: readonly string[];
  readonly hashRange?: { readonly startingHashKey: string; readonly endingHashKey: string };
  /** The create path's bug: writes the sub-sequence number as an N `pendingCheckpointState`. */
  readonly pendingCheckpointStateAsNumber?: boolean;
}

/** One KCL application writing its lease table: a version, and (2.3+) optionally a multi-stream identifier. */
export class KclLeaseWriter {
  readonly #counters = new Map<string, number>();
  readonly #owners = new Map<string, string>();

  /**
   * @param stream for a multi-stream application, `<account>:<stream>:<creationEpoch>`
   */
  constructor(
    private readonly dynamodb: DynamoDBClient,
    private readonly table: string,
    private readonly version: KclVersion,
    private readonly stream?: string,
  ) {}

  /** The lease key of a shard, as this application writes it. */
  key(shardId: string): string {
    return this.stream === undefined ? shardId : `${this.stream}:${shardId}`;
  }

  /** The leaseCounter this writer last wrote for the shard. */
  counter(shardId: string): number {
    return this.#counters.get(shardId) ?? 0;
  }

  /** `createLeaseIfNotExists`: PutItem expecting no leaseKey. */
  async create(lease: NewLease): Promise<void> {
    const item: Item = {
      leaseKey: { S: this.key(lease.shardId) },
      leaseCounter: { N: '0' },
      ownerSwitchesSinceCheckpoint: { N: '0' },
      ...checkpointAttributes(lease.checkpoint ?? 'TRIM_HORIZON', this.version),
    };
    if ((lease.parentShardIds ?? []).length > 0) item.parentShardId = { SS: [...(lease.parentShardIds ?? [])] };
    if (lease.hashRange !== undefined && this.version !== '1.3') {
      item.startingHashKey = { S: lease.hashRange.startingHashKey };
      item.endingHashKey = { S: lease.hashRange.endingHashKey };
    }
    if (lease.pendingCheckpointStateAsNumber === true) item.pendingCheckpointState = { N: '0' };
    if (this.version === '3.5') item.entityType = { S: 'LEASE' };
    Object.assign(item, this.#streamAttributes(lease.shardId));
    await this.dynamodb.send(new PutItemCommand({ TableName: this.table, Item: item, Expected: { leaseKey: { Exists: false } } }));
    this.#counters.set(lease.shardId, 0);
  }

  /** `takeLease`: a worker takes the lease (counter PUT c+1, owner, an owner switch, checkpointOwner deleted in 3.x). */
  async take(shardId: string, owner: string): Promise<void> {
    const previous = this.#owners.get(shardId);
    const updates: Record<string, AttributeValueUpdate> = {
      leaseOwner: { Action: 'PUT', Value: { S: owner } },
      ...(previous !== undefined && previous !== owner ? { ownerSwitchesSinceCheckpoint: { Action: 'ADD', Value: { N: '1' } } } : {}),
      ...(this.version.startsWith('3') ? { checkpointOwner: { Action: 'DELETE' } } : {}),
    };
    await this.#update(shardId, updates);
    this.#owners.set(shardId, owner);
  }

  /** `renewLease`: counter PUT c+1 (and throughputKBps in 3.x), expecting the counter as last seen. */
  async renew(shardId: string): Promise<void> {
    await this.#update(shardId, this.version.startsWith('3') ? { throughputKBps: { Action: 'PUT', Value: { N: '12.5' } } } : {});
  }

  /**
   * `updateLease` from the checkpointer: the checkpoint, ownerSwitchesSinceCheckpoint 0, and the
   * pending fields PUT (with `prepare`) or DELETE; pendingCheckpointState as bytes (2.3+).
   */
  async checkpoint(shardId: string, checkpoint: KclWrittenCheckpoint, prepare?: { readonly pending: KclWrittenCheckpoint; readonly state?: Uint8Array }): Promise<void> {
    const updates: Record<string, AttributeValueUpdate> = {
      ownerSwitchesSinceCheckpoint: { Action: 'PUT', Value: { N: '0' } },
      ...Object.fromEntries(Object.entries(checkpointAttributes(checkpoint, this.version)).map(([name, value]) => [name, { Action: 'PUT', Value: value }])),
    };
    if (this.version !== '1.3') {
      if (prepare === undefined) {
        updates.pendingCheckpoint = { Action: 'DELETE' };
        updates.pendingCheckpointSubSequenceNumber = { Action: 'DELETE' };
      } else {
        const pending = checkpointAttributes(prepare.pending, this.version);
        updates.pendingCheckpoint = { Action: 'PUT', Value: pending.checkpoint };
        updates.pendingCheckpointSubSequenceNumber = { Action: 'PUT', Value: pending.checkpointSubSequenceNumber ?? { N: '0' } };
      }
    }
    if (this.version === '2.x' || this.version.startsWith('3')) {
      updates.pendingCheckpointState = prepare?.state === undefined ? { Action: 'DELETE' } : { Action: 'PUT', Value: { B: prepare.state } };
    }
    for (const [name, value] of Object.entries(this.#streamAttributes(shardId))) updates[name] = { Action: 'PUT', Value: value };
    // KCL 1.x never moves a checkpoint off SHARD_END.
    const expected: Record<string, ExpectedAttributeValue> = this.version === '1.x' || this.version === '1.3'
      ? (checkpoint === 'SHARD_END' ? {} : { checkpoint: { ComparisonOperator: 'NE', AttributeValueList: [{ S: 'SHARD_END' }] } })
      : {};
    await this.#update(shardId, updates, expected);
  }

  /** `updateLeaseWithMetaInfo(CHILD_SHARDS)`: childShardIds PUT, expecting the lease to exist; the counter does not move. */
  async childShards(shardId: string, children: readonly string[]): Promise<void> {
    await this.dynamodb.send(new UpdateItemCommand({
      TableName: this.table,
      Key: { leaseKey: { S: this.key(shardId) } },
      Expected: { leaseKey: { Value: { S: this.key(shardId) }, Exists: true } },
      AttributeUpdates: { childShardIds: { Action: 'PUT', Value: { SS: [...children] } } },
    }));
  }

  /**
   * A shard read to its end, as `ShutdownTask` does it: the child leases created (TRIM_HORIZON, the
   * parents as a string set), `childShardIds` written, and only then the checkpoint SHARD_END.
   */
  async shardEnd(shardId: string, children: readonly { readonly shardId: string; readonly parentShardIds: readonly string[] }[]): Promise<void> {
    for (const child of children) {
      try {
        await this.create({ shardId: child.shardId, checkpoint: 'TRIM_HORIZON', parentShardIds: child.parentShardIds });
      } catch (error) {
        // The other parent of a merge created it already.
        if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
      }
    }
    // KCL 1.0-1.3 knew no childShardIds.
    if (this.version !== '1.3') await this.childShards(shardId, children.map((c) => c.shardId));
    await this.checkpoint(shardId, 'SHARD_END');
  }

  async #update(shardId: string, updates: Record<string, AttributeValueUpdate>, expected: Record<string, ExpectedAttributeValue> = {}): Promise<void> {
    const counter = this.counter(shardId);
    await this.dynamodb.send(new UpdateItemCommand({
      TableName: this.table,
      Key: { leaseKey: { S: this.key(shardId) } },
      Expected: { leaseCounter: { Value: { N: String(counter) } }, ...expected },
      AttributeUpdates: { leaseCounter: { Action: 'PUT', Value: { N: String(counter + 1) } }, ...updates },
    }));
    this.#counters.set(shardId, counter + 1);
  }

  #streamAttributes(shardId: string): Item {
    return this.stream === undefined ? {} : { streamName: { S: this.stream }, shardId: { S: shardId } };
  }
}

function checkpointAttributes(checkpoint: KclWrittenCheckpoint, version: KclVersion): { checkpoint: AttributeValue; checkpointSubSequenceNumber?: AttributeValue } {
  const [text, sub] = typeof checkpoint === 'string' ? [checkpoint, 0] : [checkpoint.sequenceNumber, checkpoint.subSequenceNumber];
  // KCL 1.0-1.3 knew no sub-sequence numbers (the KPL came with 1.4).
  return version === '1.3' ? { checkpoint: { S: text } } : { checkpoint: { S: text }, checkpointSubSequenceNumber: { N: String(sub) } };
}

/**
 * The items a KCL 3.5 application keeps in its lease table beside the leases (single-table mode):
 * the leader lock, the migration states, a worker's metrics and (streamInfoMode on) the stream.
 */
export async function writeKcl35OtherItems(dynamodb: DynamoDBClient, table: string, streamKey: string): Promise<void> {
  const items: Item[] = [
    { leaseKey: { S: 'Leader' }, entityType: { S: 'LEADER' }, ownerName: { S: 'worker-1' }, leaseDuration: { S: '20000' }, recordVersionNumber: { S: 'b5a1c1e2-7f8e-4c1a-9c8d-1a2b3c4d5e6f' } },
    { leaseKey: { S: 'Migration3.0' }, entityType: { S: 'CLIENT_VERSION_MIGRATION' }, cv: { S: 'CLIENT_VERSION_3X' }, mb: { S: 'worker-1' }, mts: { N: '1733300000000' } },
    { leaseKey: { S: 'TableMigration3.5' }, entityType: { S: 'TABLE_MIGRATION' }, mb: { S: 'worker-1' }, mts: { N: '1733300000000' } },
    { leaseKey: { S: 'worker-1' }, entityType: { S: 'WORKER_METRIC_STATS' }, wid: { S: 'worker-1' }, lut: { N: '1733300000' }, opr: { M: { C: { L: [{ N: '12' }] } } } },
    // A STREAM item of a single-stream application is keyed by the stream's name.
    { leaseKey: { S: streamKey }, entityType: { S: 'STREAM' }, streamArn: { S: `arn:aws:kinesis:us-east-1:000000000000:stream/${streamKey}` } },
  ];
  for (const item of items) await dynamodb.send(new PutItemCommand({ TableName: table, Item: item }));
}
