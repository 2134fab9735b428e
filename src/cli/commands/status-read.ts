// What `kinsumer status` reads, all read-only: the shards (ListShards), the checkpoint rows
// (BatchGetItem), the clients table (one Scan), the leader item (one GetItem), and per shard with a
// stored position one GetShardIterator AT_SEQUENCE_NUMBER + GetRecords Limit 1 of the checkpointed
// record: its ApproximateArrivalTimestamp and the answer's MillisBehindLatest (the lag). Where that
// answer says 0, one more GetRecords Limit 1 after it asks whether a record follows the checkpoint:
// Kinesis says 0 only when none does, kinesalite always does, so a 0 with a record after it is a
// server that cannot tell.
import { firstValueFrom, from, lastValueFrom, map, mergeMap, switchMap, toArray, catchError, of } from 'rxjs';
import { AttributeFormatError } from '../../dynamodb/codec.js';
import type { Dynamo } from '../../dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../dynamodb/lease-store.js';
import { decodeClientRow } from '../../dynamodb/membership-store.js';
import { METADATA_ATTRIBUTES, decodeLeader } from '../../dynamodb/metadata-store.js';
import { tableError } from '../../dynamodb/table-error.js';
import { tableNames } from '../../dynamodb/table-names.js';
import type { CorruptCheckpointError } from '../../errors/kinsumer-errors.js';
import type { Leader, LiveClient } from '../../ports/coordination.js';
import type { CheckpointRow } from '../../ports/lease-store.js';
import type { ShardInfo, StreamPort } from '../../ports/stream.js';

/** A row of the clients table as `status` shows it. */
export type ClientRow = Omit<LiveClient, 'unchangedForMs' | 'expiresInMs' | 'nextBeatInMs' | 'beatUncertaintyMs'> & { readonly drainRequested?: boolean };

/** The checkpointed record of a shard, read back: when it arrived, and how far that read was behind the tip. */
export interface CheckpointLag {
  /** `ApproximateArrivalTimestamp` of the checkpointed record; `undefined` when the stream no longer keeps it. */
  readonly arrivedAt: Date | undefined;
  /** `MillisBehindLatest` of the GetRecords answer at the checkpoint. */
  readonly millisBehindLatest: number | undefined;
  /**
   * Whether a record follows the checkpointed one; read only when the server said 0 behind
   * (`undefined` otherwise). `true` with a 0: the server cannot tell the lag (kinesalite).
   */
  readonly recordAfter?: boolean | undefined;
}

/** Everything one `status` refresh shows. */
export interface GroupSnapshot {
  readonly shards: readonly ShardInfo[];
  readonly rows: readonly CheckpointRow[];
  /** Why a row could not be decoded, by shard. */
  readonly corrupt: ReadonlyMap<string, string>;
  readonly clients: readonly ClientRow[];
  /** Clients rows that could not be decoded: their ID (or `(unknown)`) and why. */
  readonly corruptClients: readonly { readonly id: string; readonly problem: string }[];
  readonly leader: Leader | undefined;
  /** By shard: the lag read at its checkpoint, or why it could not be read. */
  readonly lags: ReadonlyMap<string, CheckpointLag | { readonly error: string }>;
  /** This machine's clock when the reads were done. */
  readonly nowMs: number;
}

/** Lag reads in flight at once (each is two Kinesis calls on its own shard). */
const LAG_CONCURRENCY = 8;

/** Reads one snapshot of the group. Errors of the shard list and the tables fail it; a failed lag read is shown per shard. */
export async function readGroup(options: {
  readonly stream: StreamPort;
  readonly dynamo: Dynamo;
  readonly app: string;
  readonly leaseTtlMs: number;
}): Promise<GroupSnapshot> {
  const { stream, dynamo, app, leaseTtlMs } = options;
  const tables = tableNames(app);
  const shards = await firstValueFrom(stream.listShards());
  const corrupt = new Map<string, string>();
  const store = new DynamoLeaseStore({
    dynamo, table: tables.checkpoints, clientId: 'kinsumer-cli', clientName: 'kinsumer-cli',
    leaseTtlMs, now: Date.now, onCorruptRow: (error: CorruptCheckpointError) => corrupt.set(error.shardId, error.message),
  });
  const rows = await firstValueFrom(store.readMany(shards.map((s) => s.shardId)));
  const [clients, leader, lags] = await Promise.all([
    readClients(dynamo, tables.clients),
    readLeader(dynamo, tables.metadata),
    readLags(stream, rows),
  ]);
  return { shards, rows, corrupt, clients: clients.rows, corruptClients: clients.corrupt, leader, lags, nowMs: Date.now() };
}

async function readClients(dynamo: Dynamo, table: string): Promise<{ rows: ClientRow[]; corrupt: { id: string; problem: string }[] }> {
  const items = await firstValueFrom(dynamo.scanAll({ TableName: table, ConsistentRead: true }).pipe(catchError((error: unknown) => tableError(table, error))));
  const rows: ClientRow[] = [];
  const corrupt: { id: string; problem: string }[] = [];
  for (const item of items) {
    try {
      const row = decodeClientRow(item);
      if (row !== undefined) rows.push(row);
    } catch (error) {
      if (!(error instanceof AttributeFormatError)) throw error;
      corrupt.push({ id: item.ID?.S ?? '(unknown)', problem: error.message });
    }
  }
  return { rows: rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)), corrupt };
}

async function readLeader(dynamo: Dynamo, table: string): Promise<Leader | undefined> {
  const item = await firstValueFrom(dynamo.getItem({ TableName: table, Key: { [METADATA_ATTRIBUTES.key]: { S: METADATA_ATTRIBUTES.leaderKey } }, ConsistentRead: true })
    .pipe(catchError((error: unknown) => tableError(table, error))));
  return item === undefined ? undefined : decodeLeader(item);
}

async function readLags(stream: StreamPort, rows: readonly CheckpointRow[]): Promise<Map<string, CheckpointLag | { error: string }>> {
  type Read = [string, CheckpointLag | { error: string }];
  const positioned = rows.flatMap((row) => (row.checkpoint?.type === 'position' ? [{ shardId: row.shardId, sequenceNumber: row.checkpoint.position.sequenceNumber }] : []));
  const read = await lastValueFrom(from(positioned).pipe(
    mergeMap(({ shardId, sequenceNumber }) => stream.getShardIterator(shardId, { type: 'AT_SEQUENCE_NUMBER', sequenceNumber }).pipe(
      switchMap((issued) => stream.getRecords(issued.shardIterator, 1)),
      switchMap((page) => {
        const [record] = page.records;
        // Trimmed past the checkpoint: the first record kept is a later one, whose arrival says nothing of the checkpoint's.
        const atCheckpoint = record?.sequenceNumber === sequenceNumber;
        const arrivedAt = atCheckpoint ? record.approximateArrivalTimestamp : undefined;
        const lag = (recordAfter: boolean | undefined): Read => [shardId, { arrivedAt, millisBehindLatest: page.millisBehindLatest, recordAfter }];
        if (page.millisBehindLatest !== 0) return of(lag(undefined));
        if (record !== undefined && !atCheckpoint) return of(lag(true));
        if (page.nextShardIterator === undefined) return of(lag(false));
        return stream.getRecords(page.nextShardIterator, 1).pipe(map((next) => lag(next.records.length > 0)));
      }),
      catchError((error: unknown) => of<Read>([shardId, { error: error instanceof Error ? error.message : String(error) }])),
    ), LAG_CONCURRENCY),
    toArray(),
  ));
  return new Map(read);
}
