import type { SchedulerLike } from 'rxjs';
import type { Clock } from '../ports/clock.js';
import { LeaseLostError, describeError, rootCause } from '../errors/kinsumer-errors.js';
import type { KinsumerEvent, Logger } from '../types.js';
import { FailureRuns } from './failure-runs.js';
import { wholeMs } from './whole-ms.js';

/**
 * The log of one client's events: each event as {@link logEvent} logs it, and runs of transient
 * failures summed up (`failure-runs.ts`) rather than a warning per retried call.
 */
export class EventLog {
  readonly #failures: FailureRuns;

  constructor(private readonly logger: Logger, scheduler: SchedulerLike, clock: Clock, requestTimeoutMs: number) {
    this.#failures = new FailureRuns({ logger, scheduler, clock, attemptMs: requestTimeoutMs });
  }

  /** Logs `event`. */
  log(event: KinsumerEvent): void {
    logEvent(this.logger, event);
    if (event.type === 'retrying') this.#failures.failed(event);
  }

  /** The client stopped: its timers end. */
  close(): void {
    this.#failures.close();
  }
}

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
      logger.warn({ shardId: event.shardId, err: event.error }, event.error instanceof LeaseLostError && event.error.revoked
        ? 'kinsumer: lease revoked by a reset (kinsumer reset --force, resetCheckpoints or import-kcl): captured again, reading from the new checkpoint'
        : 'kinsumer: lease lost to another client');
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
        `kinsumer: gave up waiting for ${count(event.unacked, 'unacked record')} of ${event.shardId} after ${wholeMs(event.waitedMs)} ms: `
        + 'released without them, so the next owner gets them again (is every record acked?)');
      return;
    case 'start-failing': {
      const root = rootCause(event.error) ?? event.error;
      logger.warn({ attempts: event.attempts, giveUpInMs: event.giveUpInMs, err: event.error },
        `kinsumer: cannot start yet: ${count(event.attempts, 'attempt')} failed, the last with ${describeError(root)}; `
        + `still trying for ${wholeMs(event.giveUpInMs)} ms (startTimeoutMs), then StartTimeoutError`);
      return;
    }
    case 'rebalance':
      logger.info({ clients: event.clients, assigned: event.assigned, acquire: event.acquire, release: event.release, strategy: event.strategy }, 'kinsumer: assignment changed');
      return;
    case 'retrying':
      // Each one at debug: an outage retries every few hundred ms; its warnings are EventLog's.
      logger.debug({ operation: event.operation, attempt: event.attempt, delayMs: event.delayMs, shardId: event.shardId, err: event.error }, 'kinsumer: retrying after a transient error');
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
    case 'data-lost': {
      const { shardId, checkpoint, resumedAt, resumedArrivedAt, onDataLoss } = event;
      logger.error({ shardId, checkpoint, resumedAt, resumedArrivedAt, onDataLoss },
        `kinsumer: ${shardId}'s checkpoint lies behind the trim horizon (the stream no longer keeps its record): records after it that arrived before `
        + `${resumedArrivedAt.toISOString()} expired unread, if there were any; ${onDataLoss === 'continue' ? 'reading on from the oldest record kept' : 'the shard is stopped (onDataLoss: stop-shard), its checkpoint kept'}`);
      return;
    }
  }
}

type Waiting = Extract<KinsumerEvent, { type: 'waiting' }>;
type Draining = Extract<KinsumerEvent, { type: 'draining' }>;

// A hand-off is routine (info): a live holder gives the shards up at its next shard check, and a
// joining client waits for that on every healthy join. A wait that outlives that check is a
// warning of its own (logStillWaiting). A row of this very clientId is a restart after a crash.
function logWaiting(logger: Logger, event: Waiting): void {
  const { reason, shardIds, holders, boundMs, held } = event;
  const obj = { reason, shardIds, holders, boundMs, held };
  if (reason === 'own-client-row') {
    logger.warn(obj, `kinsumer: waiting about ${wholeMs(boundMs)} ms before reading ${shardList(shardIds)}: the clients table holds a row of this clientId `
      + `(${holders.join(', ')}) from another process, most likely one that ended without stop(); it expires then, unless it changes (another live process uses this clientId)`);
    return;
  }
  logger.info(obj, `kinsumer: waiting for ${shardList(shardIds)}, leased by ${holderList(holders)}: a live client hands them over at its next shard check; `
    + `one that ended without stop() keeps them until they expire, in ${wholeMs(boundMs)} ms (leaseTtlMs)`);
}

/** A wait for leases that outlived the holder's shard check: what {@link logStillWaiting} says. */
export interface StillWaiting {
  readonly shardIds: readonly string[];
  /** The holders, as the `waiting` event names them. */
  readonly holders: readonly string[];
  /** Since the first refused capture. */
  readonly waitedMs: number;
  /** Until the leases expire for this client, if their holder stopped. */
  readonly boundMs: number;
}

/** A wait for another client's leases that its shard check did not end: most likely a holder that ended without stop(). */
export function logStillWaiting(logger: Logger, wait: StillWaiting): void {
  const { shardIds, holders } = wait;
  const waitedMs = wholeMs(wait.waitedMs);
  const boundMs = wholeMs(wait.boundMs);
  logger.warn({ shardIds, holders, waitedMs, boundMs }, `kinsumer: still waiting for ${shardList(shardIds)} after ${waitedMs} ms, leased by ${holderList(holders)}, `
    + `which did not hand them over at its shard check: most likely it ended without stop(); they expire for this client in ${boundMs} ms (leaseTtlMs)`);
}

/** A client of the group that holds shards and stopped renewing its clients row. */
export interface SilentPeer {
  /** The client, as `waiting` events name holders. */
  readonly holder: string;
  readonly shardIds: readonly string[];
  /** How long this client has seen its row unchanged. */
  readonly silentMs: number;
  /** Until its row expires for this client. */
  readonly expiresInMs: number;
}

/**
 * A peer stopped renewing (a crash, a pause): what is waited for, and until when. A warning, so the
 * default logger breaks the silence of a crash: nothing is read on those shards until the expiry.
 */
export function logSilentPeer(logger: Logger, peer: SilentPeer): void {
  const { holder, shardIds } = peer;
  const silentMs = wholeMs(peer.silentMs);
  const expiresInMs = wholeMs(peer.expiresInMs);
  const its = shardIds.length === 1 ? `its shard ${shardIds[0] ?? ''} is taken over once its lease expires` : `its ${shardList(shardIds)} are taken over once their leases expire`;
  logger.warn({ holder, shardIds, silentMs, expiresInMs }, `kinsumer: ${holder} has not renewed its clients row for ${silentMs} ms: `
    + `if it ended without stop(), ${its}, in about ${expiresInMs} ms (leaseTtlMs)`);
}

function holderList(holders: readonly string[]): string {
  return holders.length === 0 ? 'another client' : holders.join(', ');
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
