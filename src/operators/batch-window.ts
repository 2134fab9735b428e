// One shard's records waiting for their batch, as pure state: a batch is cut when it is full
// (maxSize), when it cannot grow any more (the next record came under another lease, or must be
// handled alone), or when its first record has waited maxWaitMs — Lambda's BatchSize and
// MaximumBatchingWindowInSeconds. A record that must be handled alone (an earlier session
// delivered it: §9.3) is a batch of its own.
import { Fifo } from './fifo.js';

/** What to do with a window while no batch of its shard runs. */
export type BatchDecision<T> =
  | { readonly kind: 'take'; readonly items: T[] }
  | { readonly kind: 'wait'; readonly untilMs: number }
  | { readonly kind: 'idle' };

interface Waiting<T> {
  readonly item: T;
  readonly atMs: number;
  readonly alone: boolean;
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
  // Items waiting that must be handled alone (none, usually: the window is not scanned for them then).
  private aloneWaiting = 0;

  /**
   * @param groupOf - Items of different groups (records of different leases) never share a batch.
   * @param alone - Items that must be handled alone: each is a batch of its own.
   */
  constructor(
    private readonly maxSize: number, private readonly maxWaitMs: number,
    private readonly groupOf: (item: T) => unknown = () => undefined, private readonly alone: (item: T) => boolean = () => false,
  ) {}

  /** Items waiting. */
  get length(): number {
    return this.waiting.length;
  }

  push(item: T, atMs: number): void {
    const alone = this.alone(item);
    if (alone) this.aloneWaiting += 1;
    this.waiting.push({ item, atMs, alone });
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
    let size = Math.min(segment.count, this.maxSize);
    let full = size === this.maxSize || this.segments.length > 1;
    for (let i = 0; this.aloneWaiting > 0 && i < size; i += 1) {
      if (!(this.waiting.at(i) as Waiting<T>).alone) continue;
      size = Math.max(1, i);
      full = true;
    }
    const dueMs = head.atMs + this.maxWaitMs;
    if (!full && nowMs < dueMs) return { kind: 'wait', untilMs: dueMs };
    const items: T[] = [];
    for (let i = 0; i < size; i += 1) {
      const taken = this.waiting.shift() as Waiting<T>;
      if (taken.alone) this.aloneWaiting -= 1;
      items.push(taken.item);
    }
    segment.count -= size;
    if (segment.count === 0) this.segments.shift();
    return { kind: 'take', items };
  }
}
