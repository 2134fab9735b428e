// Kinsumer clients on in-memory coordination and checkpoint stores: the real client code with only
// the AWS adapters replaced (as test/support/memory-group.ts does, on the real clock).
import { Kinsumer, type KinsumerSettings } from '../../src/index.js';
import type { StreamPort } from '../../src/ports/stream.js';
import type { LeaseStore } from '../../src/ports/lease-store.js';
import { MemoryCheckpointTable, MemoryCoordinationTables, MemoryLeaseStore, MemoryMembershipStore, MemoryMetadataStore } from '../../src/testing/index.js';

/** Shared in-memory tables of one consumer group. */
export class MemoryTables {
  readonly checkpoints = new MemoryCheckpointTable();
  readonly coordination = new MemoryCoordinationTables();
}

/**
 * A Kinsumer reading `stream`, its leases and checkpoints in `tables` (in memory, no latency).
 * `wrapStore` puts a seam around its lease store (a figure switching a feature off).
 */
export function memoryKinsumer(
  stream: StreamPort, tables: MemoryTables, options: Partial<KinsumerSettings> & { clientId: string },
  wrapStore: (store: LeaseStore) => LeaseStore = (store) => store,
): Kinsumer {
  const leaseTtlMs = options.leaseTtlMs ?? 15_000;
  const common = { clientId: options.clientId, leaseTtlMs, now: () => Date.now() };
  return new Kinsumer({
    streamName: stream.streamLabel,
    applicationName: 'bench',
    ...options,
    // Kinsumer checks that these look like SDK clients; the dependencies below replace every use.
    kinesis: { send: () => Promise.reject(new Error('unused')) } as never,
    dynamodb: { send: () => Promise.reject(new Error('unused')) } as never,
  }, () => ({
    store: wrapStore(new MemoryLeaseStore({ ...common, table: tables.checkpoints })),
    membership: new MemoryMembershipStore({ ...common, tables: tables.coordination }),
    metadata: new MemoryMetadataStore({ ...common, tables: tables.coordination }),
    stream,
    prepare: () => Promise.resolve(),
  }));
}
