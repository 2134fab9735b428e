// lifion-kinesis, the peer library the benches compare against: it ships no types, so the part of
// its API the benches use is declared once here.
import { createRequire } from 'node:module';

/** A record as lifion-kinesis hands it over. */
export interface LifionRecord {
  readonly data?: Uint8Array;
  readonly sequenceNumber?: string;
}

/** A lifion-kinesis consumer. */
export interface LifionConsumer {
  on(event: 'data', listener: (chunk: { records: LifionRecord[] }) => void): void;
  on(event: 'error', listener: (error: unknown) => void): void;
  startConsumer(): Promise<void>;
  stopConsumer(): void;
}

type LifionConstructor = new (options: Record<string, unknown>) => LifionConsumer;

/** A lifion-kinesis consumer built with `options` (a CommonJS module, loaded on demand). */
export function lifionConsumer(options: Record<string, unknown>): LifionConsumer {
  const Lifion = createRequire(import.meta.url)('lifion-kinesis') as LifionConstructor;
  return new Lifion(options);
}
