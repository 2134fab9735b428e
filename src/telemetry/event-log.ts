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
    case 'error':
      logger.error({ shardId: event.shardId, err: event.error }, 'kinsumer: error');
      return;
  }
}
