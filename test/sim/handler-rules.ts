// The rules on what the processing operators do with the records they are given: under an
// ordering that promises order, a lease's handler calls per key come in sequence order and one at
// a time (key-order); and a record the operator settled before a graceful release is not handed to
// a handler again by a later lease (settled-rehandled, §7.2 and §7.3 seen from the handler).
import type { Delivery, InvariantName, Session } from './checker-state.js';
import { short } from './checker-state.js';

/** What the rules need of the checker. */
export interface RuleHost {
  checks: number;
  readonly stats: { handlerCalls: number };
  fail(invariant: InvariantName, atMs: number, message: string): void;
  isCurrent(session: Session): boolean;
}

/** `'none'` promises no order; a batch is keyed by its shard. */
export type CallOrdering = 'shard' | 'partitionKey' | 'none' | 'batch';

interface Lane {
  running: number;
  lastFirstOrd: bigint | undefined;
}

/** key-order and settled-rehandled over the handler calls of every process. */
export class HandlerRules {
  readonly #lanes = new WeakMap<Session, Map<string, Lane>>();

  constructor(private readonly host: RuleHost) {}

  /**
   * A handler call begins on delivered records (one, or a batch of one shard) of one lease;
   * `attempt` 1 is their first call in this lease. Returns what to call when it ends, however it ends.
   */
  called(deliveries: readonly Delivery[], ordering: CallOrdering, key: string, attempt: number, atMs: number): () => void {
    const { host } = this;
    const session = deliveries[0]?.session;
    host.stats.handlerCalls += 1;
    if (session === undefined) return () => undefined;
    const current = host.isCurrent(session);
    const where = (record: Delivery['record']) => `${session.process.label} called its handler on ${session.shardId} ${record === undefined ? '?' : short(record.seq, record.sub)}`;
    for (const { record } of deliveries) {
      if (record === undefined || !current) continue;
      host.checks += 1;
      const settler = record.settledBy;
      const released = settler?.token?.releaseSnapshotAtMs;
      if (settler !== undefined && settler !== session && released !== undefined && record.settledAtMs <= released && record.settledAtMs < session.openedAtMs) {
        host.fail('settled-rehandled', atMs, `${where(record)} (attempt ${attempt}): ${settler.process.label} settled it and then released the lease gracefully`);
      }
    }
    if (ordering === 'none') return () => undefined;
    const lane = this.#lane(session, key);
    host.checks += 1;
    if (lane.running > 0) host.fail('key-order', atMs, `${where(deliveries[0]?.record)} while another call of key '${key}' runs (${ordering})`);
    for (const { record } of deliveries) {
      if (attempt !== 1 || record === undefined) continue;
      host.checks += 1;
      if (lane.lastFirstOrd !== undefined && record.ord <= lane.lastFirstOrd) {
        host.fail('key-order', atMs, `${where(record)} for the first time after a later record of key '${key}' (${ordering})`);
      }
      if (lane.lastFirstOrd === undefined || record.ord > lane.lastFirstOrd) lane.lastFirstOrd = record.ord;
    }
    lane.running += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      lane.running -= 1;
    };
  }

  /** The operator emitted the record as settled (processed or given to onFailure, and acked). */
  settled(delivery: Delivery, atMs: number): void {
    const { record, session } = delivery;
    if (record === undefined) return;
    record.settledBy = session;
    record.settledAtMs = atMs;
  }

  #lane(session: Session, key: string): Lane {
    let lanes = this.#lanes.get(session);
    if (lanes === undefined) {
      lanes = new Map();
      this.#lanes.set(session, lanes);
    }
    let lane = lanes.get(key);
    if (lane === undefined) {
      lane = { running: 0, lastFirstOrd: undefined };
      lanes.set(key, lane);
    }
    return lane;
  }
}
