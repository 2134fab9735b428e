import { resolveOptions, type KinsumerOptions, type ResolvedOptions } from './options.js';

/**
 * One member of a consumer group reading one Kinesis stream. Shards are leased through DynamoDB;
 * records flow through {@link Kinsumer.records$}; the application acks each record.
 */
export class Kinsumer {
  /** The options with defaults filled in. */
  readonly options: ResolvedOptions;

  /**
   * Checks every option synchronously and throws `ConfigError` naming the first one at fault.
   * Does no I/O: nothing happens until something subscribes.
   */
  constructor(options: KinsumerOptions) {
    this.options = resolveOptions(options);
  }
}
