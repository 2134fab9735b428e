// What the invariant checker remembers about a simulated group: the records put (user records:
// a KPL aggregate counts once per sub-record), the leases captured, the sessions of deliveries, and
// the invariants' names. Plain data; the rules live in checker.ts and handler-rules.ts.
import type { StartKind } from './schedule.js';

/** The names of the invariants, as failures report them. */
export const INVARIANTS = {
  'lost-record': 'every record the group must read is acked by some client once the schedule calms',
  'order': "a lease's records are delivered in sequence order",
  'first-delivery-order': "a shard's first deliveries (by the current lease holder) are in sequence order",
  'parents-first': "no record of a child shard is delivered before every parent is finished",
  'graceful-redelivery': 'after a graceful hand-off nothing acked before the release is delivered again',
  'committed-redelivery': 'no lease holder delivers a record under a checkpoint already committed',
  'zombie-emission': 'a fenced owner delivers nothing once its lease is unconfirmed for two renewal intervals',
  'backlog-bound': "a lease's records emitted and not under its watermark stay within maxInFlightRecords",
  'fenced-write': 'no write is accepted from an owner fenced by a later capture or a reset',
  'live-lease-taken': 'no lease is taken from a live owner (renewed within the TTL on the true clock, not frozen)',
  'twin-emission': 'once another process of its clientId took its place, a process delivers only within two renewal intervals of its last heartbeat accepted before that',
  'drain-took': 'a draining member captures nothing (no capture it asked for after it began to drain is accepted)',
  'crash-failover': 'once calm, the shards of a member that crashes are captured by another within the failover bound of its last heartbeat',
  'unowned-shard': 'once the schedule calms, every readable shard has a live owner again within the bound',
  'unbalanced': 'once the schedule calms, every running client holds its share of the readable shards (counts differ by at most one)',
  'library-error': 'the library throws nothing unexpected (no uncaught error, no unhandled rejection)',
  'read-stall': 'once the schedule calms, a readable shard with records owed and not acked gets an ack at least every two ownership bounds',
  'before-start': "no record that arrived more than the start bound before the group's start on its shard (or before a reset) is delivered after it",
  'retained-memory': 'after a garbage collection, a process keeps at most 2 × maxInFlightRecords of the records it was delivered per shard reachable',
  'key-order': "under processRecords' 'shard' and 'partitionKey' orderings (and per shard for processBatches), a lease's first handler calls per key come in sequence order, one key's calls one at a time",
  'settled-rehandled': 'a record the operator settled (acked) before a graceful release is not handed to a handler again by a later lease',
  'poison-bound': 'a poison record (its handler kills the process) is handed to such handlers at most maxDeliveries times (each delivery is recorded in the row before its handler call), then goes to onFailure, acked (a reset of its shard starts the count again); with effects its dead letter is its writes, which effects-once checks',
  'effects-once': "with effects, every record's writes are applied exactly once if its shard's checkpoint covers it, never otherwise (a reset of its shard replays them once more)",
} as const;

export type InvariantName = keyof typeof INVARIANTS;

/** One broken rule. */
export interface Violation {
  readonly invariant: InvariantName;
  /** Virtual time, milliseconds since the run started. */
  readonly atMs: number;
  readonly message: string;
}

/** What the checker needs to know about a process (one Kinsumer instance). */
export interface ProcessView {
  /** `c3#2`: the second process of client id c3. */
  readonly label: string;
  readonly clientId: string;
  /** How far its wall clock is off the true one (at the start; steps come on top). */
  readonly skewMs: number;
  /** `running` and `stopping` processes are alive; `frozen` and `crashed` ones run nothing. */
  status(): 'running' | 'stopping' | 'frozen' | 'crashed' | 'stopped';
}

/** The group's settings the rules depend on. */
export interface CheckerSettings {
  readonly startMs: number;
  readonly leaseTtlMs: number;
  /** The checkpointer renews every leaseTtlMs / 3; a lease unconfirmed for two of these emits nothing. */
  readonly renewIntervalMs: number;
  readonly maxInFlightRecords: number;
  readonly start: StartKind;
  readonly startTimestampMs: number;
  /** Once calm, how long a readable shard may stay without a live owner. */
  readonly ownershipBoundMs: number;
  /** How much older than a start (design §8.3) a delivered record may be: {@link START_BOUND_MS}. */
  readonly startBoundMs: number;
  /** Once calm, how long after a crashed member's last heartbeat's send its shards may stay without another owner (crash-failover). */
  readonly failoverBoundMs?: number;
}

/**
 * Design §8.3: after any number of hand-offs, no record that arrived more than this before the
 * group's start on a shard (the moment Kinesis answered its first LATEST iterator) or before a
 * reset (the moment its write was accepted; a timestamp's own time) is delivered. The README
 * states the library's bound; this is it.
 */
export const START_BOUND_MS = 2000;

/** Checkpoints as the checker needs them: a position's sequence number (and sub-record), or a start. */
export type ObservedCheckpoint =
  | { readonly type: 'position'; readonly sequence: bigint; readonly sub?: number }
  | { readonly type: 'LATEST' | 'TRIM_HORIZON' }
  | { readonly type: 'AT_TIMESTAMP'; readonly timestampMs: number }
  | undefined;

/** Room for the sub-records of one aggregate in a record's place (`ord`). */
const SUB_SLOTS = 1n << 20n;

/**
 * A user record's place in its shard as one number: its sequence number, then its sub-record. A
 * plain record is sub-record 0; a checkpoint without a sub-record covers the whole aggregate.
 */
export function ordOf(sequence: bigint, sub: number | undefined): bigint {
  return sequence * SUB_SLOTS + BigInt(sub ?? 0);
}

/** The place a checkpoint covers up to, inclusive. */
export function checkpointOrd(checkpoint: { readonly sequence: bigint; readonly sub?: number }): bigint {
  return checkpoint.sub === undefined ? checkpoint.sequence * SUB_SLOTS + SUB_SLOTS - 1n : ordOf(checkpoint.sequence, checkpoint.sub);
}

/** The checker's key of a user record. */
export function recordKey(seq: string, sub: number | undefined): string {
  return sub === undefined ? seq : `${seq}/${sub}`;
}

export interface RecordState {
  readonly seq: string;
  readonly sub: number | undefined;
  readonly ord: bigint;
  readonly shardId: string;
  /** The index of its Kinesis record in the shard (sub-records of one aggregate share it). */
  readonly index: number;
  readonly arrivalMs: number;
  delivered: boolean;
  acked: boolean;
  ackedAtMs: number;
  ackedBy: Session | undefined;
  /** The operator settled it (emitted it, acked) in this session, at this time. */
  settledBy: Session | undefined;
  settledAtMs: number;
}

export interface Token {
  readonly shardId: string;
  readonly counter: number;
  readonly process: ProcessView;
  /** The life it was captured in (its owner's heartbeats confirm it); `undefined` without lives. */
  readonly incarnation: number | undefined;
  /** When a later capture or a reset fenced it. */
  fencedAtMs: number | undefined;
  readonly capturedAtMs: number;
  lastWriteAtMs: number;
  releasedAtMs: number | undefined;
  /** When the accepted release was built: acks after this could not be in it. */
  releaseSnapshotAtMs: number | undefined;
  session: Session | undefined;
}

/** One lease as one process holds it: from its capture to its end. */
export interface Session {
  readonly process: ProcessView;
  readonly shardId: string;
  readonly token: Token | undefined;
  readonly openedAtMs: number;
  lastOrd: bigint | undefined;
  /** Delivered records not yet under this lease's watermark, oldest first. */
  readonly outstanding: Delivery[];
  outstandingHead: number;
}

/** A delivered record, handed back when the handler acks it. */
export interface Delivery {
  readonly session: Session;
  readonly record: RecordState | undefined;
  acked: boolean;
  /**
   * The application's handler holds the record now (a direct handler until it acks, an operator's
   * handler during a call): what it keeps is the application's, not the library's (retained-memory).
   */
  heldByHandler: boolean;
}

export type Requirement =
  | { readonly kind: 'all' }
  | { readonly kind: 'from-index'; readonly index: number }
  | { readonly kind: 'from-time'; readonly timeMs: number }
  | { readonly kind: 'from-first-read'; captureIndex: number | undefined };

export interface ShardState {
  readonly shardId: string;
  readonly parents: readonly string[];
  readonly records: RecordState[];
  /** Kinesis records put (an aggregate counts once). */
  rawCount: number;
  finished: boolean;
  /** The token every accepted write must carry; `undefined` after a reset until the next capture. */
  current: Token | undefined;
  /** The highest place committed since the last reset (see `checkpointOrd`). */
  highestCommitted: bigint | undefined;
  lastFirstDelivery: bigint | undefined;
  requirement: Requirement;
  /**
   * No record that arrived before this is delivered by a lease of the current start (a LATEST
   * group's first iterator, a reset's acceptance or timestamp), less the start bound.
   */
  floorMs: number;
  /** What set the floor, for the message. */
  floorWhy: string;
  /** Once calm: since when the shard has been readable without a live owner. */
  unownedSinceMs: number | undefined;
  ownershipReported: boolean;
  /** The last ack of one of its records (read-stall). */
  lastAckAtMs: number;
  /** When its last parent's row was marked finished (the start, for a shard without parents): read-stall counts from there. */
  readableSinceMs: number;
  stallReported: boolean;
  /** Some client captured it: from then on it has a row of its own (see `Checker.#passStartDown`). */
  everCaptured: boolean;
}

/** Counters for the report: what the run exercised. */
export interface CheckerStats {
  deliveries: number;
  duplicates: number;
  acks: number;
  captures: number;
  writes: number;
  resets: number;
  /** Deliveries of sub-records of KPL aggregates. */
  subRecordDeliveries: number;
  handlerCalls: number;
  memoryChecks: number;
  /** The most records one process kept reachable for one shard after a collection, in percent of the bound. */
  peakRetainedPercent: number;
}

/** A sequence number shortened for humans: its last digits identify it within a run. */
export function short(seq: string, sub?: number): string {
  return `…${seq.slice(-8)}${sub === undefined ? '' : `/${sub}`}`;
}
