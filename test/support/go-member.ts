// A Go-kinsumer-like member for mixed-fleet tests, written from the behaviour description
// (../shared/docs/kinsumer-go-behavior.md §3, §5–§14, §16), never from the Go source (Amazon
// Software License). It talks to the tables and the stream the way the Go kinsumer does: full
// PutItem heartbeats without this library's attributes, the round-robin assignment (shard list
// position modulo the sorted live clients), stop-the-world rebalances, capture by GetItem + a full
// PutItem conditioned on "unowned or LastUpdate older than the TTL on my clock", commits as full
// PutItems conditioned on the owner only, releases that remove the owner, a leader that keeps
// `ShardIDs` in the metadata table. Its user takes every record as soon as it is read (the checkpoint
// moves when a record is handed out). Its own assignment code is deliberately separate from the
// library's, so a test compares two implementations of §6.
//
// Left out (irrelevant on the local servers): the DescribeStream readiness check, GetRecords retry
// sleeps (any read error is a fatal shard error, as after the third retry), reaping of 48-hour-old
// client rows, the bounded record queue (the user keeps up).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type AttributeValue, type DynamoDBClient, DeleteItemCommand, GetItemCommand, PutItemCommand, ScanCommand, UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { GetRecordsCommand, GetShardIteratorCommand, type KinesisClient, ListShardsCommand } from '@aws-sdk/client-kinesis';

type Item = Record<string, AttributeValue>;

/** The Go kinsumer's intervals (its TTLs are five times the first two). */
export interface GoTimings {
  /** `shardCheckFrequency`: heartbeat, membership, rebalance check. Client and lease TTL: 5 ×. */
  readonly shardCheckFrequencyMs: number;
  /** `leaderActionFrequency`: leader lock renewal and shard-list refresh. Lock TTL: 5 ×. */
  readonly leaderActionFrequencyMs: number;
  /** `throttleDelay`: GetRecords spacing and capture poll. */
  readonly throttleDelayMs: number;
  /** `commitFrequency`: checkpoint commit (only when the position moved). */
  readonly commitFrequencyMs: number;
}

/** A record handed to the Go member's user. */
export interface GoDelivery {
  readonly clientId: string;
  readonly shardId: string;
  readonly sequenceNumber: string;
  readonly data: string;
}

/** Options of {@link GoMember}. */
export interface GoMemberOptions {
  readonly dynamodb: DynamoDBClient;
  readonly kinesis: KinesisClient;
  readonly applicationName: string;
  readonly streamName: string;
  readonly timings: GoTimings;
  /** The client id; the Go kinsumer uses a random UUID (the default). */
  readonly id?: string;
  readonly name?: string;
  /** The user: receives each record, in order per shard, when the member hands it out. */
  readonly deliver: (delivery: GoDelivery) => void;
}

const decoder = new TextDecoder();

/** Go's `sort.Strings`: byte order of the UTF-8 encodings. */
export function goStringOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** §6: position p goes to the client at index p mod n of the sorted live clients. */
export function goRoundRobin(sortedClients: readonly string[], shardList: readonly string[]): Map<string, string> {
  const owners = new Map<string, string>();
  shardList.forEach((shardId, p) => owners.set(shardId, sortedClients[p % sortedClients.length] ?? ''));
  return owners;
}

function nowNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

function stamp(name: string): Item {
  const ms = Date.now();
  return { [name]: { N: (BigInt(ms) * 1_000_000n).toString() }, [`${name}RFC`]: { S: new Date(ms).toUTCString() } };
}

function text(value: AttributeValue | undefined): string | undefined {
  return value?.S === undefined || value.S === '' ? undefined : value.S;
}

function nullable(value: string | undefined): AttributeValue {
  return value === undefined ? { NULL: true } : { S: value };
}

function conditional(error: unknown): boolean {
  return (error as { name?: string }).name === 'ConditionalCheckFailedException';
}

/** Resolves after `ms`, or at once when `signal` aborts. */
async function pause(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch {
    // aborted: the caller checks the signal
  }
}

/** One Go-like client: `start()` is the Go `Run`, `stop()` the Go `Stop`. */
export class GoMember {
  readonly id: string;
  /** Errors the Go kinsumer would push to its user error queue. */
  readonly errors: Error[] = [];
  readonly #options: GoMemberOptions;
  readonly #tables: { readonly clients: string; readonly checkpoints: string; readonly metadata: string };
  readonly #stop = new AbortController();
  readonly #consumers = new Map<string, ShardConsumer>();
  #mainLoop: Promise<void> | undefined;
  #leader: Leader | undefined;
  #last: { n: number; i: number; shards: string[] } = { n: -1, i: -1, shards: [] };

  constructor(options: GoMemberOptions) {
    this.#options = options;
    this.id = options.id ?? randomUUID();
    const app = options.applicationName;
    this.#tables = { clients: `${app}_clients`, checkpoints: `${app}_checkpoints`, metadata: `${app}_metadata` };
  }

  /** The shards it holds now (captured and not yet released). */
  held(): string[] {
    return [...this.#consumers.values()].filter((c) => c.holding).map((c) => c.shardId).sort();
  }

  /** The first refresh, then the refresh loop; a failed first refresh deregisters and throws. */
  async start(): Promise<void> {
    try {
      await this.#refreshAndRebalance();
    } catch (error) {
      await this.#deregister();
      throw error;
    }
    this.#mainLoop = this.#loop();
  }

  /** §14: stop the consumers (each releases), delete the client row, step down. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#mainLoop;
    await this.#stopConsumers();
    await this.#deregister();
    await this.#leader?.stop();
    this.#leader = undefined;
  }

  async #loop(): Promise<void> {
    const { shardCheckFrequencyMs } = this.#options.timings;
    for (;;) {
      await pause(shardCheckFrequencyMs, this.#stop.signal);
      if (this.#stop.signal.aborted) return;
      try {
        await this.#refreshAndRebalance();
      } catch (error) {
        this.errors.push(error as Error);
      }
    }
  }

  // §5 refresh, then §9 when something changed.
  async #refreshAndRebalance(): Promise<void> {
    const { dynamodb, timings } = this.#options;
    const name = this.#options.name ?? this.id;
    await dynamodb.send(new PutItemCommand({ TableName: this.#tables.clients, Item: { ID: { S: this.id }, Name: { S: name }, ...stamp('LastUpdate') } }));
    const ttlNs = BigInt(5 * timings.shardCheckFrequencyMs) * 1_000_000n;
    const rows = await this.#scan(this.#tables.clients, { FilterExpression: 'LastUpdate > :cutoff', ExpressionAttributeValues: { ':cutoff': { N: (nowNs() - ttlNs).toString() } } });
    const clients = rows.map((row) => row.ID?.S ?? '').sort(goStringOrder);
    const i = clients.indexOf(this.id);
    if (i < 0) throw new Error('this client not found');
    if (i === 0 && this.#leader === undefined) {
      this.#leader = new Leader(this.#options, this.#tables, this.id, name, (error) => this.errors.push(error));
      this.#leader.start();
    } else if (i !== 0 && this.#leader !== undefined) {
      await this.#leader.stop();
      this.#leader = undefined;
    }
    const shards = await this.#shardList();
    const changed = clients.length !== this.#last.n || i !== this.#last.i || shards.join() !== this.#last.shards.join();
    this.#last = { n: clients.length, i, shards };
    if (!changed) return;
    await this.#stopConsumers();
    if (this.#stop.signal.aborted || i >= shards.length) return;
    for (const [shardId, owner] of goRoundRobin(clients, shards)) {
      if (owner !== this.id) continue;
      const consumer = new ShardConsumer(this.#options, this.#tables.checkpoints, this.id, name, shardId, (error) => this.errors.push(error));
      this.#consumers.set(shardId, consumer);
      consumer.start();
    }
  }

  // §8: the ShardCache item's ShardIDs; a missing or empty cache is written from ListShards.
  async #shardList(): Promise<string[]> {
    const { dynamodb, kinesis, streamName } = this.#options;
    const cache = await dynamodb.send(new GetItemCommand({ TableName: this.#tables.metadata, Key: { Key: { S: 'ShardCache' } }, ConsistentRead: true }));
    const cached = (cache.Item?.ShardIDs?.L ?? []).map((v) => v.S ?? '');
    if (cached.length > 0) return cached;
    const listed = await listAllShards(kinesis, streamName);
    if (listed.length > 0) {
      await dynamodb.send(new PutItemCommand({ TableName: this.#tables.metadata, Item: { Key: { S: 'ShardCache' }, ShardIDs: { L: listed.map((S) => ({ S })) }, ...stamp('LastUpdate') } }));
    }
    return listed;
  }

  async #stopConsumers(): Promise<void> {
    const consumers = [...this.#consumers.values()];
    this.#consumers.clear();
    await Promise.all(consumers.map((c) => c.stop()));
  }

  async #deregister(): Promise<void> {
    try {
      await this.#options.dynamodb.send(new DeleteItemCommand({ TableName: this.#tables.clients, Key: { ID: { S: this.id } } }));
    } catch (error) {
      this.errors.push(error as Error);
    }
  }

  async #scan(table: string, filter: { FilterExpression?: string; ExpressionAttributeValues?: Item } = {}): Promise<Item[]> {
    return scanAll(this.#options.dynamodb, table, filter);
  }
}

async function scanAll(dynamodb: DynamoDBClient, table: string, filter: { FilterExpression?: string; ExpressionAttributeValues?: Item } = {}): Promise<Item[]> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await dynamodb.send(new ScanCommand({ TableName: table, ConsistentRead: true, ...filter, ...(start === undefined ? {} : { ExclusiveStartKey: start }) }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return items;
}

async function listAllShards(kinesis: KinesisClient, streamName: string): Promise<string[]> {
  const ids: string[] = [];
  let token: string | undefined;
  do {
    const page = await kinesis.send(new ListShardsCommand(token === undefined ? { StreamName: streamName } : { NextToken: token }));
    ids.push(...(page.Shards ?? []).map((s) => s.ShardId ?? ''));
    token = page.NextToken;
  } while (token !== undefined);
  return ids.sort(goStringOrder);
}

/** §7: the leader task (lock, shard-list refresh), while this client sorts first. */
class Leader {
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(
    private readonly options: GoMemberOptions,
    private readonly tables: { readonly checkpoints: string; readonly metadata: string },
    private readonly id: string,
    private readonly name: string,
    private readonly report: (error: Error) => void,
  ) {}

  start(): void {
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
    try {
      await this.options.dynamodb.send(new UpdateItemCommand({
        TableName: this.tables.metadata,
        Key: { Key: { S: 'Leader' } },
        UpdateExpression: 'REMOVE ID SET LastUpdate = :now, LastUpdateRFC = :rfc',
        ConditionExpression: 'ID = :me',
        ExpressionAttributeValues: { ':now': stamp('LastUpdate').LastUpdate as AttributeValue, ':rfc': stamp('LastUpdate').LastUpdateRFC as AttributeValue, ':me': { S: this.id } },
      }));
    } catch (error) {
      if (!conditional(error)) this.report(error as Error);
    }
  }

  async #run(): Promise<void> {
    const { leaderActionFrequencyMs } = this.options.timings;
    for (;;) {
      try {
        if (await this.#acquire()) await this.#actions();
      } catch (error) {
        this.report(error as Error);
      }
      await pause(leaderActionFrequencyMs, this.#stop.signal);
      if (this.#stop.signal.aborted) return;
    }
  }

  async #acquire(): Promise<boolean> {
    const ttlNs = BigInt(5 * this.options.timings.leaderActionFrequencyMs) * 1_000_000n;
    try {
      await this.options.dynamodb.send(new PutItemCommand({
        TableName: this.tables.metadata,
        Item: { Key: { S: 'Leader' }, ID: { S: this.id }, Name: { S: this.name }, ...stamp('LastUpdate') },
        ConditionExpression: 'ID = :me OR attribute_not_exists(ID) OR LastUpdate <= :cutoff',
        ExpressionAttributeValues: { ':me': { S: this.id }, ':cutoff': { N: (nowNs() - ttlNs).toString() } },
      }));
      return true;
    } catch (error) {
      if (conditional(error)) return false;
      throw error;
    }
  }

  async #actions(): Promise<void> {
    const { dynamodb, kinesis, streamName, timings } = this.options;
    const cache = await dynamodb.send(new GetItemCommand({ TableName: this.tables.metadata, Key: { Key: { S: 'ShardCache' } }, ConsistentRead: true }));
    const writtenNs = BigInt(cache.Item?.LastUpdate?.N ?? '0');
    if (nowNs() - writtenNs < BigInt(timings.leaderActionFrequencyMs) * 1_000_000n) return;
    const cached = (cache.Item?.ShardIDs?.L ?? []).map((v) => v.S ?? '');
    const listed = new Set(await listAllShards(kinesis, streamName));
    const finished = new Set((await scanAll(dynamodb, this.tables.checkpoints))
      .filter((row) => row.Finished?.N !== undefined).map((row) => row.Shard?.S ?? ''));
    const next = [...new Set([...cached.filter((s) => listed.has(s)), ...listed])].filter((s) => !finished.has(s)).sort(goStringOrder);
    if (next.join() === cached.join() || next.length === 0) return;
    await dynamodb.send(new PutItemCommand({ TableName: this.tables.metadata, Item: { Key: { S: 'ShardCache' }, ShardIDs: { L: next.map((S) => ({ S })) }, ...stamp('LastUpdate') } }));
  }
}

/** §10–§12: capture, read, hand out, commit, release one shard. */
class ShardConsumer {
  /** Captured and not yet released. */
  holding = false;
  readonly #stop = new AbortController();
  #run: Promise<void> | undefined;
  /** The sequence number of the last record handed out (the checkpointer's position). */
  #position: string | undefined;
  #dirty = false;
  #finalSequence: string | undefined | null = null;

  constructor(
    private readonly options: GoMemberOptions,
    private readonly table: string,
    private readonly id: string,
    private readonly name: string,
    readonly shardId: string,
    private readonly report: (error: Error) => void,
  ) {}

  start(): void {
    this.#run = this.#consume();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#run;
  }

  async #consume(): Promise<void> {
    const signal = this.#stop.signal;
    const captured = await this.#captureLoop();
    if (captured === undefined) return;
    this.holding = true;
    try {
      await this.#read(captured, signal);
    } catch (error) {
      this.report(new Error(`shard error (${this.shardId}): ${(error as Error).message}`));
    }
    await this.#release();
    this.holding = false;
  }

  // §10: a consistent read; no write while an owner's LastUpdate is within the TTL on this clock.
  async #captureLoop(): Promise<Item | undefined> {
    const { dynamodb, timings } = this.options;
    const ttlNs = BigInt(5 * timings.shardCheckFrequencyMs) * 1_000_000n;
    while (!this.#stop.signal.aborted) {
      const cutoffNs = nowNs() - ttlNs;
      try {
        const row = (await dynamodb.send(new GetItemCommand({ TableName: this.table, Key: { Shard: { S: this.shardId } }, ConsistentRead: true }))).Item ?? {};
        const owned = text(row.OwnerID) !== undefined && BigInt(row.LastUpdate?.N ?? '0') > cutoffNs;
        if (!owned) {
          const item: Item = {
            Shard: { S: this.shardId },
            SequenceNumber: row.SequenceNumber ?? { NULL: true },
            OwnerID: { S: this.id },
            OwnerName: { S: this.name },
            Finished: row.Finished ?? { NULL: true },
            FinishedRFC: row.FinishedRFC ?? { NULL: true },
            ...stamp('LastUpdate'),
          };
          await dynamodb.send(new PutItemCommand({
            TableName: this.table,
            Item: item,
            ConditionExpression: 'attribute_not_exists(OwnerID) OR attribute_type(OwnerID, :null) OR LastUpdate <= :cutoff',
            ExpressionAttributeValues: { ':null': { S: 'NULL' }, ':cutoff': { N: cutoffNs.toString() } },
          }));
          this.#position = text(row.SequenceNumber);
          return item;
        }
      } catch (error) {
        if (!conditional(error)) {
          this.report(new Error(`shard error (${this.shardId}) in captureShard: ${(error as Error).message}`));
          return undefined;
        }
      }
      await pause(timings.throttleDelayMs, this.#stop.signal);
    }
    return undefined;
  }

  // §11: GetRecords at most once per throttleDelay, every record handed out in order, commits on their tick.
  async #read(captured: Item, signal: AbortSignal): Promise<void> {
    const { kinesis, streamName, timings } = this.options;
    const stored = text(captured.SequenceNumber);
    const start = stored === undefined ? { ShardIteratorType: 'TRIM_HORIZON' as const }
      : stored === 'LATEST' ? { ShardIteratorType: 'LATEST' as const }
        : { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER' as const, StartingSequenceNumber: stored };
    let iterator = (await kinesis.send(new GetShardIteratorCommand({ StreamName: streamName, ShardId: this.shardId, ...start }))).ShardIterator;
    let nextCommitAt = Date.now() + timings.commitFrequencyMs;
    let lastRead: string | undefined;
    while (!signal.aborted) {
      const throttle = Date.now() + timings.throttleDelayMs;
      if (iterator !== undefined) {
        const page = await kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 10_000 }));
        for (const record of page.Records ?? []) {
          if (signal.aborted) break;
          const sequenceNumber = record.SequenceNumber ?? '';
          this.options.deliver({ clientId: this.id, shardId: this.shardId, sequenceNumber, data: decoder.decode(record.Data) });
          if (sequenceNumber !== this.#position) this.#dirty = true;
          this.#position = sequenceNumber;
          lastRead = sequenceNumber;
        }
        iterator = page.NextShardIterator;
        if (iterator === undefined) this.#finalSequence = lastRead;
      }
      if (Date.now() >= nextCommitAt) {
        nextCommitAt = Date.now() + timings.commitFrequencyMs;
        if (await this.#commit()) return;
      }
      await pause(Math.max(0, throttle - Date.now()), signal);
    }
  }

  // §12: a full row under OwnerID = me, only when the position moved or the shard ended. Returns whether Finished was written.
  async #commit(): Promise<boolean> {
    const ending = this.#finalSequence !== null;
    if (!this.#dirty && !ending) return false;
    const finish = ending && (this.#finalSequence === undefined || this.#finalSequence === this.#position);
    const finished: Item = finish ? stamp('Finished') : { Finished: { NULL: true }, FinishedRFC: { NULL: true } };
    await this.options.dynamodb.send(new PutItemCommand({
      TableName: this.table,
      Item: {
        Shard: { S: this.shardId },
        SequenceNumber: nullable(this.#position),
        OwnerID: { S: this.id },
        OwnerName: { S: this.name },
        ...stamp('LastUpdate'),
        ...finished,
      },
      ConditionExpression: 'OwnerID = :me',
      ExpressionAttributeValues: { ':me': { S: this.id } },
    }));
    this.#dirty = false;
    return finish;
  }

  // §12 release: remove the owner, write the position handed out last.
  async #release(): Promise<void> {
    const now = stamp('LastUpdate');
    try {
      await this.options.dynamodb.send(new UpdateItemCommand({
        TableName: this.table,
        Key: { Shard: { S: this.shardId } },
        UpdateExpression: 'REMOVE OwnerID, OwnerName SET LastUpdate = :now, LastUpdateRFC = :rfc, SequenceNumber = :seq',
        ConditionExpression: 'OwnerID = :me',
        ExpressionAttributeValues: { ':now': now.LastUpdate as AttributeValue, ':rfc': now.LastUpdateRFC as AttributeValue, ':seq': nullable(this.#position), ':me': { S: this.id } },
      }));
    } catch (error) {
      this.report(new Error(`shard error (${this.shardId}) in checkpointer.release: ${(error as Error).message}`));
    }
  }
}
