// A worker process whose handler kills it on one record, and its supervisor (design §9.3), on a
// consumer group in virtual time (memory-group.ts): the poison and dead-letter tests.
import type { OperatorFunction } from 'rxjs';
import { type FailedRecord, type FailureHandler, type FailureResult, type KinsumerRecord, processRecords } from '../../src/index.js';
import type { KinsumerPorts } from '../../src/ports/backend.js';
import type { Member, MemoryGroup } from './memory-group.js';

export const text = (record: KinsumerRecord) => new TextDecoder().decode(record.data);
export const never = () => new Promise<void>(() => undefined);

/** The application's pipeline around the fleet's handler (`handle` takes one record or a batch). */
export type Pipeline = (handle: (records: readonly KinsumerRecord[]) => Promise<void>, onFailure: FailureHandler | undefined) => OperatorFunction<KinsumerRecord, unknown>;

export interface CrashingFleetOptions {
  /** `false`: no onFailure; a function: what onFailure returns (after the fleet notes the failure). */
  readonly onFailure?: false | ((failure: FailedRecord) => FailureResult | void);
  /** Replaces a session's ports; `die` kills that session's process, as the poison does. */
  readonly wrap?: (ports: KinsumerPorts, die: () => void) => KinsumerPorts;
}

/**
 * A worker process whose handler kills it on one record, and its supervisor: the process dies
 * without stop() (every call it makes hangs from then on, nothing it holds is released), and a new
 * process with the same clientId starts 100 ms later — a pod restarted by Kubernetes.
 */
export class CrashingFleet {
  /** Handler calls (one per record in a batch call) on each record, by its data. */
  readonly calls = new Map<string, number>();
  readonly deadLetters: FailedRecord[] = [];
  readonly processed = new Set<string>();
  readonly sessions: Member[] = [];
  readonly errors: unknown[] = [];

  constructor(private readonly group: MemoryGroup, private readonly poison: (record: KinsumerRecord) => boolean, private readonly pipeline: Pipeline,
    private readonly options: CrashingFleetOptions = {}) {}

  start(): void {
    let dead = false;
    // process.exit(): the process is gone, nothing it was doing returns; a new one starts 100 ms later.
    const die = (): void => {
      if (dead) return;
      dead = true;
      member.pause();
      this.group.scheduler.schedule(() => this.start(), 100);
    };
    const { onFailure, wrap } = this.options;
    const member: Member = this.group.join('w', {
      ...(wrap === undefined ? {} : { wrap: (ports: KinsumerPorts) => wrap(ports, die) }),
      keepFailure: true,
      pipeline: this.pipeline(async (records) => {
        if (dead) return never();
        for (const record of records) this.calls.set(text(record), (this.calls.get(text(record)) ?? 0) + 1);
        await Promise.resolve();
        if (records.some(this.poison)) {
          die();
          return never();
        }
        for (const record of records) this.processed.add(text(record));
        return undefined;
      }, onFailure === false ? undefined : async (failure) => {
        await Promise.resolve();
        this.deadLetters.push(failure);
        return onFailure?.(failure);
      }),
      onError: (error) => this.errors.push(error),
    });
    this.sessions.push(member);
  }
}

/** processRecords around the fleet's handler, on the group's timers. */
export const records = (group: MemoryGroup): Pipeline => (handle, onFailure) => processRecords((record) => handle([record]), {
  scheduler: group.scheduler, ...(onFailure === undefined ? {} : { onFailure }),
});

/** The sequence number of the (only) shard's checkpoint. */
export function checkpointOf(group: MemoryGroup): string | undefined {
  const row = group.checkpoints.row(group.stream.shardIds()[0] as string);
  return row?.checkpoint?.type === 'position' ? row.checkpoint.position.sequenceNumber : undefined;
}
