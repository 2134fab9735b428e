// Which of one shard's queued records may start now, as pure state: records of one lane (the whole
// shard, or one partition key) run one at a time in arrival order; at most `concurrency` run at
// once; among the lanes free to start, the one whose next record arrived first goes first, so the
// oldest records — the ones holding the checkpoint watermark back — are never starved by newer keys.
import { Fifo } from './fifo.js';

interface Queued<T> {
  readonly item: T;
  /** Arrival order within this queue. */
  readonly seq: number;
}

interface Lane<T> {
  readonly key: string;
  readonly queue: Fifo<Queued<T>>;
  busy: boolean;
}

/** A record taken from a {@link LaneQueue}: hand it back to {@link LaneQueue.release} when it is settled. */
export interface Started<T> {
  readonly item: T;
  /** @internal the lane it holds, `undefined` without lanes */
  readonly lane: object | undefined;
}

/** Options of {@link LaneQueue}. */
export interface LaneQueueOptions<T> {
  /** Most items started and not yet released. */
  readonly concurrency: number;
  /** The lane of an item (one at a time per lane, in arrival order); without it, items only queue for a slot. */
  readonly laneOf?: (item: T) => string;
}

/** The queue of one shard's records waiting for a slot and for their lane. */
export class LaneQueue<T> {
  private readonly concurrency: number;
  private readonly laneOf: ((item: T) => string) | undefined;
  private readonly lanes = new Map<string, Lane<T>>();
  // Lanes that are free and have a queued record, ordered by that record's arrival.
  private readonly ready: Lane<T>[] = [];
  // Without lanes: every queued record, in arrival order.
  private readonly waiting = new Fifo<Queued<T>>();
  private seq = 0;
  private started = 0;
  private count = 0;

  constructor(options: LaneQueueOptions<T>) {
    this.concurrency = options.concurrency;
    this.laneOf = options.laneOf;
  }

  /** Items started and not yet released. */
  get running(): number {
    return this.started;
  }

  /** Items waiting to start. */
  get queued(): number {
    return this.count;
  }

  /** Nothing queued, nothing running. */
  get idle(): boolean {
    return this.started === 0 && this.count === 0;
  }

  enqueue(item: T): void {
    const queued = { item, seq: this.seq++ };
    this.count += 1;
    if (this.laneOf === undefined) {
      this.waiting.push(queued);
      return;
    }
    const key = this.laneOf(item);
    let lane = this.lanes.get(key);
    if (lane === undefined) {
      lane = { key, queue: new Fifo(), busy: false };
      this.lanes.set(key, lane);
    }
    lane.queue.push(queued);
    if (!lane.busy && lane.queue.length === 1) this.pushReady(lane);
  }

  /** The oldest item that may start now (its slot and its lane are taken), or `undefined`. */
  take(): Started<T> | undefined {
    if (this.started >= this.concurrency) return undefined;
    let queued: Queued<T> | undefined;
    let lane: Lane<T> | undefined;
    if (this.laneOf === undefined) {
      queued = this.waiting.shift();
    } else {
      lane = this.popReady();
      if (lane !== undefined) {
        queued = lane.queue.shift();
        lane.busy = true;
      }
    }
    if (queued === undefined) return undefined;
    this.count -= 1;
    this.started += 1;
    return { item: queued.item, lane };
  }

  /** Frees the slot and the lane of a started item: the lane's next item becomes startable. */
  release(started: Started<T>): void {
    this.started -= 1;
    const lane = started.lane as Lane<T> | undefined;
    if (lane === undefined) return;
    lane.busy = false;
    if (lane.queue.length > 0) this.pushReady(lane);
    else this.lanes.delete(lane.key);
  }

  // A binary min-heap of lanes keyed by their head's arrival.
  private headSeq(lane: Lane<T>): number {
    return (lane.queue.peek() as Queued<T>).seq;
  }

  private pushReady(lane: Lane<T>): void {
    const heap = this.ready;
    heap.push(lane);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.headSeq(heap[parent] as Lane<T>) <= this.headSeq(lane)) break;
      heap[i] = heap[parent] as Lane<T>;
      i = parent;
    }
    heap[i] = lane;
  }

  private popReady(): Lane<T> | undefined {
    const heap = this.ready;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    const seq = this.headSeq(last);
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && this.headSeq(heap[right] as Lane<T>) < this.headSeq(heap[left] as Lane<T>) ? right : left;
      if (this.headSeq(heap[child] as Lane<T>) >= seq) break;
      heap[i] = heap[child] as Lane<T>;
      i = child;
    }
    heap[i] = last;
    return top;
  }
}
