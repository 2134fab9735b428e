import { describeError, rootCause } from '../errors/kinsumer-errors.js';
import type { KinsumerEvent, Logger } from '../types.js';

/**
 * Logs an event at the level an operator expects. Only ids, positions and error messages are
 * logged: never record contents, never credentials (errors from the SDK carry neither).
 */
export function logEvent(logger: Logger, event: KinsumerEvent): void {
  switch (event.type) {
    case 'lease-acquired':
      logger.info({ shardId: event.shardId, fencingToken: event.fencingToken }, 'kinsumer: lease acquired');
      return;
    case 'lease-released':
      logger.info({ shardId: event.shardId, checkpoint: event.checkpoint, finished: event.finished }, 'kinsumer: lease released');
      return;
    case 'lease-lost':
      logger.warn({ shardId: event.shardId, err: event.error }, 'kinsumer: lease lost to another client');
      return;
    case 'shard-finished':
      logger.info({ shardId: event.shardId, childShardIds: event.childShardIds }, 'kinsumer: shard finished');
      return;
    case 'checkpoint':
      logger.debug({ shardId: event.shardId, checkpoint: event.checkpoint, finished: event.finished }, 'kinsumer: checkpoint committed');
      return;
    case 'leader-acquired':
    case 'leader-lost':
      logger.info({ clientId: event.clientId }, `kinsumer: ${event.type === 'leader-acquired' ? 'became' : 'is no longer'} leader`);
      return;
    case 'duplicate-client':
      logger.warn({ clientId: event.clientId }, 'kinsumer: another live process uses this clientId; waiting for it to stop');
      return;
    case 'waiting':
      logWaiting(logger, event);
      return;
    case 'draining':
      logDraining(logger, event);
      return;
    case 'drain-gave-up':
      logger.warn({ shardId: event.shardId, unacked: event.unacked, waitedMs: event.waitedMs },
        `kinsumer: gave up waiting for ${count(event.unacked, 'unacked record')} of ${event.shardId} after ${event.waitedMs} ms: `
        + 'released without them, so the next owner gets them again (is every record acked?)');
      return;
    case 'start-failing': {
      const root = rootCause(event.error) ?? event.error;
      logger.warn({ attempts: event.attempts, giveUpInMs: event.giveUpInMs, err: event.error },
        `kinsumer: cannot start yet: ${count(event.attempts, 'attempt')} failed, the last with ${describeError(root)}; `
        + `still trying for ${event.giveUpInMs} ms (startTimeoutMs), then StartTimeoutError`);
      return;
    }
    case 'rebalance':
      logger.info({ clients: event.clients, assigned: event.assigned, acquire: event.acquire, release: event.release, strategy: event.strategy }, 'kinsumer: assignment changed');
      return;
    case 'retrying':
      logger.warn({ operation: event.operation, attempt: event.attempt, delayMs: event.delayMs, shardId: event.shardId, err: event.error }, 'kinsumer: retrying after a transient error');
      return;
    case 'shard-stalled':
      logger.warn({ shardId: event.shardId, oldest: event.oldest, pending: event.pending, sinceMs: event.sinceMs }, 'kinsumer: shard stalled: a record was not acked, its checkpoint does not move');
      return;
    case 'record-undecodable':
      logger.warn({ shardId: event.shardId, sequenceNumber: event.sequenceNumber, err: event.error }, 'kinsumer: KPL aggregate could not be decoded; delivered as the raw record');
      return;
    case 'warning':
      logger.warn({ code: event.code, service: event.service }, `kinsumer: ${event.message}`);
      return;
    case 'error':
      logger.error({ shardId: event.shardId, err: event.error }, 'kinsumer: error');
      return;
  }
}

type Waiting = Extract<KinsumerEvent, { type: 'waiting' }>;
type Draining = Extract<KinsumerEvent, { type: 'draining' }>;

// A wait that keeps this client from reading anything at all is a warning (a start that looks
// hung); a hand-off while it reads other shards is routine.
function logWaiting(logger: Logger, event: Waiting): void {
  const { reason, shardIds, holders, boundMs, held } = event;
  const obj = { reason, shardIds, holders, boundMs, held };
  if (reason === 'own-client-row') {
    logger.warn(obj, `kinsumer: waiting about ${boundMs} ms before reading ${shardList(shardIds)}: the clients table holds a row of this clientId `
      + `(${holders.join(', ')}) from another process, most likely one that ended without stop(); it expires then, unless it changes (another live process uses this clientId)`);
    return;
  }
  const by = holders.length === 0 ? 'another client' : holders.join(', ');
  const msg = `kinsumer: waiting for ${shardList(shardIds)}, leased by ${by}: a live client hands them over at its next shard check; `
    + `one that ended without stop() keeps them until they expire, in ${boundMs} ms (leaseTtlMs)`;
  if (held === 0) logger.warn(obj, msg);
  else logger.info(obj, msg);
}

function logDraining(logger: Logger, event: Draining): void {
  const { shardIds: shards, unacked, boundMs, quietMs } = event;
  const leases = count(shards.length, 'lease');
  const waiting = Object.values(unacked).reduce((sum, n) => sum + n, 0);
  if (waiting === 0) {
    logger.info({ shards }, `kinsumer: stopping: final commits and releases of ${leases}`);
    return;
  }
  const records = count(waiting, 'unacked record');
  if (boundMs <= 0) {
    logger.info({ shards, unacked }, `kinsumer: stopping after a fatal error: not waiting for ${records} (they go to the next owner); final commits and releases of ${leases}`);
    return;
  }
  if (quietMs !== undefined) {
    logger.info({ shards, unacked, drainBoundMs: boundMs, quietMs }, `kinsumer: stopping with nobody subscribed (the pipeline ended, perhaps by an error): waiting for ${records} `
      + `only while acks keep coming (${quietMs} ms without one, ${boundMs} ms in all), then final commits and releases of ${leases}`);
    return;
  }
  logger.info({ shards, unacked, drainBoundMs: boundMs }, `kinsumer: stopping: waiting up to ${boundMs} ms for ${records} to be acked, then final commits and releases of ${leases}`);
}

/** `1 lease`, `2 leases`. */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** `shardId-0` or `2 shards (shardId-0, shardId-1)`; long lists cut (the object has them all). */
function shardList(shardIds: readonly string[]): string {
  if (shardIds.length === 0) return 'its shards';
  if (shardIds.length === 1) return shardIds[0] ?? '';
  const shown = shardIds.length > 4 ? [...shardIds.slice(0, 3), `and ${shardIds.length - 3} more`] : shardIds;
  return `${shardIds.length} shards (${shown.join(', ')})`;
}
