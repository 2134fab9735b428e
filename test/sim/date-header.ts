// What the Kinesis adapter learns of the stream's clock: the `Date` header of an answer, to the
// second, less 1 s for that resolution (src/ports/server-date.ts) — up to 2 s early. The in-memory
// stream and fan-out port tell their clock exactly; the simulation hands the library what the real
// adapter would, so the stated bound (START_BOUND_MS) is what is tested.
import { type Observable, map } from 'rxjs';
import type { IssuedIterator, StreamPort } from '../../src/ports/stream.js';

/** `time` as the adapter reads it off a `Date` header. */
export function asDateHeader(time: Date | undefined): Date | undefined {
  return time === undefined ? undefined : new Date(Math.floor(time.getTime() / 1000) * 1000 - 1000);
}

/** `stream` with every GetShardIterator's `streamTime` as the adapter would read it. */
export function dateHeaderStream(stream: StreamPort): StreamPort {
  return new Proxy(stream, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (property !== 'getShardIterator' || typeof value !== 'function') return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      return (...args: unknown[]) => ((value as (...a: unknown[]) => Observable<IssuedIterator | string>).apply(target, args)).pipe(map((issued) => {
        // A bare iterator (a library from before streamTime, as the fix-reverted runs use) passes through.
        if (typeof issued === 'string') return issued;
        const streamTime = asDateHeader(issued.streamTime);
        return streamTime === undefined ? { shardIterator: issued.shardIterator } : { shardIterator: issued.shardIterator, streamTime };
      }));
    },
  });
}
