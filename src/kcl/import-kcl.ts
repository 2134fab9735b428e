// importKclCheckpoints(): a stopped KCL fleet's checkpoints become kinsumer's, so the group starts
// where the KCL stopped (design §8.2). The CLI's `import-kcl` calls it.
import { type Observable, catchError, firstValueFrom, forkJoin, from, lastValueFrom, map, mergeMap, of, throwError, toArray } from 'rxjs';
import { Dynamo } from '../dynamodb/dynamo.js';
import { tableNames } from '../dynamodb/table-names.js';
import { createTables } from '../dynamodb/tables.js';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { ConfigError, TableNotFoundError } from '../errors/kinsumer-errors.js';
import { KinesisStream } from '../kinesis/kinesis.js';
import { resetMomentOf } from '../reading/start-position.js';
import { type ImportWrite, planImport } from './import-plan.js';
import { type KclMoveOptions, checkMoveOptions } from './kcl-options.js';
import { KclTable, type KclTableRead, leaseVersions } from './kcl-table.js';
import { type StoredRow, ownedRowVersions, readCheckpointItem, readCheckpointRows, rowOwner, writeCheckpoint } from './kinsumer-rows.js';
import type { KclPlan } from './plan.js';
import { type RecordAtCheckpoint, recordAt } from './record-at.js';
import { type StreamIdentity, accountOf, selectStreamLeases } from './stream-leases.js';
import { movedKeys, readTwice } from './watch.js';

/** Options of {@link importKclCheckpoints}. */
export interface ImportKclOptions extends KclMoveOptions {
  /**
   * The time the KCL application is configured with (`InitialPositionInStream.AT_TIMESTAMP`): the
   * KCL keeps it in its configuration, not in its leases, so an `AT_TIMESTAMP` lease is refused
   * without it. Not in the future.
   */
  readonly timestamp?: Date;
}

/** Records at checkpoints read at once (each one GetShardIterator and usually one GetRecords). */
const RECORD_READS_AT_ONCE = 8;

/**
 * Imports a KCL application's checkpoints (its lease table, KCL 1.x, 2.x or 3.x, single- or
 * multi-stream) into kinsumer's checkpoints table, so the group resumes right after each KCL
 * checkpoint: after the checkpointed user record (inside a KPL aggregate by its sub-sequence
 * number), at `TRIM_HORIZON`, `LATEST` or `timestamp` where the lease holds that start, and with
 * shards at `SHARD_END` finished, so their children come after them. A shard without a lease is
 * left to `initialPosition`; `pendingCheckpoint` is not used (the KCL does not resume from it).
 * Creates kinsumer's tables when they are missing, before its first write (not in a dry run, nor when it refuses).
 *
 * Refuses, writing nothing (the plan's `refused` says why), while the KCL fleet is alive (a lease's
 * `leaseCounter` moves while the tables are watched for `watchMs`), and, unless `force`, where a
 * write would move a kinsumer checkpoint backwards or a live kinsumer client holds the shard. Every
 * write is conditioned on the row as read and fences its former owner.
 *
 * ```ts
 * const plan = await importKclCheckpoints({ dynamodb, kinesis, leaseTable: 'billing-kcl', applicationName: 'billing', streamName: 'events' });
 * if (plan.refused.length > 0) console.error(plan.refused.join('\n'));
 * ```
 *
 * @throws ConfigError for a bad option.
 * @throws StreamNotFoundError, KinsumerError (the KCL table is missing), or the AWS error of a failed call.
 */
export async function importKclCheckpoints(options: ImportKclOptions): Promise<KclPlan> {
  const checked = checkMoveOptions(options, ['timestamp'], 'importKclCheckpoints');
  const timestamp = checkTimestamp(options.timestamp, Date.now());
  const { dryRun, force, watchMs, scheduler } = checked;
  const dynamo = new Dynamo(options.dynamodb);
  const stream = new KinesisStream(options.kinesis, checked.stream);
  const [summary, shards] = await Promise.all([firstValueFrom(stream.describeSummary()), firstValueFrom(stream.listShards())]);
  const identity: StreamIdentity = { streamName: summary.streamName, accountId: accountOf(summary.streamArn), creationMs: summary.creationTimestamp?.getTime() };
  const kcl = new KclTable(dynamo, checked.leaseTable);
  const table = tableNames(checked.applicationName).checkpoints;
  const read = (): Observable<{ kcl: KclTableRead; rows: Map<string, StoredRow> }> => forkJoin({
    kcl: kcl.read(),
    // Missing tables hold no rows; they are created only when there is something to write.
    rows: readCheckpointRows(dynamo, table).pipe(catchError((error: unknown) => (error instanceof TableNotFoundError ? of(new Map<string, StoredRow>()) : throwError(() => error)))),
  });
  const watched = await firstValueFrom(readTwice(read, ({ kcl: k, rows }) => {
    const leases = leaseVersions(k).size;
    const owned = ownedRowVersions(rows).size;
    return leases + owned === 0 ? undefined : `${leases} KCL leases and ${owned} kinsumer rows with an owner`;
  }, watchMs, scheduler, options.onWatch));
  const { before, after } = watched;
  const movedLeases = movedKeys(leaseVersions(before.kcl), leaseVersions(after.kcl));
  const liveOwners = new Map<string, string>();
  for (const shardId of movedKeys(ownedRowVersions(before.rows), ownedRowVersions(after.rows))) {
    const owner = [after.rows.get(shardId), before.rows.get(shardId)].map((r) => (r === undefined ? undefined : rowOwner(r))).find((o) => o !== undefined);
    if (owner !== undefined) liveOwners.set(shardId, owner);
  }
  const leases = selectStreamLeases(after.kcl.items, identity);
  const records = await readRecordsAtCheckpoints(stream, shards.map((s) => s.shardId), leases.byShard);
  // The import's moment on DynamoDB's clock, read before any write as a reset reads its own: where a KCL LATEST starts.
  const [firstLease] = [...leases.byShard.values()].flat();
  const importedAt = resetMomentOf(firstLease === undefined ? undefined : await firstValueFrom(kcl.serverDate(firstLease.leaseKey)), Date.now());
  const plan = planImport({ shards, leases, kinsumer: after.rows, records, movedLeases, liveOwners, timestamp, importedAt, force });
  const lines = [...plan.lines];
  const refused = [...plan.refused];
  let written = 0;
  if (!dryRun && refused.length === 0) {
    await createTables({ dynamodb: options.dynamodb, applicationName: checked.applicationName, scheduler });
    let changed = 0;
    for (const write of plan.writes) {
      if (await writeOne(dynamo, table, write, after.rows.get(write.shardId), force)) {
        written += 1;
        continue;
      }
      changed += 1;
      const index = lines.findIndex((line) => line.shardId === write.shardId && line.action === 'write');
      const line = lines[index];
      if (line !== undefined) lines[index] = { ...line, action: 'refuse', reason: 'its kinsumer row changed after it was read: not written; run the import again' };
    }
    if (changed > 0) refused.push(`${changed} kinsumer rows changed between their read and their write and were not written (${written} were)`);
  }
  return {
    shards: lines, written, refused, dryRun, watchedMs: watched.watchedMs,
    ignored: { otherStreams: leases.otherStreams, otherItems: leases.otherItems },
  };
}

/** A forced write that lost the race with a live owner's renewal reads the row again and tries again, as a forced reset does. */
const FORCED_ATTEMPTS = 3;

async function writeOne(dynamo: Dynamo, table: string, write: ImportWrite, asRead: StoredRow | undefined, force: boolean): Promise<boolean> {
  let item = asRead?.item;
  for (let attempt = 1; ; attempt += 1) {
    try {
      await lastValueFrom(writeCheckpoint(dynamo, table, write.shardId, write, item, Date.now()), { defaultValue: undefined });
      return true;
    } catch (error) {
      if (classifyAwsError(error) !== 'conditional') throw error;
      if (!force || attempt >= FORCED_ATTEMPTS) return false;
      item = await firstValueFrom(readCheckpointItem(dynamo, table, write.shardId));
    }
  }
}

/** The record at each listed shard's sequence checkpoint (only where one readable lease names the shard). */
async function readRecordsAtCheckpoints(stream: KinesisStream, listed: readonly string[], byShard: ReturnType<typeof selectStreamLeases>['byShard']): Promise<Map<string, RecordAtCheckpoint>> {
  const wanted: { shardId: string; sequenceNumber: string }[] = [];
  for (const shardId of listed) {
    const items = byShard.get(shardId) ?? [];
    const [item] = items;
    if (items.length === 1 && item?.kind === 'lease' && item.lease.checkpoint.type === 'sequence') {
      wanted.push({ shardId, sequenceNumber: item.lease.checkpoint.sequenceNumber });
    }
  }
  const found = await lastValueFrom(from(wanted).pipe(
    mergeMap(({ shardId, sequenceNumber }) => recordAt(stream, shardId, sequenceNumber).pipe(map((record) => [shardId, record] as const)), RECORD_READS_AT_ONCE),
    toArray(),
  ));
  return new Map(found);
}

function checkTimestamp(value: unknown, nowMs: number): Date | undefined {
  if (value === undefined) return undefined;
  if (!(value instanceof Date) || !Number.isFinite(value.getTime())) throw new ConfigError('timestamp', 'must be a valid Date');
  // Kinesis refuses an AT_TIMESTAMP iterator beyond its clock: the shard could not be read.
  if (value.getTime() > nowMs) throw new ConfigError('timestamp', `${value.toISOString()} is in the future`);
  return value;
}
