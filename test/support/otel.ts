// OpenTelemetry's SDK set up for tests: a meter provider whose metrics are read on demand, a tracer
// provider whose spans are kept in memory.
import { type Attributes } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

/** A reader that collects only when asked (no timer: the tests run on virtual time). */
class OnDemandReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }

  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** One data point of a metric: its attributes and value. */
export interface Point {
  readonly attributes: Attributes;
  readonly value: number;
}

/** A meter provider and a way to read what was recorded on it. */
export interface TestMeter {
  readonly provider: MeterProvider;
  /** Collects now: every data point of each metric of scope `kinsumer`, by metric name. */
  collect(): Promise<Map<string, Point[]>>;
  /** The instrumentation scopes that recorded something, as a collection now names them. */
  scopes(): Promise<{ readonly name: string; readonly version: string | undefined }[]>;
}

export function testMeter(): TestMeter {
  const reader = new OnDemandReader();
  const provider = new MeterProvider({ readers: [reader] });
  return {
    provider,
    async collect() {
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length > 0) throw new Error(`metric collection failed: ${errors.map(String).join('; ')}`);
      const metrics = new Map<string, Point[]>();
      for (const scope of resourceMetrics.scopeMetrics) {
        if (scope.scope.name !== 'kinsumer') continue;
        for (const metric of scope.metrics) {
          const points = (metric.dataPoints as readonly { attributes: Attributes; value: unknown }[])
            .map((p) => ({ attributes: p.attributes, value: Number(p.value) }));
          metrics.set(metric.descriptor.name, points);
        }
      }
      return metrics;
    },
    async scopes() {
      const { resourceMetrics } = await reader.collect();
      return resourceMetrics.scopeMetrics.map(({ scope }) => ({ name: scope.name, version: scope.version }));
    },
  };
}

/** A tracer provider that keeps every finished span in `exporter`. */
export function testTracer(): { readonly provider: BasicTracerProvider; readonly exporter: InMemorySpanExporter } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { provider, exporter };
}

/** The value of the point whose attributes include `attributes` (`undefined`: none). */
export function valueOf(points: readonly Point[] | undefined, attributes: Attributes): number | undefined {
  return points?.find((p) => Object.entries(attributes).every(([key, value]) => p.attributes[key] === value))?.value;
}
