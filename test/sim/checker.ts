// The invariants of design.md §7.6 and §8.3, checked as the simulated group runs. The checker sees
// what an outside observer can see, nothing of the library's inner state: every record put (the
// stream), every write the tables accepted with its writer and lease counter (the port wrappers),
// every operator reset, every record delivered and acked (the handlers), every handler call the
// processing operators make, and which processes are alive on the true clock. Each rule is
// evaluated when the observation that can break it arrives.
import {
  type CheckerSettings, type CheckerStats, type Delivery, type InvariantName, type ObservedCheckpoint, type ProcessView,
  type RecordState, type Requirement, type Session, type ShardState, type Token, type Violation,
  checkpointOrd, ordOf, recordKey, short,
} from './checker-state.js';
import { HandlerRules } from './handler-rules.js';
import { Lives } from './liveness-rules.js';

export { INVARIANTS, START_BOUND_MS, type CheckerSettings, type CheckerStats, type Delivery, type InvariantName, type ObservedCheckpoint, type ProcessView, type Violation } from './checker-state.js';

/** The invariants of §7.6 over one simulated group. */
export class InvariantChecker {
  readonly violations: Violation[] = [];
  /** Rule evaluations so far. */
  checks = 0;
  readonly stats: CheckerStats = { deliveries: 0, duplicates: 0, acks: 0, captures: 0, writes: 0, resets: 0, subRecordDeliveries: 0, handlerCalls: 0, memoryChecks: 0, peakRetainedPercent: 0 };
  /** key-order and settled-rehandled: the processing operators' handler calls. */
  readonly handlers: HandlerRules;
  /** The members' heartbeats, lives, drains and timed crashes (liveness-rules.ts). */
  readonly lives = new Lives();
  readonly #shards = new Map<string, ShardState>();
  readonly #records = new Map<string, RecordState>();
  readonly #sessions = new Map<ProcessView, Map<string, Session>>();
  readonly #tokens = new Map<string, Token>();
  /** Every violation found, by invariant (the list keeps the first few of each). */
  readonly counts = new Map<InvariantName, number>();
  #calmSinceMs: number | undefined;

  constructor(private readonly settings: CheckerSettings) {
    this.handlers = new HandlerRules(this);
  }

  // ------------------------------------------------------------------ the stream

  shardCreated(shardId: string, parents: readonly string[]): void {
    const { start, startTimestampMs } = this.settings;
    // A child of a shard the group was already reading is owed whole: the group's start lies before
    // the child's first record (design §7.1; a LATEST start taken at the child's capture would skip
    // what was put into it while its parents were read to their end). A child of shards the group
    // never read yet starts where the group starts: what counts is its first read.
    const requirement: Requirement = start === 'TRIM_HORIZON' ? { kind: 'all' }
      : start === 'AT_TIMESTAMP' ? { kind: 'from-time', timeMs: startTimestampMs }
      : parents.some((parent) => this.#startedReading(this.#shard(parent))) ? { kind: 'all' }
      : { kind: 'from-first-read', captureIndex: undefined };
    const floorMs = start === 'AT_TIMESTAMP' ? startTimestampMs - this.settings.startBoundMs : Number.NEGATIVE_INFINITY;
    this.#shards.set(shardId, {
      shardId, parents, records: [], rawCount: 0, finished: false, current: undefined, highestCommitted: undefined,
      lastFirstDelivery: undefined, requirement, floorMs, floorWhy: 'the group\'s timestamp', unownedSinceMs: undefined, ownershipReported: false, readableSinceMs: this.settings.startMs,
      lastAckAtMs: Number.NEGATIVE_INFINITY, stallReported: false, everCaptured: false,
    });
  }

  /** A Kinesis record was put: a plain record, or a KPL aggregate of `subRecords` user records. */
  recordPut(shardId: string, seq: string, arrivalMs: number, subRecords?: number): void {
    const shard = this.#shard(shardId);
    const sequence = BigInt(seq);
    const index = shard.rawCount;
    shard.rawCount += 1;
    const subs = subRecords === undefined ? [undefined] : Array.from({ length: subRecords }, (_, i) => i);
    for (const sub of subs) {
      const record: RecordState = {
        seq, sub, ord: ordOf(sequence, sub), shardId, index, arrivalMs,
        delivered: false, acked: false, ackedAtMs: 0, ackedBy: undefined, settledBy: undefined, settledAtMs: 0,
      };
      shard.records.push(record);
      this.#records.set(recordKey(seq, sub), record);
    }
  }

  /**
   * Kinesis answered a GetShardIterator (or accepted a SubscribeToShard) at `atMs`, when the shard
   * held `recordsInShard` records: a shard waiting for its first read starts here, and a `LATEST`
   * start is the group's start on that shard (design §8.3).
   */
  iteratorIssued(shardId: string, recordsInShard: number, atMs = this.settings.startMs, latest = true): void {
    const shard = this.#shard(shardId);
    if (shard.requirement.kind !== 'from-first-read') return;
    shard.requirement = { kind: 'from-index', index: recordsInShard };
    if (latest) {
      shard.floorMs = atMs - this.settings.startBoundMs;
      shard.floorWhy = `its first LATEST iterator (at ${atMs - this.settings.startMs} ms)`;
    }
  }

  /** The user record delivered as (seq, sub), if it was put. */
  recordOf(seq: string, sub: number | undefined): RecordState | undefined {
    return this.#records.get(recordKey(seq, sub));
  }

  // ------------------------------------------------------------------ the checkpoints table

  /**
   * The table accepted a capture: `process` now holds the shard with `counter`, captured in life
   * `incarnation`; the library asked for it at `calledAtMs`.
   */
  captured(process: ProcessView, shardId: string, counter: number, atMs: number, incarnation?: number, calledAtMs = atMs): void {
    const shard = this.#shard(shardId);
    this.stats.captures += 1;
    const previous = shard.current;
    // Static membership: a process of the owner's clientId takes its leases at once (twin-emission judges the old one).
    if (previous !== undefined && previous.process !== process && previous.process.clientId !== process.clientId) {
      this.checks += 1;
      if (this.#live(previous, atMs)) {
        const renewedAt = Math.max(previous.lastWriteAtMs, this.lives.lastBeatSent(previous.process, previous.incarnation) ?? Number.NEGATIVE_INFINITY);
        this.fail('live-lease-taken', atMs,
          `${process.label} captured ${shardId} (counter ${counter}) from ${previous.process.label}, which renewed it ${atMs - renewedAt} ms earlier `
          + `(TTL ${this.settings.leaseTtlMs} ms) and is ${previous.process.status()}${skewText(process, previous.process)}`);
      }
    }
    this.checks += 1;
    const drainingSince = this.lives.drainingSince(process);
    // Strictly after: a capture sent in the very millisecond the drain began may have gone out before it.
    if (drainingSince !== undefined && calledAtMs > drainingSince) {
      this.fail('drain-took', atMs, `${process.label} captured ${shardId} (counter ${counter}), asked for ${calledAtMs - drainingSince} ms after it began to drain`);
    }
    if (previous !== undefined) previous.fencedAtMs = atMs;
    if (shard.requirement.kind === 'from-first-read') shard.requirement.captureIndex ??= shard.rawCount;
    shard.everCaptured = true;
    const token: Token = {
      shardId, counter, process, incarnation, fencedAtMs: undefined, capturedAtMs: atMs, lastWriteAtMs: atMs, releasedAtMs: undefined, releaseSnapshotAtMs: undefined, session: undefined,
    };
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
      this.fail('fenced-write', atMs, `the table accepted ${process.label}'s ${operation} of ${shardId} under counter ${counter}: ${why}`);
    }
    if (token !== undefined) {
      token.lastWriteAtMs = atMs;
      if (operation === 'release') {
        token.releasedAtMs = atMs;
        token.releaseSnapshotAtMs = calledAtMs;
      }
    }
    if (checkpoint?.type === 'position') {
      const ord = checkpointOrd(checkpoint);
      if (shard.highestCommitted === undefined || ord > shard.highestCommitted) shard.highestCommitted = ord;
    }
    if (finished && !shard.finished) {
      shard.finished = true;
      for (const child of this.#shards.values()) {
        if (child.parents.includes(shardId) && this.#readable(child)) child.readableSinceMs = atMs;
      }
    }
  }

  /** The operator's reset was accepted at `atMs`: every earlier lease of the shard is fenced from now on. */
  reset(shardId: string, to: ObservedCheckpoint, rowFinished: boolean, atMs = this.settings.startMs): void {
    const shard = this.#shard(shardId);
    this.stats.resets += 1;
    if (shard.current !== undefined) shard.current.fencedAtMs = atMs;
    shard.current = undefined;
    shard.highestCommitted = undefined;
    shard.lastFirstDelivery = undefined;
    if (to?.type === 'LATEST') {
      // Its children start where the reset says (a child with no checkpoint starts where its
      // parents' row does), finished parent or not: owed from the reset's moment, as the shard.
      for (const child of this.#shards.values()) {
        if (!child.parents.includes(shardId)) continue;
        child.requirement = { kind: 'from-time', timeMs: atMs };
        this.#passStartDown(child);
      }
    }
    // A finished shard stays finished and is not read again: nothing re-opens.
    if (rowFinished || to === undefined) return;
    const bound = this.settings.startBoundMs;
    const at = `${atMs - this.settings.startMs} ms`;
    if (to.type === 'LATEST') {
      // §8.3: a reset's start is the moment its write was accepted: every record put after it is
      // owed, those put before the next owner's first iterator too (it reads AT_TIMESTAMP of the
      // reset's moment, not from the tip at its capture).
      shard.requirement = { kind: 'from-time', timeMs: atMs };
      shard.floorMs = atMs - bound;
      shard.floorWhy = `the reset to LATEST accepted at ${at}`;
      return;
    }
    const fromMs = to.type === 'AT_TIMESTAMP' ? to.timestampMs : to.type === 'TRIM_HORIZON' ? Number.NEGATIVE_INFINITY : undefined;
    if (fromMs === undefined) return;
    shard.requirement = to.type === 'TRIM_HORIZON' ? { kind: 'all' } : { kind: 'from-time', timeMs: fromMs };
    shard.floorMs = fromMs - bound;
    shard.floorWhy = `the reset to ${to.type} accepted at ${at}`;
    for (const record of shard.records) {
      if (record.arrivalMs < fromMs) continue;
      record.delivered = false;
      record.acked = false;
      record.ackedBy = undefined;
      record.settledBy = undefined;
    }
  }

  // A shard never captured has no row of its own: when it is, it starts where its parents' rows
  // stand (inheritedStart), and a row that only stands for a time hands that time on. So a reset's
  // moment reaches a grandchild whose parents all start at a time and were never captured — a merge
  // of a split's children, none read before their grandparent was reset to LATEST (seed 281: the
  // merged child read from the reset's moment, which the checker owed whole).
  #passStartDown(shard: ShardState): void {
    if (shard.everCaptured) return;
    for (const child of this.#shards.values()) {
      if (!child.parents.includes(shard.shardId) || child.everCaptured) continue;
      const parents = child.parents.map((p) => this.#shard(p));
      const times = parents.map((p) => (p.requirement.kind === 'from-time' && !p.everCaptured ? p.requirement.timeMs : undefined));
      if (times.some((t) => t === undefined)) continue;
      child.requirement = { kind: 'from-time', timeMs: Math.min(...(times as number[])) };
      this.#passStartDown(child);
    }
  }

  // ------------------------------------------------------------------ the clients

  /** `lease-acquired` on a process's events$: its records for the shard belong to this lease from now on. */
  sessionOpened(process: ProcessView, shardId: string, counter: number, atMs: number): void {
    const token = this.#tokens.get(`${shardId}#${counter}`);
    const session: Session = { process, shardId, token, openedAtMs: atMs, lastOrd: undefined, outstanding: [], outstandingHead: 0 };
    if (token !== undefined) token.session = session;
    let byShard = this.#sessions.get(process);
    if (byShard === undefined) {
      byShard = new Map();
      this.#sessions.set(process, byShard);
    }
    byShard.set(shardId, session);
  }

  /** A record (sub-record `sub` of an aggregate) reached the pipeline of `process`. */
  delivered(process: ProcessView, shardId: string, seq: string, atMs: number, sub?: number): Delivery {
    const session = this.#sessions.get(process)?.get(shardId)
      ?? { process, shardId, token: undefined, openedAtMs: atMs, lastOrd: undefined, outstanding: [], outstandingHead: 0 };
    const record = this.#records.get(recordKey(seq, sub));
    const delivery: Delivery = { session, record, acked: false, heldByHandler: false };
    this.stats.deliveries += 1;
    if (sub !== undefined) this.stats.subRecordDeliveries += 1;
    const shard = this.#shard(shardId);
    const ord = record?.ord ?? ordOf(BigInt(seq), sub);
    const where = `${process.label} delivered ${shardId} ${short(seq, sub)}`;

    this.checks += 1;
    if (record === undefined || record.shardId !== shardId) this.fail('order', atMs, `${where}, a record nobody put on that shard`);
    this.checks += 1;
    if (session.lastOrd !== undefined && ord <= session.lastOrd) this.fail('order', atMs, `${where} after a later record in the same lease`);
    session.lastOrd = ord;

    this.checks += 1;
    const unfinished = shard.parents.filter((p) => !this.#shard(p).finished);
    if (unfinished.length > 0) this.fail('parents-first', atMs, `${where} while its parent ${unfinished.join(', ')} is not finished`);

    const token = session.token;
    const fenced = token === undefined || shard.current !== token;
    this.checks += 1;
    if (fenced && token !== undefined) {
      // Its last confirmation before the fence: a write of its row, or a heartbeat of its life the
      // table accepted by then (one accepted later would have to be refused: the fence tells the life).
      const confirmedAtMs = Math.max(token.lastWriteAtMs, this.lives.lastBeatSent(process, token.incarnation, token.fencedAtMs) ?? Number.NEGATIVE_INFINITY);
      if (atMs - confirmedAtMs >= 2 * this.settings.renewIntervalMs) {
        this.fail('zombie-emission', atMs, `${where} under counter ${token.counter}, fenced, ${atMs - confirmedAtMs} ms after its last confirmation`);
      }
    }
    this.checks += 1;
    const replacedAtMs = this.lives.replacedAt(process, atMs);
    if (replacedAtMs !== undefined) {
      const lastMs = this.lives.lastBeatSent(process, this.lives.lifeOf(process), replacedAtMs) ?? Number.NEGATIVE_INFINITY;
      if (atMs - lastMs >= 2 * this.settings.renewIntervalMs) {
        this.fail('twin-emission', atMs, `${where}, ${atMs - replacedAtMs} ms after another process of ${process.clientId} took its place, ${atMs - lastMs} ms after its last heartbeat accepted before that`);
      }
    }

    if (record !== undefined) {
      if (!fenced) {
        this.checks += 1;
        if (record.arrivalMs < shard.floorMs) {
          this.fail('before-start', atMs, `${where}, put at ${record.arrivalMs - this.settings.startMs} ms, `
            + `${shard.floorMs + this.settings.startBoundMs - record.arrivalMs} ms before ${shard.floorWhy} (bound ${this.settings.startBoundMs} ms)`);
        }
      }
      if (record.delivered) {
        this.stats.duplicates += 1;
        if (!fenced) this.#checkRedelivery(session, record, shard, where, atMs);
      } else if (!fenced) {
        this.checks += 1;
        if (shard.lastFirstDelivery !== undefined && ord < shard.lastFirstDelivery) {
          this.fail('first-delivery-order', atMs, `${where} for the first time after a later record was`);
        }
        if (shard.lastFirstDelivery === undefined || ord > shard.lastFirstDelivery) shard.lastFirstDelivery = ord;
      }
      record.delivered = true;
    }

    session.outstanding.push(delivery);
    this.checks += 1;
    const backlog = session.outstanding.length - session.outstandingHead;
    if (backlog > this.settings.maxInFlightRecords) {
      this.fail('backlog-bound', atMs, `${process.label} has ${backlog} records of ${shardId} emitted and not under its watermark (maxInFlightRecords ${this.settings.maxInFlightRecords})`);
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
      this.#shard(record.shardId).lastAckAtMs = atMs;
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
        this.fail('unowned-shard', atMs, `${shard.shardId} readable and without a live owner for ${atMs - shard.unownedSinceMs} ms after the schedule calmed (bound ${this.settings.ownershipBoundMs} ms); ${last}`);
      }
    }
  }

  /**
   * Once calm, every few steps: a readable shard that owes records no ack came for in two ownership
   * bounds (since the calm, its last ack, its parents' end, or its oldest owed record's arrival) is stalled — a
   * reader waiting on a wall clock that jumped back, say (design §8.3: a step stalls no reading).
   */
  checkProgress(atMs: number): void {
    if (this.#calmSinceMs === undefined) return;
    const boundMs = 2 * this.settings.ownershipBoundMs;
    for (const shard of this.#shards.values()) {
      const sinceMs = Math.max(this.#calmSinceMs, shard.lastAckAtMs, shard.readableSinceMs);
      if (shard.stallReported || !this.#readable(shard) || atMs - sinceMs <= boundMs) continue;
      this.checks += 1;
      const owed = shard.records.find((r) => !r.acked && this.#required(shard, r));
      if (owed === undefined || atMs - owed.arrivalMs <= boundMs) continue;
      shard.stallReported = true;
      const holder = shard.current === undefined ? 'nobody holds it' : `held by ${shard.current.process.label} (${shard.current.process.status()})`;
      this.fail('read-stall', atMs, `${shard.shardId}: no ack for ${atMs - Math.max(sinceMs, owed.arrivalMs)} ms while ${short(owed.seq, owed.sub)} `
        + `(put at ${owed.arrivalMs - this.settings.startMs} ms) is owed (bound ${boundMs} ms); ${holder}`);
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
    this.fail('unbalanced', atMs, `${readable} readable shards over ${counts.size} running clients: `
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
      this.fail('lost-record', atMs, `${shard.shardId}: ${owed.length} of ${shard.records.length} records never acked, the first ${short(first.seq)} `
        + `(put at ${first.arrivalMs - this.settings.startMs} ms, ${first.delivered ? 'delivered' : 'never delivered'}); ${holder}`);
    }
  }

  /** Something the library threw or rejected with that nobody handled. */
  libraryError(atMs: number, message: string): void {
    this.fail('library-error', atMs, message);
  }

  /** The session's lease is the shard's current one (not fenced by a later capture or a reset). */
  isCurrent(session: Session): boolean {
    return session.token !== undefined && this.#shard(session.shardId).current === session.token;
  }

  // ------------------------------------------------------------------ internals

  #checkRedelivery(session: Session, record: RecordState, shard: ShardState, where: string, atMs: number): void {
    this.checks += 1;
    const previous = record.ackedBy;
    const released = previous?.token?.releaseSnapshotAtMs;
    if (record.acked && previous !== undefined && previous !== session && released !== undefined
      && record.ackedAtMs <= released && record.ackedAtMs < session.openedAtMs) {
      this.fail('graceful-redelivery', atMs, `${where} again: ${previous.process.label} acked it and then released the lease gracefully`);
    }
    this.checks += 1;
    if (shard.highestCommitted !== undefined && record.ord <= shard.highestCommitted) {
      this.fail('committed-redelivery', atMs, `${where} again although a later place was committed`);
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

  /** The group got an iterator on it, or captured it, or is owed all of it. */
  #startedReading(shard: ShardState): boolean {
    const { requirement } = shard;
    return requirement.kind !== 'from-first-read' || requirement.captureIndex !== undefined;
  }

  /**
   * Held by a process that runs and renewed it within the TTL on the true clock: a write of its row
   * accepted, or a heartbeat of the life it was captured in sent (the life keeps the lease).
   */
  #live(token: Token, atMs: number): boolean {
    if (token.session === undefined || token.releasedAtMs !== undefined) return false;
    const status = token.process.status();
    if (status !== 'running' && status !== 'stopping') return false;
    // A lease captured in a life lives by that life's heartbeats alone: a commit accepted while
    // the heartbeats fail keeps nothing (the owner stops emitting two renewal intervals after its
    // last accepted heartbeat; its writes are fenced from the next capture on).
    if (token.incarnation === undefined) return atMs - token.lastWriteAtMs < this.settings.leaseTtlMs;
    const beat = this.lives.lastBeatSent(token.process, token.incarnation);
    return beat !== undefined && atMs - beat < this.settings.leaseTtlMs;
  }

  /** A calm-phase crash: each shard `process` held must be captured by another within the failover bound of its last heartbeat. */
  crashTimed(process: ProcessView, atMs: number): void {
    const shardIds = [...this.#shards.values()].filter((s) => s.current?.process === process && this.#readable(s)).map((s) => s.shardId);
    this.lives.crashes.push({ process, atMs, shardIds, reported: false });
  }

  /** After each step once calm: the timed crashes' shards captured by another within the bound. */
  checkFailover(atMs: number): void {
    const boundMs = this.settings.failoverBoundMs;
    if (boundMs === undefined) return;
    for (const crash of this.lives.crashes) {
      if (crash.reported) continue;
      const lastMs = this.lives.lastBeatSent(crash.process, this.lives.lifeOf(crash.process)) ?? crash.atMs;
      this.checks += 1;
      if (atMs - lastMs <= boundMs) continue;
      const left = crash.shardIds.filter((shardId) => {
        const current = this.#shard(shardId).current;
        return this.#readable(this.#shard(shardId)) && (current === undefined || current.process === crash.process);
      });
      crash.reported = true;
      if (left.length > 0) {
        this.fail('crash-failover', atMs, `${left.join(', ')} of ${crash.process.label} (crashed at ${crash.atMs - this.settings.startMs} ms) not captured by another `
          + `${atMs - lastMs} ms after its last heartbeat's send (bound ${boundMs} ms)`);
      }
    }
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

  /** A broken rule (the handler rules and the memory probe report through this too). */
  fail(invariant: InvariantName, atMs: number, message: string): void {
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

