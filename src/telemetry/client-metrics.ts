// One client's OpenTelemetry metrics. Counts that change per record (delivered, acked) and the
// per-shard gauges are read when the reader collects (observable instruments fed by status() and
// the shard tallies), so recording costs nothing on the record path; checkpoints and AWS retries
// are counted from the events as they happen.
import { packageVersion } from './package-version.js';
import type { Attributes, BatchObservableResult, Counter, Meter } from '@opentelemetry/api';
import type { ShardCount } from '../checkpoint/shard-tally.js';
import type { KinsumerEvent, KinsumerStatus } from '../types.js';
import { ATTRIBUTE, METRIC, SCOPE } from './names.js';
import type { OtelApiModule } from './otel-api.js';
import type { MeterProviderLike } from './providers.js';

/** What the metrics read at each collection. */
export interface MetricsSource {
  /** The client's `status()`. */
  status(): KinsumerStatus;
  /** Per shard held so far: records delivered and acked. */
  counts(): readonly ShardCount[];
}

/** The instruments of one client, registered on its meter until {@link ClientMetrics.close}. */
export class ClientMetrics {
  readonly #checkpoints: Counter;
  readonly #retries: Counter;
  readonly #stream: Attributes;
  readonly #streamOf: (shardId: string) => string;
  /** Every stream a lease was held of (the group's one stream from the start): a stream's gauge of leases held drops to 0, it does not vanish. */
  readonly #streams = new Set<string>();
  readonly #byShard = new Map<string, Attributes>();
  // The live client until close(); then only its final figures, so a meter that nobody collects
  // from (an unscraped pull exporter) does not keep a stopped client reachable through status().
  #source: MetricsSource | undefined;
  #final: { readonly status: KinsumerStatus; readonly counts: readonly ShardCount[] } | undefined;

  /**
   * @param stream - The group's one stream (`kinsumer.stream` of every metric); `undefined` in a
   *   group that reads `streams`, whose metrics carry each shard's stream (`streamOf`).
   */
  constructor(api: OtelApiModule, provider: MeterProviderLike | undefined, stream: string | undefined, streamOf: (shardId: string) => string, source: MetricsSource) {
    this.#source = source;
    const meter = (provider === undefined ? api.metrics.getMeterProvider() : provider).getMeter(SCOPE, packageVersion()) as Meter;
    this.#stream = stream === undefined ? {} : { [ATTRIBUTE.stream]: stream };
    this.#streamOf = streamOf;
    if (stream !== undefined) this.#streams.add(stream);
    this.#checkpoints = meter.createCounter(METRIC.checkpoints, { description: 'Checkpoints written (commits and releases that stored a position)', unit: '{checkpoint}' });
    this.#retries = meter.createCounter(METRIC.retries, { description: 'AWS requests retried after a transient fault', unit: '{retry}' });
    const delivered = meter.createObservableCounter(METRIC.delivered, { description: 'Records emitted to the application', unit: '{record}' });
    const acked = meter.createObservableCounter(METRIC.acked, { description: 'Records acked while their lease lasted', unit: '{record}' });
    const behind = meter.createObservableGauge(METRIC.millisBehindLatest, { description: 'How far the last read of the shard was behind its tip (MillisBehindLatest)', unit: 'ms' });
    const pending = meter.createObservableGauge(METRIC.pending, { description: 'Records emitted and not yet under the checkpoint', unit: '{record}' });
    const leases = meter.createObservableGauge(METRIC.leasesHeld, { description: 'Shard leases this client holds', unit: '{lease}' });
    const observe = (result: BatchObservableResult): void => {
      const { status, counts } = this.#figures();
      const held = new Set<string>();
      for (const shard of status.shards) {
        held.add(shard.shardId);
        const attributes = this.#shard(shard.shardId);
        if (shard.millisBehindLatest !== undefined) result.observe(behind, shard.millisBehindLatest, attributes);
        result.observe(pending, shard.pending, attributes);
      }
      const perStream = new Map([...this.#streams].map((name) => [name, 0]));
      for (const shard of status.shards) perStream.set(this.#streamOf(shard.shardId), (perStream.get(this.#streamOf(shard.shardId)) ?? 0) + 1);
      for (const [name, count] of perStream) {
        this.#streams.add(name);
        result.observe(leases, count, { [ATTRIBUTE.stream]: name });
      }
      for (const count of counts) {
        const attributes = this.#shard(count.shardId);
        result.observe(delivered, count.delivered, attributes);
        result.observe(acked, count.acked, attributes);
        // The SDK keeps reporting the last value of a series nobody observes any more: a shard
        // given up shows nothing pending here rather than what was pending when it left.
        if (!held.has(count.shardId)) result.observe(pending, 0, attributes);
      }
      // Closed: this was the final observation (no lease held, the final totals); the next
      // collection finds the instruments gone.
      if (this.#final !== undefined) queueMicrotask(() => meter.removeBatchObservableCallback(observe, instruments));
    };
    const instruments = [delivered, acked, behind, pending, leases];
    meter.addBatchObservableCallback(observe, instruments);
  }

  /** Counts what an event tells: a checkpoint written, an AWS request retried. */
  observe(event: KinsumerEvent): void {
    if ((event.type === 'checkpoint' || event.type === 'lease-released') && event.checkpoint !== undefined) {
      this.#checkpoints.add(1, this.#shard(event.shardId));
    } else if (event.type === 'retrying') {
      const base = event.shardId === undefined ? this.#stream : this.#shard(event.shardId);
      this.#retries.add(1, { ...base, [ATTRIBUTE.operation]: event.operation });
    }
  }

  /**
   * The client stopped: its final figures are taken now, and the client let go. The next
   * collection reports them (no lease held, nothing pending, the final totals); then the client
   * observes nothing more (the SDK goes on exporting those final values; a new client of the same
   * shards in this process reports its own).
   */
  close(): void {
    if (this.#source === undefined) return;
    this.#final = { status: this.#source.status(), counts: this.#source.counts().map((count) => ({ ...count })) };
    this.#source = undefined;
  }

  #figures(): { readonly status: KinsumerStatus; readonly counts: readonly ShardCount[] } {
    const source = this.#source;
    return this.#final ?? { status: (source as MetricsSource).status(), counts: (source as MetricsSource).counts() };
  }

  #shard(shardId: string): Attributes {
    let attributes = this.#byShard.get(shardId);
    if (attributes === undefined) {
      attributes = { [ATTRIBUTE.stream]: this.#streamOf(shardId), [ATTRIBUTE.shardId]: shardId };
      this.#byShard.set(shardId, attributes);
    }
    return attributes;
  }
}
