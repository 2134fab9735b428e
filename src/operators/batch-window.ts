// One shard's records waiting for their batch, as pure state: a batch is cut when it is full
// (maxSize), when it cannot grow any more (the next record came under another lease), or when its
// first record has waited maxWaitMs — Lambda's BatchSize and MaximumBatchingWindowInSeconds.
import { Fifo } from './fifo.js';

/** What to do with a window while no batch of its shard runs. */
export type BatchDecision<T> =
  | { readonly kind: 'take'; readonly items: T[] }
  | { readonly kind: 'wait'; readonly untilMs: number }
  | { readonly kind: 'idle' };

interface Waiting<T> {
  readonly item: T;
  readonly atMs: number;
}

interface Segment {
  readonly group: unknown;
  count: number;
}

/** The records of one shard waiting for a batch, in arrival (sequence) order. */
export class BatchWindow<T> {
  private readonly waiting = new Fifo<Waiting<T>>();
  // Runs of consecutive items of one group: a batch never spans two.
  private readonly segments = new Fifo<Segment>();
  private last: Segment | undefined;

  /**
   * @param groupOf - Items of different groups (records of different leases) never share a batch.
   */
  constructor(private readonly maxSize: number, private readonly maxWaitMs: number, private readonly groupOf: (item: T) => unknown = () => undefined) {}

  /** Items waiting. */
  get length(): number {
    return this.waiting.length;
  }

  push(item: T, atMs: number): void {
    this.waiting.push({ item, atMs });
    const group = this.groupOf(item);
    if (this.last !== undefined && this.last.count > 0 && this.last.group === group) {
      this.last.count += 1;
      return;
    }
    this.last = { group, count: 1 };
    this.segments.push(this.last);
  }

  /** The next batch if it is due at `nowMs` (pass `Infinity` to flush), else until when to wait. */
  next(nowMs: number): BatchDecision<T> {
    const head = this.waiting.peek();
    const segment = this.segments.peek();
    if (head === undefined || segment === undefined) return { kind: 'idle' };
    const size = Math.min(segment.count, this.maxSize);
    const full = size === this.maxSize || this.segments.length > 1;
    const dueMs = head.atMs + this.maxWaitMs;
    if (!full && nowMs < dueMs) return { kind: 'wait', untilMs: dueMs };
    const items: T[] = [];
    for (let i = 0; i < size; i += 1) items.push((this.waiting.shift() as Waiting<T>).item);
    segment.count -= size;
    if (segment.count === 0) this.segments.shift();
    return { kind: 'take', items };
  }
}
