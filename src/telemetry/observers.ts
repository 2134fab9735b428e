// What the application hands kinsumer to observe it: a logger and metrics callbacks (exported
// from the public face through types.ts), and the checks of the options that pass them.
import { ConfigError } from '../errors/kinsumer-errors.js';
import { stderrLogger } from './stderr-logger.js';

/**
 * A pino-compatible logger: kinsumer calls `logger.warn({ shardId, err }, 'message')`.
 * Record contents and credentials are never logged. Without one, warnings and errors go to stderr.
 */
export interface Logger {
  /** Routine detail: checkpoints committed. */
  debug(obj: object, msg?: string): void;
  /** Changes worth knowing: leases acquired and released, shards finished, leadership, rebalances, what a stop waits for. */
  info(obj: object, msg?: string): void;
  /**
   * Trouble kinsumer recovers from, or that needs a look: retries, lost leases, undecodable records,
   * stalled shards, a wait that keeps it from reading anything, a drain that gave up, a start that keeps failing.
   */
  warn(obj: object, msg?: string): void;
  /** Faults that stop a shard or the client. */
  error(obj: object, msg?: string): void;
}

/**
 * Metrics callbacks in the style of the Go kinsumer's StatReceiver. Every method is optional;
 * they run synchronously on kinsumer's path, so keep them cheap.
 */
export interface StatReceiver {
  /** A checkpoint was written (commit or release) with a position. */
  checkpoint?(): void;
  /** A record was emitted: when it entered the stream and when GetRecords returned it. */
  eventToClient?(inserted: Date, retrieved: Date): void;
  /** A GetRecords call returned `count` records; `millisBehindLatest` as reported by Kinesis. */
  eventsFromKinesis?(count: number, shardId: string, millisBehindLatest: number): void;
}

const defaultLogger: Logger = stderrLogger();

/** The `logger` option, checked; stderr (warnings and errors) when absent. */
export function resolveLogger(value: unknown): Logger {
  if (value === undefined) return defaultLogger;
  const methods = ['debug', 'info', 'warn', 'error'] as const;
  if (typeof value !== 'object' || value === null || methods.some((m) => typeof (value as Record<string, unknown>)[m] !== 'function')) {
    throw new ConfigError('logger', 'must have debug, info, warn and error methods (pino-compatible)');
  }
  return value as Logger;
}

/** The `stats` option, checked; none when absent. */
export function resolveStats(value: unknown): StatReceiver {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null) throw new ConfigError('stats', 'must be an object (a StatReceiver)');
  for (const m of ['checkpoint', 'eventToClient', 'eventsFromKinesis'] as const) {
    const fn: unknown = (value as Record<string, unknown>)[m];
    if (fn !== undefined && typeof fn !== 'function') throw new ConfigError('stats', `${m} must be a function`);
  }
  return value;
}

/** The `meterProvider` or `tracerProvider` option, checked. */
export function resolveProvider<P>(value: P | undefined, option: 'meterProvider' | 'tracerProvider', method: 'getMeter' | 'getTracer'): P | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || typeof (value as Record<string, unknown>)[method] !== 'function') {
    throw new ConfigError(option, `must be an OpenTelemetry ${option === 'meterProvider' ? 'MeterProvider' : 'TracerProvider'} (an object with ${method}())`);
  }
  return value;
}
