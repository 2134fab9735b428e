// One span per handler call of processRecords / processBatches, after OpenTelemetry's messaging
// conventions: `process <stream>`, kind CONSUMER, `messaging.system` = `aws_kinesis`. The handler
// runs with the span active, so the spans it starts are its children; a handler that throws,
// rejects or errors ends its span with status ERROR and the exception recorded.
import { packageVersion } from './package-version.js';
import type { Attributes, Tracer, TracerProvider } from '@opentelemetry/api';
import { type Observable, defer, finalize, tap } from 'rxjs';
import type { KinsumerRecord } from '../types.js';
import { leaseTracingOf } from './lease-link.js';
import { ATTRIBUTE, SCOPE } from './names.js';
import type { OtelApiModule } from './otel-api.js';
import type { TracerProviderLike } from './providers.js';

const tracers = new WeakMap<TracerProviderLike, Tracer>();

/**
 * `settle(call)` inside a span: opened when subscribed, ended when the call settles (or is
 * abandoned: unsubscribed when its lease ended).
 */
export function tracedCall$<R>(
  api: OtelApiModule, records: readonly KinsumerRecord[], attempt: number, call: () => R, settle: (call: () => R) => Observable<unknown>,
): Observable<unknown> {
  return defer(() => {
    const link = leaseTracingOf(records[0]);
    const tracer = tracerOf(link?.tracerProvider ?? api.trace.getTracerProvider());
    const stream = link?.stream;
    const span = tracer.startSpan(stream === undefined ? 'process' : `process ${stream}`, {
      kind: api.SpanKind.CONSUMER,
      attributes: spanAttributes(records, attempt, stream),
    });
    const active = api.trace.setSpan(api.context.active(), span);
    return settle(() => api.context.with(active, call)).pipe(
      tap({
        error: (error: unknown) => {
          span.recordException(error instanceof Error ? error : String(error));
          span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        },
      }),
      finalize(() => span.end()),
    );
  });
}

function tracerOf(provider: TracerProviderLike): Tracer {
  let tracer = tracers.get(provider);
  if (tracer === undefined) {
    tracer = (provider as TracerProvider).getTracer(SCOPE, packageVersion());
    tracers.set(provider, tracer);
  }
  return tracer;
}

/** The messaging attributes a Kinesis handler call can fill, and kinsumer's own. */
function spanAttributes(records: readonly KinsumerRecord[], attempt: number, stream: string | undefined): Attributes {
  const first = records[0];
  const attributes: Attributes = {
    'messaging.system': 'aws_kinesis',
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    [ATTRIBUTE.attempt]: attempt,
  };
  if (stream !== undefined) {
    attributes['messaging.destination.name'] = stream;
    attributes[ATTRIBUTE.stream] = stream;
  }
  if (first !== undefined) {
    attributes['messaging.destination.partition.id'] = first.shardId;
    attributes[ATTRIBUTE.shardId] = first.shardId;
  }
  // The conventions: a message id for one message, a count (and no id) for a batch.
  if (records.length === 1 && first !== undefined) attributes['messaging.message.id'] = first.sequenceNumber;
  else attributes['messaging.batch.message_count'] = records.length;
  return attributes;
}
