// The queue under both operators: the lanes of processRecords and the batch window of processBatches.

/** A first-in first-out queue whose shift is O(1) (Array#shift is O(n) on a long backlog). */
export class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  /** The item `index` places after the first (0: the first), without taking it. */
  at(index: number): T | undefined {
    return this.items[this.head + index];
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head] as T;
    // Handed out: the queue must not keep it reachable (a record and its payload) until it compacts.
    (this.items as (T | undefined)[])[this.head] = undefined;
    this.head += 1;
    // Drop the consumed prefix once it is most of the array: amortised O(1), memory stays bounded.
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}
