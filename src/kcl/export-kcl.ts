// exportKclCheckpoints(): the rollback. kinsumer's checkpoints become KCL leases that a KCL fleet
// takes at once (no owner) and resumes from where kinsumer stopped (design §8.2). The CLI's
// `export-kcl` calls it.
import { firstValueFrom, forkJoin, from, lastValueFrom, map, mergeMap, toArray } from 'rxjs';
import { Dynamo } from '../dynamodb/dynamo.js';
import { tableNames } from '../dynamodb/table-names.js';
import { classifyAwsError } from '../errors/aws-error-kind.js';
import { ConfigError } from '../errors/kinsumer-errors.js';
import { parseShardKey } from '../ports/stream-key.js';
import type { InitialPosition } from '../types.js';
import { type ExportWrite, planExport, recordToRead } from './export-plan.js';
import { type KclMoveOptions, checkMoveOptions } from './kcl-options.js';
import { KclTable, type KclTableRead } from './kcl-table.js';
import { ownedRowVersions, readCheckpointRows, readClientVersions, rowOwner } from './kinsumer-rows.js';
import { encodeKclLease } from './lease-row.js';
import type { KclPlan, KclPlanLine } from './plan.js';
import { type RecordAtCheckpoint, recordAt } from './record-at.js';
import { selectStreamLeases } from './stream-leases.js';
import { manyStreams, oneStream, rowKey, rowsOf } from './stream-targets.js';
import { movedKeys, readTwice } from './watch.js';

/** Options of {@link exportKclCheckpoints}. */
export interface ExportKclOptions extends KclMoveOptions {
  /**
   * The group's `initialPosition`: where a KCL lease starts for a shard kinsumer never read and
   * whose parents say nothing. Default `'TRIM_HORIZON'` (nothing is skipped).
   */
  readonly initialPosition?: InitialPosition;
}

/** Records at checkpoints read at once. */
const RECORD_READS_AT_ONCE = 8;

/**
 * Writes kinsumer's checkpoints into a KCL lease table (created when missing, hash key `leaseKey`),
 * one lease per shard of the stream, in the format every KCL version reads: `checkpoint` and
 * `checkpointSubSequenceNumber` resume right after kinsumer's checkpoint; a shard never
 * checkpointed gets its start (`TRIM_HORIZON`, `LATEST`, or `AT_TIMESTAMP`, whose time the KCL
 * application must be configured with, one for the stream: the plan's `kclTimestamp`, the earliest
 * start; a later start with a floor that arrived after it is written as "after the floor"
 * instead, and each line says what the KCL reads that kinsumer would not); a finished shard gets
 * `SHARD_END` and its `childShardIds`, each child its `parentShardId`. No `leaseOwner` (a KCL
 * worker takes the lease at once), a `leaseCounter` above the row's, `ownerSwitchesSinceCheckpoint` 0.
 * Keys follow the table: multi-stream keys where it holds this stream's multi-stream leases.
 *
 * Refuses, writing nothing, while kinsumer clients are live (their rows move while the tables are
 * watched for `watchMs`), unless `force`. Records acked beyond a gap (acked ranges) are not carried
 * over: the KCL processes them again. Each write is conditioned on the lease as read.
 *
 * @throws ConfigError for a bad option.
 * @throws StreamNotFoundError, TableNotFoundError (kinsumer's tables), or the AWS error of a failed call.
 */
export async function exportKclCheckpoints(options: ExportKclOptions): Promise<KclPlan> {
  const checked = checkMoveOptions(options, ['initialPosition'], 'exportKclCheckpoints');
  const initialPosition = checkInitialPosition(options.initialPosition);
  const { dryRun, force, watchMs, scheduler } = checked;
  const dynamo = new Dynamo(options.dynamodb);
  const single = checked.stream === undefined ? undefined : await oneStream(options.kinesis, checked.stream);
  const names = tableNames(checked.applicationName);
  const read = () => forkJoin({ rows: readCheckpointRows(dynamo, names.checkpoints), clients: readClientVersions(dynamo, names.clients) });
  const watched = await firstValueFrom(readTwice(read, ({ rows, clients }) => {
    const owned = ownedRowVersions(rows).size;
    return clients.size + owned === 0 ? undefined : `${clients.size} kinsumer clients and ${owned} kinsumer rows with an owner`;
  }, watchMs, scheduler, options.onWatch));
  const { before, after } = watched;
  const live = new Set(movedKeys(before.clients, after.clients));
  for (const shardId of movedKeys(ownedRowVersions(before.rows), ownedRowVersions(after.rows))) {
    const stored = after.rows.get(shardId) ?? before.rows.get(shardId);
    const owner = stored === undefined ? undefined : rowOwner(stored);
    if (owner !== undefined) live.add(owner);
  }

  const kcl = new KclTable(dynamo, checked.leaseTable);
  const exists = await firstValueFrom(kcl.exists());
  const createdTables = exists ? [] : [checked.leaseTable];
  if (!exists && !dryRun) await lastValueFrom(kcl.create(scheduler), { defaultValue: undefined });
  const table: KclTableRead = exists ? await firstValueFrom(kcl.read()) : { items: [], raw: new Map() };
  const kclCounters = new Map<string, bigint | undefined>();
  for (const item of table.items) if (item.kind !== 'other') kclCounters.set(item.leaseKey, item.kind === 'lease' ? item.lease.leaseCounter : undefined);
  const { targets, missing } = single !== undefined ? { targets: [single], missing: [] } : await manyStreams(options.kinesis, streamsToExport(checked.streams, after.rows));

  const lines: KclPlanLine[] = missing.map((entry) => ({ shardId: entry, kcl: undefined, start: undefined, action: 'skip', reason: `stream ${entry} not found: nothing exported of it` }));
  const writes: ExportWrite[] = [];
  const refused = new Set<string>();
  let kclTimestamp: Date | undefined;
  let taken = 0;
  for (const target of targets) {
    const leases = selectStreamLeases(table.items, target.kcl);
    taken += [...leases.byShard.values()].flat().length + leases.otherIncarnations.length;
    // A `streams` group knows its stream's identity; a one-stream group's keys follow the table.
    const identifier = target.identity === undefined ? leases.identifier : leases.identifier ?? target.identity;
    const keyProblem = identifier === undefined && leases.multiStream
      ? `the KCL table holds multi-stream leases but none of stream ${target.summary.streamName}: the creation epoch its keys need cannot be told; write one lease of it with the KCL first`
      : undefined;
    const rows = rowsOf(target, after.rows);
    const wanted = target.shards.flatMap(({ shardId }) => {
      const sequenceNumber = recordToRead(rows.get(shardId)?.row);
      return sequenceNumber === undefined ? [] : [{ shardId, sequenceNumber }];
    });
    const records = new Map(await lastValueFrom(from(wanted).pipe(
      mergeMap(({ shardId, sequenceNumber }) => recordAt(target.stream, shardId, sequenceNumber).pipe(map((record): [string, RecordAtCheckpoint] => [shardId, record])), RECORD_READS_AT_ONCE),
      toArray(),
    )));
    const plan = planExport({
      shards: target.shards, kinsumer: rows, kclCounters, identifier, records, initialPosition, liveClients: [...live].sort(), keyProblem, force,
    });
    lines.push(...plan.lines.map((line) => ({ ...line, shardId: rowKey(target, line.shardId) })));
    writes.push(...plan.writes.map((write) => ({ ...write, shardId: rowKey(target, write.shardId) })));
    for (const reason of plan.refused) refused.add(targets.length > 1 ? reason.replace("the stream's shards", `the shards of ${target.entry}`) : reason);
    // One time per stream: a multi-stream KCL application configures each stream's own (its lines say it).
    if (single !== undefined) kclTimestamp = plan.kclTimestamp;
  }
  let written = 0;
  if (!dryRun && refused.size === 0) {
    let changed = 0;
    for (const { shardId, lease } of writes) {
      try {
        await lastValueFrom(kcl.put(encodeKclLease(lease), table.raw.get(lease.leaseKey)), { defaultValue: undefined });
        written += 1;
      } catch (error) {
        if (classifyAwsError(error) !== 'conditional') throw error;
        changed += 1;
        const index = lines.findIndex((line) => line.shardId === shardId);
        const line = lines[index];
        if (line !== undefined) lines[index] = { ...line, action: 'refuse', reason: 'its KCL lease changed after it was read (is a KCL worker running?): not written' };
      }
    }
    if (changed > 0) refused.add(`${changed} KCL leases changed between their read and their write and were not written (${written} were)`);
  }
  return {
    shards: lines, written, refused: [...refused], dryRun, watchedMs: watched.watchedMs,
    ...(kclTimestamp === undefined ? {} : { kclTimestamp }),
    ...(createdTables.length > 0 ? { createdTables } : {}),
    ignored: { otherStreams: table.items.filter((item) => item.kind !== 'other').length - taken, otherItems: table.items.filter((item) => item.kind === 'other').length },
  };
}

/** The streams a `streams` export moves: the list given, or for `'all'` every stream (by name, sorted) the group has rows of. */
function streamsToExport(streams: readonly string[] | 'all' | undefined, rows: ReadonlyMap<string, unknown>): readonly string[] {
  if (streams !== 'all') return streams ?? [];
  return [...new Set([...rows.keys()].flatMap((key) => {
    const name = parseShardKey(key)?.stream.streamName;
    return name === undefined ? [] : [name];
  }))].sort();
}

function checkInitialPosition(value: unknown): InitialPosition {
  if (value === undefined) return 'TRIM_HORIZON';
  if (value === 'TRIM_HORIZON' || value === 'LATEST') return value;
  if (typeof value === 'object' && value !== null && 'timestamp' in value && value.timestamp instanceof Date && Number.isFinite(value.timestamp.getTime())) {
    return { timestamp: value.timestamp };
  }
  throw new ConfigError('initialPosition', "must be 'TRIM_HORIZON', 'LATEST' or { timestamp: Date }");
}
