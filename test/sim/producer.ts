// The simulated producer: plain records or KPL aggregates (aws-kinesis-agg's own encoder), with
// partition keys drawn from a pool of the configured size, routed by their MD5 hash as Kinesis
// routes them. A quiet shard gets nothing until its quiet time is over: a record whose key lands on
// it is drawn again, and dropped if it keeps landing there.
import { createHash } from 'node:crypto';
import type { MemoryRecordInput, MemoryStream } from '../../src/testing/memory-stream.js';
import { aggregate } from '../support/kpl-aggregate.js';
import type { InvariantChecker } from './checker.js';
import type { MemoryProbe } from './memory-probe.js';
import type { SimConfig } from './schedule.js';

/** Sub-records in one aggregate: 2 to this many. */
const MAX_SUB_RECORDS = 12;
/** Draws of a key before a record meant for a quiet shard is dropped. */
const QUIET_REDRAWS = 8;

export class Producer {
  /** User records put (an aggregate counts each of its sub-records). */
  produced = 0;
  readonly #quietUntil = new Map<string, number>();

  constructor(
    private readonly stream: MemoryStream,
    private readonly checker: InvariantChecker,
    private readonly config: SimConfig,
    private readonly random: () => number,
    private readonly now: () => number,
    /** Sees the user records made from the aggregates put (the `memory` kind). */
    private readonly probe?: Pick<MemoryProbe, 'aggregateBytes' | 'aggregatePut'>,
  ) {}

  /** `shardId` gets no record until `untilMs`. */
  quiet(shardId: string, untilMs: number): void {
    this.#quietUntil.set(shardId, Math.max(untilMs, this.#quietUntil.get(shardId) ?? 0));
  }

  /** Milliseconds until the last quiet shard may get records again. */
  quietLeftMs(): number {
    const now = this.now();
    return Math.max(0, ...[...this.#quietUntil.values()].map((until) => until - now));
  }

  /** Every shard may get records again. */
  clearQuiet(): void {
    this.#quietUntil.clear();
  }

  /** Puts `count` Kinesis records (plain, or aggregates as the configuration says). */
  produce(count: number): void {
    if (count <= 0) return;
    const quiet = this.#quietShards();
    const inputs: MemoryRecordInput[] = [];
    const subCounts: (number | undefined)[] = [];
    for (let i = 0; i < count; i += 1) {
      const aggregated = this.config.aggregatePercent > 0 && this.random() * 100 < this.config.aggregatePercent;
      const subs = aggregated ? 2 + Math.floor(this.random() * (MAX_SUB_RECORDS - 1)) : 1;
      const keys = Array.from({ length: subs }, () => this.#key());
      // The aggregate goes where its first user record's key routes it (aws-kinesis-agg's rule).
      if (quiet !== undefined && !this.#redrawAway(keys, quiet)) continue;
      const data = keys.map(() => {
        this.produced += 1;
        return `r${this.produced}`;
      });
      if (aggregated) {
        const built = aggregate(keys.map((partitionKey, k) => ({ partitionKey, data: data[k] as string })));
        inputs.push(this.probe === undefined ? built : { ...built, data: this.probe.aggregateBytes(built.data) });
        subCounts.push(subs);
      } else {
        inputs.push({ partitionKey: keys[0] as string, data: data[0] as string });
        subCounts.push(undefined);
      }
    }
    const now = this.now();
    const results = this.stream.putRecords(inputs);
    results.forEach((result, i) => {
      this.checker.recordPut(result.shardId, result.sequenceNumber, now, subCounts[i]);
      if (subCounts[i] !== undefined) this.probe?.aggregatePut(result.shardId, (inputs[i] as MemoryRecordInput).data as Uint8Array);
    });
  }

  /** Puts `count` plain records on the open shard that owns `shardId`'s first hash key (a quiet shard's records after its quiet time). */
  produceTo(shardId: string, count: number): void {
    let hashKey: string | undefined;
    this.stream.listShards().subscribe((shards) => {
      hashKey = shards.find((s) => s.shardId === shardId)?.startingHashKey;
    });
    if (hashKey === undefined) return;
    const inputs = Array.from({ length: count }, () => {
      this.produced += 1;
      return { partitionKey: this.#key(), data: `r${this.produced}`, explicitHashKey: hashKey as string };
    });
    const now = this.now();
    for (const result of this.stream.putRecords(inputs)) this.checker.recordPut(result.shardId, result.sequenceNumber, now);
  }

  #key(): string {
    return `k${Math.floor(this.random() * this.config.partitionKeys)}`;
  }

  /** The hash-key ranges of the open shards that are quiet now; `undefined` when none is. */
  #quietShards(): (readonly [bigint, bigint])[] | undefined {
    const now = this.now();
    const quiet = new Set([...this.#quietUntil].filter(([, until]) => until > now).map(([shardId]) => shardId));
    if (quiet.size === 0) return undefined;
    let ranges: (readonly [bigint, bigint])[] = [];
    this.stream.listShards().subscribe((shards) => {
      ranges = shards.filter((s) => s.open && quiet.has(s.shardId)).map((s) => [BigInt(s.startingHashKey), BigInt(s.endingHashKey)] as const);
    });
    return ranges;
  }

  /** Draws the first key again while it lands on a quiet shard; `false` if it keeps landing there. */
  #redrawAway(keys: string[], quiet: readonly (readonly [bigint, bigint])[]): boolean {
    for (let draw = 0; draw < QUIET_REDRAWS; draw += 1) {
      const hash = BigInt(`0x${createHash('md5').update(keys[0] as string).digest('hex')}`);
      if (!quiet.some(([low, high]) => low <= hash && hash <= high)) return true;
      keys[0] = this.#key();
    }
    return false;
  }
}
