// What a client runs on: its stores and its stream, built by a backend (the AWS adapters in
// production, the in-memory stores of `kinsumer/testing` in tests).
import type { ResolvedOptions } from '../options.js';
import type { KinsumerEvent, KinsumerStatus } from '../types.js';
import type { MembershipStore, MetadataStore } from './coordination.js';
import type { LeaseStore } from './lease-store.js';
import type { StreamPort } from './stream.js';

/**
 * The stores and the stream one client runs on: the DynamoDB and Kinesis adapters in production,
 * the in-memory stores of `kinsumer/testing` in tests. What a {@link KinsumerBackend} builds.
 */
export interface KinsumerPorts {
  /** The checkpoints table: shard leases and their checkpoints. */
  readonly store: LeaseStore;
  /** The clients table: heartbeats and the live members of the group. */
  readonly membership: MembershipStore;
  /** The metadata table: the leader lock and the cached shard list. */
  readonly metadata: MetadataStore;
  /** The Kinesis stream the group reads. */
  readonly stream: StreamPort;
  /** Runs once before coordination starts: table and stream checks (or creation). */
  readonly prepare: () => Promise<void>;
  /** Jitter source for retry backoff. Default `Math.random`. */
  readonly random?: () => number;
  /** What `status().connections` shows (the AWS adapters' connections). Default: none. */
  readonly connections?: () => KinsumerStatus['connections'];
  /** Called once the client stopped: closes what the ports keep open (kept-alive connections). */
  readonly close?: () => void;
}

/**
 * The second argument of `new Kinsumer(options, backend)`: builds the {@link KinsumerPorts} a client
 * runs on, in place of the AWS adapters, once the options are resolved (at the first subscribe).
 * Tests pass one that returns `MemoryStream`, `MemoryLeaseStore`, `MemoryMembershipStore` and
 * `MemoryMetadataStore` instances, to run a whole consumer group on virtual time.
 *
 * @param options - The client's resolved options (its id, TTLs, scheduler).
 * @param emit - Reports an event on `Kinsumer.events$` (and to the logger).
 */
export type KinsumerBackend = (options: ResolvedOptions, emit: (event: KinsumerEvent) => void) => KinsumerPorts;
