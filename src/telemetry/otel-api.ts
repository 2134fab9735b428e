// The OpenTelemetry API, loaded only when the application installed it (an optional peer
// dependency). Without it, kinsumer records nothing and builds no telemetry object: every hook
// checks for this module once and goes on. Loaded synchronously (require through createRequire),
// so a Kinsumer needs no async step to learn whether it can record.
import { createRequire } from 'node:module';
import type * as OtelApi from '@opentelemetry/api';

/** The `@opentelemetry/api` module, as kinsumer uses it. */
export type OtelApiModule = typeof OtelApi;

/** What loads the API: returns the module, or `undefined` when it cannot be resolved. */
export type OtelLoader = () => OtelApiModule | undefined;

const requireFromHere = createRequire(import.meta.url);

/** The production loader: `require('@opentelemetry/api')`, `undefined` when it is not installed. */
const defaultLoader: OtelLoader = () => {
  try {
    return requireFromHere('@opentelemetry/api') as OtelApiModule;
  } catch {
    return undefined;
  }
};

let loader: OtelLoader = defaultLoader;
let loaded: { readonly api: OtelApiModule | undefined } | undefined;

/** The OpenTelemetry API if the application installed it; looked up once per process. */
export function otelApi(): OtelApiModule | undefined {
  loaded ??= { api: loader() };
  return loaded.api;
}

/**
 * Replaces the loader (tests make the module unresolvable with `() => undefined`) and forgets
 * what was loaded. Returns a function that puts the previous loader back.
 */
export function useOtelLoader(replacement: OtelLoader): () => void {
  const previous = loader;
  loader = replacement;
  loaded = undefined;
  return () => {
    loader = previous;
    loaded = undefined;
  };
}
