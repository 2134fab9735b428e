// The OpenTelemetry providers as kinsumer's options take them: described by the one method kinsumer
// calls, so kinsumer's types compile in a project without `@opentelemetry/api` (an optional peer).

/**
 * An OpenTelemetry `MeterProvider` (from `@opentelemetry/api` or an SDK), such as the SDK's
 * `MeterProvider` with a Prometheus or OTLP reader. Kinsumer gets its meter (scope `kinsumer`) from it.
 */
export interface MeterProviderLike {
  /** Returns the meter of instrumentation scope `name`. */
  getMeter(name: string, version?: string, options?: { readonly schemaUrl?: string }): unknown;
}

/**
 * An OpenTelemetry `TracerProvider` (from `@opentelemetry/api` or an SDK). The processing operators
 * get their tracer (scope `kinsumer`) from it.
 */
export interface TracerProviderLike {
  /** Returns the tracer of instrumentation scope `name`. */
  getTracer(name: string, version?: string, options?: { readonly schemaUrl?: string }): unknown;
}
