// What the Kinesis adapter learns of the stream's clock: the `Date` header of an answer, to the
// second, less 1 s for that resolution (src/ports/server-date.ts) — up to 2 s early. The in-memory
// stream and fan-out port tell their clock exactly; the simulation hands the library what the real
// adapter would, so the stated bound (START_BOUND_MS) is what is tested.
import { type Observable, map } from 'rxjs';
import type { IssuedIterator, RecordsPage, StreamPort } from '../../src/ports/stream.js';

/** `time` as the adapter reads it off a `Date` header. */
export function asDateHeader(time: Date | undefined): Date | undefined {
  return time === undefined ? undefined : new Date(Math.floor(time.getTime() / 1000) * 1000 - 1000);
}

/** `stream` with every GetShardIterator's and GetRecords' `streamTime` as the adapter would read it. */
export function dateHeaderStream(stream: StreamPort): StreamPort {
  return new Proxy(stream, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      const call = (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, args);
      if (property === 'getRecords') return (...args: unknown[]) => (call(...args) as Observable<RecordsPage>).pipe(map(withHeaderTime));
      if (property !== 'getShardIterator') return call;
      return (...args: unknown[]) => (call(...args) as Observable<IssuedIterator | string>).pipe(map((issued) => {
        // A bare iterator (a library from before streamTime, as the fix-reverted runs use) passes through.
        if (typeof issued === 'string') return issued;
        const streamTime = asDateHeader(issued.streamTime);
        return streamTime === undefined ? { shardIterator: issued.shardIterator } : { shardIterator: issued.shardIterator, streamTime };
      }));
    },
  });
}

/** A page whose `streamTime` is what the adapter reads off its answer's `Date` (absent when it had none). */
function withHeaderTime(page: RecordsPage): RecordsPage {
  const { streamTime, ...rest } = page;
  const header = asDateHeader(streamTime);
  return header === undefined ? rest : { ...rest, streamTime: header };
}
