// Virtual time for whole-group simulations. RxJS's VirtualTimeScheduler re-sorts its whole queue
// at every schedule() (fine for a test with ten timers, hopeless with 2,000 shards polling), and
// runs every due timer without letting promises settle in between. This one keeps its actions in
// a binary heap ordered by (time, insertion), and lets the event loop settle between two distinct
// moments, so `await`-based code in the library interleaves with timers as it would in real time.
import { Subscription, type SchedulerAction, type SchedulerLike } from 'rxjs';

type Work<T> = (this: SchedulerAction<T>, state?: T) => void;

/** What the queue needs of an action. */
interface Queued {
  at: number;
  seq: number;
  generation: number;
  readonly closed: boolean;
  execute(): void;
}

/** One scheduled piece of work; rescheduling moves it (RxJS's periodic timers rely on that). */
class SimAction<T> extends Subscription implements SchedulerAction<T>, Queued {
  at = 0;
  seq = 0;
  /** Bumped at every (re)schedule: heap entries of an older generation are stale. */
  generation = 0;
  private state: T | undefined;
  private work: Work<T> | undefined;

  constructor(private readonly scheduler: SimScheduler, work: Work<T>) {
    super();
    this.work = work;
    // As RxJS's AsyncAction does (and clearTimeout): a cancelled timer keeps nothing reachable,
    // though its heap entry stays until its time comes (the memory kind counts what is reachable).
    this.add(() => {
      this.work = undefined;
      this.state = undefined;
    });
  }

  schedule(state?: T, delay = 0): Subscription {
    if (this.closed) return this;
    this.state = state;
    this.scheduler.enqueue(this, delay);
    return this;
  }

  execute(): void {
    if (this.closed || this.work === undefined) return;
    this.work.call(this, this.state);
  }
}

interface Entry {
  readonly at: number;
  readonly seq: number;
  readonly generation: number;
  readonly action: Queued;
}

/** Lets every promise continuation run (they are queued before the next macrotask). */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Actions at one moment before the run is declared a livelock (something reschedules itself at delay 0 forever). */
const MAX_ACTIONS_PER_MOMENT = 1_000_000;

/** The shared timeline: every client's timers, the producer, the schedule's commands. */
export class SimScheduler implements SchedulerLike {
  /** Distinct moments run so far (the simulation's steps). */
  steps = 0;
  /** Actions run so far. */
  actions = 0;
  #now: number;
  #seq = 0;
  readonly #heap: Entry[] = [];

  constructor(startMs: number) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  schedule<T>(work: Work<T>, delay = 0, state?: T): Subscription {
    return new SimAction<T>(this, work).schedule(state, delay);
  }

  /** @internal Used by the actions. */
  enqueue(action: Queued, delay: number): void {
    action.generation += 1;
    action.at = this.#now + (Number.isFinite(delay) && delay > 0 ? delay : 0);
    action.seq = this.#seq++;
    this.#push({ at: action.at, seq: action.seq, generation: action.generation, action });
  }

  /** When the next live action is due; `undefined` when nothing is scheduled. */
  nextAt(): number | undefined {
    return this.#peek()?.at;
  }

  /**
   * Runs every action due up to `targetMs`, moment by moment, settling promises before each
   * moment; calls `afterStep` after each. Ends with the clock at `targetMs`.
   */
  async runUntil(targetMs: number, afterStep?: () => void): Promise<void> {
    for (;;) {
      await settle();
      const next = this.#peek();
      if (next === undefined || next.at > targetMs) break;
      this.#now = next.at;
      this.#runMoment();
      this.steps += 1;
      afterStep?.();
    }
    if (targetMs > this.#now) this.#now = targetMs;
    await settle();
  }

  #runMoment(): void {
    let count = 0;
    for (let entry = this.#peek(); entry !== undefined && entry.at <= this.#now; entry = this.#peek()) {
      this.#pop();
      count += 1;
      if (count > MAX_ACTIONS_PER_MOMENT) throw new Error(`livelock: more than ${MAX_ACTIONS_PER_MOMENT} actions at ${this.#now}`);
      this.actions += 1;
      entry.action.execute();
    }
  }

  /** The first entry that is neither cancelled nor superseded by a reschedule. */
  #peek(): Entry | undefined {
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined) return undefined;
      if (!top.action.closed && top.generation === top.action.generation) return top;
      this.#pop();
    }
  }

  #push(entry: Entry): void {
    const heap = this.#heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(entry, heap[parent] as Entry)) break;
      heap[i] = heap[parent] as Entry;
      i = parent;
    }
    heap[i] = entry;
  }

  #pop(): Entry | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && before(heap[right] as Entry, heap[left] as Entry) ? right : left;
      if (!before(heap[child] as Entry, last)) break;
      heap[i] = heap[child] as Entry;
      i = child;
    }
    heap[i] = last;
    return top;
  }
}

function before(a: Entry, b: Entry): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/**
 * One process's view of the shared timeline: its wall clock (`now()`) may be off by `skewMs`,
 * its timers run on the shared timeline, and while it is frozen (SIGSTOP, a GC pause, a crash)
 * none of its timers runs: they are held and run, in order, when it thaws (never, for a crash).
 */
export class ClientClock implements SchedulerLike {
  #frozen = false;
  #dead = false;
  #held: Array<() => void> = [];
  /** What the wall clock's steps (an NTP step, a manual `date`) added up to so far. */
  #stepsMs = 0;

  /**
   * The same timers with `now()` on the shared timeline (the host's monotonic clock): what the
   * processing operators get, as production's `asyncScheduler` is timed on `HOST_CLOCK.elapsedNow`
   * by `schedulerClock` there. A frozen process holds these timers too.
   */
  readonly monotonic: SchedulerLike;

  constructor(private readonly base: SimScheduler, readonly skewMs = 0) {
    this.monotonic = {
      now: () => base.now(),
      schedule: <T>(work: Work<T>, delay?: number, state?: T): Subscription => this.schedule(work, delay, state),
    };
  }

  now(): number {
    return this.base.now() + this.skewMs + this.#stepsMs;
  }

  /** The wall clock jumps by `ms` (forward or back); timers stay on the shared timeline. */
  step(ms: number): void {
    this.#stepsMs += ms;
  }

  get frozen(): boolean {
    return this.#frozen;
  }

  schedule<T>(work: Work<T>, delay = 0, state?: T): Subscription {
    const hold = (action: SchedulerAction<T>, current: T | undefined): boolean => {
      if (this.#dead) return true;
      if (!this.#frozen) return false;
      this.#held.push(() => {
        if (!action.closed) work.call(action, current);
      });
      return true;
    };
    return this.base.schedule<T>(function (this: SchedulerAction<T>, current?: T) {
      if (!hold(this, current)) work.call(this, current);
    }, delay, state);
  }

  freeze(): void {
    this.#frozen = true;
  }

  /** Runs what was held, in order, as soon as the shared timeline moves on. */
  thaw(): void {
    if (!this.#frozen) return;
    this.#frozen = false;
    const held = this.#held;
    this.#held = [];
    for (const run of held) this.base.schedule(run, 0);
  }

  /** Frozen for good: what was held is dropped. */
  kill(): void {
    this.#frozen = true;
    this.#dead = true;
    this.#held = [];
  }
}
