// The invariants of design.md §7.6, checked as the simulated group runs. The checker sees what an
// outside observer can see, nothing of the library's inner state: every record put (the stream),
// every write the tables accepted with its writer and lease counter (the port wrappers), every
// operator reset, every record delivered and acked (the handlers), and which processes are alive
// on the true clock. Each rule is evaluated when the observation that can break it arrives.
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
  'duplicate-client-capture': 'a second process with the same clientId takes no lease from the live first one',
  'unowned-shard': 'once the schedule calms, every readable shard has a live owner again within the bound',
  'unbalanced': 'once the schedule calms, every running client holds its share of the readable shards (counts differ by at most one)',
  'library-error': 'the library throws nothing unexpected (no uncaught error, no unhandled rejection)',
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
  /** How far its wall clock is off the true one. */
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
}

/** Checkpoints as the checker needs them: a position's sequence number, or a start. */
export type ObservedCheckpoint =
  | { readonly type: 'position'; readonly sequence: bigint }
  | { readonly type: 'LATEST' | 'TRIM_HORIZON' }
  | { readonly type: 'AT_TIMESTAMP'; readonly timestampMs: number }
  | undefined;

interface RecordState {
  readonly seq: string;
  readonly sequence: bigint;
  readonly shardId: string;
  readonly index: number;
  readonly arrivalMs: number;
  delivered: boolean;
  acked: boolean;
  ackedAtMs: number;
  ackedBy: Session | undefined;
}

interface Token {
  readonly shardId: string;
  readonly counter: number;
  readonly process: ProcessView;
  readonly capturedAtMs: number;
  lastWriteAtMs: number;
  releasedAtMs: number | undefined;
  /** When the accepted release was built: acks after this could not be in it. */
  releaseSnapshotAtMs: number | undefined;
  session: Session | undefined;
}

/** One lease as one process holds it: from its capture to its end. */
interface Session {
  readonly process: ProcessView;
  readonly shardId: string;
  readonly token: Token | undefined;
  readonly openedAtMs: number;
  lastSequence: bigint | undefined;
  /** Delivered records not yet under this lease's watermark, oldest first. */
  readonly outstanding: Delivery[];
  outstandingHead: number;
}

/** A delivered record, handed back when the handler acks it. */
export interface Delivery {
  readonly session: Session;
  readonly record: RecordState | undefined;
  acked: boolean;
}

type Requirement =
  | { readonly kind: 'all' }
  | { readonly kind: 'from-index'; readonly index: number }
  | { readonly kind: 'from-time'; readonly timeMs: number }
  | { readonly kind: 'from-first-read'; captureIndex: number | undefined };

interface ShardState {
  readonly shardId: string;
  readonly parents: readonly string[];
  readonly records: RecordState[];
  finished: boolean;
  /** The token every accepted write must carry; `undefined` after a reset until the next capture. */
  current: Token | undefined;
  /** The highest position committed since the last reset. */
  highestCommitted: bigint | undefined;
  lastFirstDelivery: bigint | undefined;
  requirement: Requirement;
  /** Once calm: since when the shard has been readable without a live owner. */
  unownedSinceMs: number | undefined;
  ownershipReported: boolean;
}

/** Counters for the report: what the run exercised. */
export interface CheckerStats {
  deliveries: number;
  duplicates: number;
  acks: number;
  captures: number;
  writes: number;
  resets: number;
}

/** The invariants of §7.6 over one simulated group. */
export class InvariantChecker {
  readonly violations: Violation[] = [];
  /** Rule evaluations so far. */
  checks = 0;
  readonly stats: CheckerStats = { deliveries: 0, duplicates: 0, acks: 0, captures: 0, writes: 0, resets: 0 };
  readonly #shards = new Map<string, ShardState>();
  readonly #records = new Map<string, RecordState>();
  readonly #sessions = new Map<ProcessView, Map<string, Session>>();
  readonly #tokens = new Map<string, Token>();
  /** Every violation found, by invariant (the list keeps the first few of each). */
  readonly counts = new Map<InvariantName, number>();
  #calmSinceMs: number | undefined;

  constructor(private readonly settings: CheckerSettings) {}

  // ------------------------------------------------------------------ the stream

  shardCreated(shardId: string, parents: readonly string[]): void {
    const { start, startTimestampMs } = this.settings;
    // Children of a LATEST group start at LATEST too (they have no checkpoint): what counts is their first read.
    const requirement: Requirement = start === 'TRIM_HORIZON' ? { kind: 'all' }
      : start === 'AT_TIMESTAMP' ? { kind: 'from-time', timeMs: startTimestampMs } : { kind: 'from-first-read', captureIndex: undefined };
    this.#shards.set(shardId, {
      shardId, parents, records: [], finished: false, current: undefined, highestCommitted: undefined,
      lastFirstDelivery: undefined, requirement, unownedSinceMs: undefined, ownershipReported: false,
    });
  }

  recordPut(shardId: string, seq: string, arrivalMs: number): void {
    const shard = this.#shard(shardId);
    const record: RecordState = {
      seq, sequence: BigInt(seq), shardId, index: shard.records.length, arrivalMs,
      delivered: false, acked: false, ackedAtMs: 0, ackedBy: undefined,
    };
    shard.records.push(record);
    this.#records.set(seq, record);
  }

  /** A GetShardIterator answer reached a client: a shard waiting for its first read starts here. */
  iteratorIssued(shardId: string, recordsInShard: number): void {
    const shard = this.#shard(shardId);
    if (shard.requirement.kind === 'from-first-read') shard.requirement = { kind: 'from-index', index: recordsInShard };
  }

  // ------------------------------------------------------------------ the checkpoints table

  /** The table accepted a capture: `process` now holds the shard with `counter`. */
  captured(process: ProcessView, shardId: string, counter: number, atMs: number): void {
    const shard = this.#shard(shardId);
    this.stats.captures += 1;
    const previous = shard.current;
    if (previous !== undefined && previous.process !== process) {
      this.checks += 1;
      if (this.#live(previous, atMs)) {
        const same = previous.process.clientId === process.clientId;
        this.#fail(same ? 'duplicate-client-capture' : 'live-lease-taken', atMs,
          `${process.label} captured ${shardId} (counter ${counter}) from ${previous.process.label}, which renewed it ${atMs - previous.lastWriteAtMs} ms earlier `
          + `(TTL ${this.settings.leaseTtlMs} ms) and is ${previous.process.status()}${skewText(process, previous.process)}`);
      }
    }
    if (shard.requirement.kind === 'from-first-read') shard.requirement.captureIndex ??= shard.records.length;
    const token: Token = { shardId, counter, process, capturedAtMs: atMs, lastWriteAtMs: atMs, releasedAtMs: undefined, releaseSnapshotAtMs: undefined, session: undefined };
    this.#tokens.set(`${shardId}#${counter}`, token);
    shard.current = token;
  }

  /** The table accepted a commit, renewal or release written under `counter` by `process`. */
  wrote(
    process: ProcessView, shardId: string, operation: 'commit' | 'renew' | 'release', counter: number,
    checkpoint: ObservedCheckpoint, finished: boolean, atMs: number, calledAtMs = atMs,
  ): void {
    const shard = this.#shard(shardId);
    const token = this.#tokens.get(`${shardId}#${counter}`);
    this.stats.writes += 1;
    this.checks += 1;
    if (token === undefined || shard.current !== token) {
      const why = token === undefined ? 'a lease it never captured' : shard.current === undefined ? 'a lease fenced by a reset' : `a lease fenced by counter ${shard.current.counter} (${shard.current.process.label})`;
      this.#fail('fenced-write', atMs, `the table accepted ${process.label}'s ${operation} of ${shardId} under counter ${counter}: ${why}`);
    }
    if (token !== undefined) {
      token.lastWriteAtMs = atMs;
      if (operation === 'release') {
        token.releasedAtMs = atMs;
        token.releaseSnapshotAtMs = calledAtMs;
      }
    }
    if (checkpoint?.type === 'position' && (shard.highestCommitted === undefined || checkpoint.sequence > shard.highestCommitted)) {
      shard.highestCommitted = checkpoint.sequence;
    }
    if (finished) shard.finished = true;
  }

  /** The operator's reset was accepted: every earlier lease of the shard is fenced from now on. */
  reset(shardId: string, to: ObservedCheckpoint, rowFinished: boolean): void {
    const shard = this.#shard(shardId);
    this.stats.resets += 1;
    shard.current = undefined;
    shard.highestCommitted = undefined;
    shard.lastFirstDelivery = undefined;
    // A finished shard stays finished and is not read again: nothing re-opens.
    if (rowFinished || to === undefined) return;
    if (to.type === 'LATEST') {
      shard.requirement = { kind: 'from-first-read', captureIndex: undefined };
      return;
    }
    const fromMs = to.type === 'AT_TIMESTAMP' ? to.timestampMs : to.type === 'TRIM_HORIZON' ? Number.NEGATIVE_INFINITY : undefined;
    if (fromMs === undefined) return;
    shard.requirement = to.type === 'TRIM_HORIZON' ? { kind: 'all' } : { kind: 'from-time', timeMs: fromMs };
    for (const record of shard.records) {
      if (record.arrivalMs < fromMs) continue;
      record.delivered = false;
      record.acked = false;
      record.ackedBy = undefined;
    }
  }

  // ------------------------------------------------------------------ the clients

  /** `lease-acquired` on a process's events$: its records for the shard belong to this lease from now on. */
  sessionOpened(process: ProcessView, shardId: string, counter: number, atMs: number): void {
    const token = this.#tokens.get(`${shardId}#${counter}`);
    const session: Session = { process, shardId, token, openedAtMs: atMs, lastSequence: undefined, outstanding: [], outstandingHead: 0 };
    if (token !== undefined) token.session = session;
    let byShard = this.#sessions.get(process);
    if (byShard === undefined) {
      byShard = new Map();
      this.#sessions.set(process, byShard);
    }
    byShard.set(shardId, session);
  }

  /** A record reached the handler of `process`. */
  delivered(process: ProcessView, shardId: string, seq: string, atMs: number): Delivery {
    const session = this.#sessions.get(process)?.get(shardId)
      ?? { process, shardId, token: undefined, openedAtMs: atMs, lastSequence: undefined, outstanding: [], outstandingHead: 0 };
    const record = this.#records.get(seq);
    const delivery: Delivery = { session, record, acked: false };
    this.stats.deliveries += 1;
    const shard = this.#shard(shardId);
    const sequence = record?.sequence ?? BigInt(seq);
    const where = `${process.label} delivered ${shardId} ${short(seq)}`;

    this.checks += 1;
    if (record === undefined || record.shardId !== shardId) this.#fail('order', atMs, `${where}, a record nobody put on that shard`);
    this.checks += 1;
    if (session.lastSequence !== undefined && sequence <= session.lastSequence) {
      this.#fail('order', atMs, `${where} after ${short(session.lastSequence.toString())} in the same lease`);
    }
    session.lastSequence = sequence;

    this.checks += 1;
    const unfinished = shard.parents.filter((p) => !this.#shard(p).finished);
    if (unfinished.length > 0) this.#fail('parents-first', atMs, `${where} while its parent ${unfinished.join(', ')} is not finished`);

    const token = session.token;
    const fenced = token === undefined || shard.current !== token;
    this.checks += 1;
    if (fenced && token !== undefined && atMs - token.lastWriteAtMs >= 2 * this.settings.renewIntervalMs) {
      this.#fail('zombie-emission', atMs, `${where} under counter ${token.counter}, fenced, ${atMs - token.lastWriteAtMs} ms after its last confirmed write`);
    }

    if (record !== undefined) {
      if (record.delivered) {
        this.stats.duplicates += 1;
        if (!fenced) this.#checkRedelivery(session, record, shard, where, atMs);
      } else if (!fenced) {
        this.checks += 1;
        if (shard.lastFirstDelivery !== undefined && sequence < shard.lastFirstDelivery) {
          this.#fail('first-delivery-order', atMs, `${where} for the first time after ${short(shard.lastFirstDelivery.toString())} was`);
        }
        if (shard.lastFirstDelivery === undefined || sequence > shard.lastFirstDelivery) shard.lastFirstDelivery = sequence;
      }
      record.delivered = true;
    }

    session.outstanding.push(delivery);
    this.checks += 1;
    const backlog = session.outstanding.length - session.outstandingHead;
    if (backlog > this.settings.maxInFlightRecords) {
      this.#fail('backlog-bound', atMs, `${process.label} has ${backlog} records of ${shardId} emitted and not under its watermark (maxInFlightRecords ${this.settings.maxInFlightRecords})`);
    }
    return delivery;
  }

  /** The handler acked a delivered record. */
  acked(delivery: Delivery, atMs: number): void {
    if (delivery.acked) return;
    delivery.acked = true;
    this.stats.acks += 1;
    const { record, session } = delivery;
    if (record !== undefined) {
      record.acked = true;
      record.ackedAtMs = atMs;
      record.ackedBy = session;
    }
    const { outstanding } = session;
    while (session.outstandingHead < outstanding.length && outstanding[session.outstandingHead]?.acked === true) session.outstandingHead += 1;
    if (session.outstandingHead > 1024 && session.outstandingHead * 2 > outstanding.length) {
      outstanding.splice(0, session.outstandingHead);
      session.outstandingHead = 0;
    }
  }

  // ------------------------------------------------------------------ calm and the end

  /** From now on faults are over: shards must find live owners within the bound. */
  calm(atMs: number): void {
    this.#calmSinceMs = atMs;
  }

  /** After each step once calm: readable shards without a live owner for longer than the bound. */
  checkOwnership(atMs: number): void {
    if (this.#calmSinceMs === undefined) return;
    for (const shard of this.#shards.values()) {
      this.checks += 1;
      const owned = shard.current !== undefined && this.#live(shard.current, atMs);
      if (owned || !this.#readable(shard)) {
        shard.unownedSinceMs = undefined;
        continue;
      }
      shard.unownedSinceMs ??= Math.max(atMs, this.#calmSinceMs);
      if (!shard.ownershipReported && atMs - shard.unownedSinceMs > this.settings.ownershipBoundMs) {
        shard.ownershipReported = true;
        const last = shard.current === undefined ? 'no lease since a reset' : `last held by ${shard.current.process.label} (${shard.current.process.status()}, counter ${shard.current.counter})`;
        this.#fail('unowned-shard', atMs, `${shard.shardId} readable and without a live owner for ${atMs - shard.unownedSinceMs} ms after the schedule calmed (bound ${this.settings.ownershipBoundMs} ms); ${last}`);
      }
    }
  }

  /**
   * At the end of the calm phase: the running clients share the readable shards evenly. Processes
   * of one clientId count as one client (the assignment sees ids, not processes).
   */
  checkBalance(atMs: number, running: readonly ProcessView[]): void {
    this.checks += 1;
    const counts = new Map(running.map((p) => [p.clientId, 0]));
    if (counts.size === 0) return;
    let readable = 0;
    for (const shard of this.#shards.values()) {
      if (!this.#readable(shard)) continue;
      readable += 1;
      const owner = shard.current !== undefined && this.#live(shard.current, atMs) ? shard.current.process.clientId : undefined;
      const count = owner === undefined ? undefined : counts.get(owner);
      if (count !== undefined && owner !== undefined) counts.set(owner, count + 1);
    }
    const low = Math.floor(readable / counts.size);
    const high = Math.ceil(readable / counts.size);
    const off = [...counts].filter(([, n]) => n < low || n > high);
    if (off.length === 0) return;
    const skew = (id: string) => {
      const ms = running.find((p) => p.clientId === id)?.skewMs ?? 0;
      return ms === 0 ? '' : ` (clock ${ms > 0 ? '+' : ''}${ms / 1000} s)`;
    };
    this.#fail('unbalanced', atMs, `${readable} readable shards over ${counts.size} running clients: `
      + `${off.map(([id, n]) => `${id} holds ${n}${skew(id)}`).join(', ')} (expected ${low}${high === low ? '' : `-${high}`})`);
  }

  /** The records each shard still owes: required and not acked. */
  missing(): Map<string, string[]> {
    const missing = new Map<string, string[]>();
    for (const shard of this.#shards.values()) {
      const owed = shard.records.filter((r) => !r.acked && this.#required(shard, r)).map((r) => r.seq);
      if (owed.length > 0) missing.set(shard.shardId, owed);
    }
    return missing;
  }

  /** At the end of the calm phase: every required record acked. */
  checkNothingLost(atMs: number): void {
    for (const shard of this.#shards.values()) {
      this.checks += 1;
      const owed = shard.records.filter((r) => !r.acked && this.#required(shard, r));
      if (owed.length === 0) continue;
      const first = owed[0] as RecordState;
      const holder = shard.current === undefined ? 'nobody holds it' : `held by ${shard.current.process.label} (${shard.current.process.status()})`;
      this.#fail('lost-record', atMs, `${shard.shardId}: ${owed.length} of ${shard.records.length} records never acked, the first ${short(first.seq)} `
        + `(put at ${first.arrivalMs - this.settings.startMs} ms, ${first.delivered ? 'delivered' : 'never delivered'}); ${holder}`);
    }
  }

  /** Something the library threw or rejected with that nobody handled. */
  libraryError(atMs: number, message: string): void {
    this.#fail('library-error', atMs, message);
  }

  // ------------------------------------------------------------------ internals

  #checkRedelivery(session: Session, record: RecordState, shard: ShardState, where: string, atMs: number): void {
    this.checks += 1;
    const previous = record.ackedBy;
    const released = previous?.token?.releaseSnapshotAtMs;
    if (record.acked && previous !== undefined && previous !== session && released !== undefined
      && record.ackedAtMs <= released && record.ackedAtMs < session.openedAtMs) {
      this.#fail('graceful-redelivery', atMs, `${where} again: ${previous.process.label} acked it and then released the lease gracefully`);
    }
    this.checks += 1;
    if (shard.highestCommitted !== undefined && record.sequence <= shard.highestCommitted) {
      this.#fail('committed-redelivery', atMs, `${where} again although ${short(shard.highestCommitted.toString())} was committed`);
    }
  }

  #required(shard: ShardState, record: RecordState): boolean {
    const { requirement } = shard;
    switch (requirement.kind) {
      case 'all': return true;
      case 'from-index': return record.index >= requirement.index;
      case 'from-time': return record.arrivalMs >= requirement.timeMs;
      case 'from-first-read': return requirement.captureIndex !== undefined && record.index >= requirement.captureIndex;
    }
  }

  /** Held by a process that runs and renewed it within the TTL on the true clock. */
  #live(token: Token, atMs: number): boolean {
    if (token.session === undefined || token.releasedAtMs !== undefined) return false;
    const status = token.process.status();
    if (status !== 'running' && status !== 'stopping') return false;
    return atMs - token.lastWriteAtMs < this.settings.leaseTtlMs;
  }

  /** Not finished, every parent finished: the assignment must give it to someone. */
  #readable(shard: ShardState): boolean {
    return !shard.finished && shard.parents.every((p) => this.#shard(p).finished);
  }

  #shard(shardId: string): ShardState {
    const shard = this.#shards.get(shardId);
    if (shard === undefined) throw new Error(`checker: unknown shard ${shardId}`);
    return shard;
  }

  #fail(invariant: InvariantName, atMs: number, message: string): void {
    const count = (this.counts.get(invariant) ?? 0) + 1;
    this.counts.set(invariant, count);
    // The first few of each rule are enough to understand a run; the count stays exact.
    if (count <= MAX_REPORTED_PER_INVARIANT) this.violations.push({ invariant, atMs: atMs - this.settings.startMs, message });
  }
}

const MAX_REPORTED_PER_INVARIANT = 3;

function skewText(capturer: ProcessView, owner: ProcessView): string {
  if (capturer.skewMs === 0 && owner.skewMs === 0) return '';
  const text = (ms: number) => `${ms > 0 ? '+' : ''}${ms / 1000} s`;
  return `; clocks: ${capturer.label} ${text(capturer.skewMs)}, ${owner.label} ${text(owner.skewMs)}`;
}

/** A sequence number shortened for humans: its last digits identify it within a run. */
export function short(seq: string): string {
  return `…${seq.slice(-8)}`;
}
