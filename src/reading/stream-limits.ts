// What the client says of its stream in `status()` (design §9.1): its largest record (and retention),
// asked once when the client starts, with DescribeStreamSummary where the stream port offers it.
import { type SchedulerLike, type Subscription, defer } from 'rxjs';
import { retryTransient } from '../errors/retry-backoff.js';
import type { StreamLimits, StreamPort } from '../ports/stream.js';
import type { KinsumerEvent, Logger } from '../types.js';

/** Where {@link describeStream} reports. */
export interface DescribeStreamOptions {
  readonly scheduler: SchedulerLike;
  /** Receives the `retrying` events of transient failures. */
  readonly emit: (event: KinsumerEvent) => void;
  readonly logger: Logger;
  /** Called once, with the answer. */
  readonly described: (limits: StreamLimits) => void;
}

/**
 * Asks the stream for its summary, retrying transient failures; other failures (most often a policy
 * without `kinesis:DescribeStreamSummary`) are logged at info and leave the figures unknown: reading
 * does not need them. Unsubscribe to give up (the client stopped). `undefined`: the port has no summary.
 */
export function describeStream(stream: StreamPort, options: DescribeStreamOptions): Subscription | undefined {
  if (stream.describeSummary === undefined) return undefined;
  const { scheduler, emit, logger, described } = options;
  return defer(() => (stream.describeSummary as () => ReturnType<NonNullable<StreamPort['describeSummary']>>).call(stream)).pipe(
    retryTransient({ operation: 'DescribeStreamSummary', scheduler, emit }),
  ).subscribe({
    next: described,
    error: (error: unknown) => logger.info({ err: error }, 'kinsumer: DescribeStreamSummary failed: status() does not show maxRecordSizeKiB (grant kinesis:DescribeStreamSummary to see it)'),
  });
}
