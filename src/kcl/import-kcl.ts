// importKclCheckpoints(): a stopped KCL fleet's checkpoints become kinsumer's, so the group starts
// where the KCL stopped (design §8.2). The CLI's `import-kcl` calls it.
import { type Observable, catchError, firstValueFrom, forkJoin, from, lastValueFrom, map, mergeMap, of, throwError, toArray } from 'rxjs';
import { Dynamo } from '../dynamodb/dynamo.js';
import { tableNames } from '../dynamodb/table-names.js';
import { createTables } from '../dynamodb/tables.js';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { ConfigError, TableNotFoundError } from '../errors/kinsumer-errors.js';
import type { KinesisStream } from '../kinesis/kinesis.js';
import { parseShardKey } from '../ports/stream-key.js';
import { resetMomentOf } from '../reading/start-position.js';
import { type ImportWrite, planImport } from './import-plan.js';
import type { KclItem } from './lease-row.js';
import type { KclPlanLine } from './plan.js';
import { selectStreamLeases } from './stream-leases.js';
import { manyStreams, oneStream, rowKey, rowsOf } from './stream-targets.js';
import { type KclMoveOptions, checkMoveOptions } from './kcl-options.js';
import { KclTable, type KclTableRead, leaseVersions } from './kcl-table.js';
import { type StoredRow, ownedRowVersions, readCheckpointItem, readCheckpointRows, readClientVersions, rowOwner, writeCheckpoint } from './kinsumer-rows.js';
import type { KclPlan } from './plan.js';
import { type RecordAtCheckpoint, recordAt } from './record-at.js';
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
  // A one-stream group's stream is looked at first: not found, nothing else is read.
  const single = checked.stream === undefined ? undefined : await oneStream(options.kinesis, checked.stream);
  const kcl = new KclTable(dynamo, checked.leaseTable);
  const names = tableNames(checked.applicationName);
  const table = names.checkpoints;
  // Missing tables hold no rows; they are created only when there is something to write.
  const orNone = <T>(empty: T) => catchError<T, Observable<T>>((error: unknown) => (error instanceof TableNotFoundError ? of(empty) : throwError(() => error)));
  const read = (): Observable<{ kcl: KclTableRead; rows: Map<string, StoredRow>; clients: Map<string, string> }> => forkJoin({
    kcl: kcl.read(),
    rows: readCheckpointRows(dynamo, table).pipe(orNone(new Map<string, StoredRow>())),
    // A lease lives by its owner's clients row (docs/architecture.md, "Liveness"): an owned row that
    // does not move may still be held, by an owner whose heartbeats do.
    clients: readClientVersions(dynamo, names.clients).pipe(orNone(new Map<string, string>())),
  });
  const watched = await firstValueFrom(readTwice(read, ({ kcl: k, rows }) => {
    const leases = leaseVersions(k).size;
    const owned = ownedRowVersions(rows).size;
    return leases + owned === 0 ? undefined : `${leases} KCL leases and ${owned} kinsumer rows with an owner`;
  }, watchMs, scheduler, options.onWatch));
  const { before, after } = watched;
  const movedLeases = movedKeys(leaseVersions(before.kcl), leaseVersions(after.kcl));
  const liveOwners = new Map<string, string>();
  const heartbeating = new Set(movedKeys(before.clients, after.clients));
  for (const [shardId, stored] of after.rows) {
    const owner = rowOwner(stored);
    if (owner !== undefined && heartbeating.has(owner)) liveOwners.set(shardId, owner);
  }
  for (const shardId of movedKeys(ownedRowVersions(before.rows), ownedRowVersions(after.rows))) {
    const owner = [after.rows.get(shardId), before.rows.get(shardId)].map((r) => (r === undefined ? undefined : rowOwner(r))).find((o) => o !== undefined);
    if (owner !== undefined) liveOwners.set(shardId, owner);
  }
  const { targets, missing } = single !== undefined ? { targets: [single], missing: [] } : await manyStreams(options.kinesis, streamsToImport(checked.streams, after.kcl.items));
  const selected = targets.map((target) => ({ target, leases: selectStreamLeases(after.kcl.items, target.kcl) }));
  // The import's moment on DynamoDB's clock, read before any write as a reset reads its own: where a KCL LATEST starts.
  const [firstLease] = selected.flatMap(({ leases }) => [...leases.byShard.values()].flat());
  const importedAt = resetMomentOf(firstLease === undefined ? undefined : await firstValueFrom(kcl.serverDate(firstLease.leaseKey)), Date.now());
  const lines: KclPlanLine[] = missing.map((entry) => ({ shardId: entry, kcl: undefined, start: undefined, action: 'skip', reason: `stream ${entry} not found: nothing of it to read, nothing imported` }));
  const refused = new Set<string>();
  const writes: ImportWrite[] = [];
  for (const { target, leases } of selected) {
    const records = await readRecordsAtCheckpoints(target.stream, target.shards.map((s) => s.shardId), leases.byShard);
    const plan = planImport({
      shards: target.shards, leases, kinsumer: rowsOf(target, after.rows), records, movedLeases, liveOwners: rowsOf(target, liveOwners), timestamp, importedAt, force,
    });
    // Lines and writes name kinsumer's rows (a `streams` group's keys); a lease of an older stream of the name, by its own key.
    const older = new Set(leases.otherIncarnations.map(({ item }) => item.leaseKey));
    lines.push(...plan.lines.map((line) => ({ ...line, shardId: line.leaseKey !== undefined && older.has(line.leaseKey) ? line.leaseKey : rowKey(target, line.shardId) })));
    writes.push(...plan.writes.map((write) => ({ ...write, shardId: rowKey(target, write.shardId) })));
    for (const reason of plan.refused) refused.add(targets.length > 1 ? reason.replace("the stream's shards", `the shards of ${target.entry}`) : reason);
  }
  let written = 0;
  if (!dryRun && refused.size === 0) {
    await createTables({ dynamodb: options.dynamodb, applicationName: checked.applicationName, scheduler });
    let changed = 0;
    for (const write of writes) {
      if (await writeOne(dynamo, names, write, after.rows.get(write.shardId), force)) {
        written += 1;
        continue;
      }
      changed += 1;
      const index = lines.findIndex((line) => line.shardId === write.shardId && line.action === 'write');
      const line = lines[index];
      if (line !== undefined) lines[index] = { ...line, action: 'refuse', reason: 'its kinsumer row changed after it was read: not written; run the import again' };
    }
    if (changed > 0) refused.add(`${changed} kinsumer rows changed between their read and their write and were not written (${written} were)`);
  }
  const taken = selected.reduce((n, { leases }) => n + [...leases.byShard.values()].flat().length + leases.otherIncarnations.length, 0);
  const items = after.kcl.items;
  return {
    shards: lines, written, refused: [...refused], dryRun, watchedMs: watched.watchedMs,
    ignored: { otherStreams: items.filter((item) => item.kind !== 'other').length - taken, otherItems: items.filter((item) => item.kind === 'other').length },
  };
}

/**
 * The streams a `streams` import moves: the list given, or for `'all'` every stream the KCL
 * table has multi-stream leases of (by name, each once, sorted). A table of single-stream leases has no
 * stream to name: a one-stream group takes it (streamName).
 */
function streamsToImport(streams: readonly string[] | 'all' | undefined, items: readonly KclItem[]): readonly string[] {
  if (streams !== 'all') return streams ?? [];
  const names = new Set<string>();
  for (const item of items) {
    if (item.kind === 'other') continue;
    const stream = parseShardKey(item.leaseKey)?.stream;
    if (stream === undefined) throw new ConfigError('streams', `the KCL table holds single-stream leases (${item.leaseKey}): import it into a one-stream group (streamName), not 'all'`);
    names.add(stream.streamName);
  }
  return [...names].sort();
}

/** A forced write that lost the race with a live owner's renewal reads the row again and tries again, as a forced reset does. */
const FORCED_ATTEMPTS = 3;

async function writeOne(dynamo: Dynamo, tables: { readonly checkpoints: string; readonly clients: string }, write: ImportWrite, asRead: StoredRow | undefined, force: boolean): Promise<boolean> {
  let item = asRead?.item;
  for (let attempt = 1; ; attempt += 1) {
    try {
      await lastValueFrom(writeCheckpoint(dynamo, tables, write.shardId, write, item, Date.now()), { defaultValue: undefined });
      return true;
    } catch (error) {
      if (classifyAwsError(error) !== 'conditional') throw error;
      if (!force || attempt >= FORCED_ATTEMPTS) return false;
      item = await firstValueFrom(readCheckpointItem(dynamo, tables.checkpoints, write.shardId));
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
