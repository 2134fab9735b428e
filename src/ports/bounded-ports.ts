// Every call of a backend's ports bounded in time. The AWS adapters bound their own requests (see
// request-timeout.ts); a backend given to `new Kinsumer(options, backend)` — the in-memory stores, or a
// user's own ports — is bounded here, so a port that never answers is a transient fault there too.
import { isObservable } from 'rxjs';
import type { KinsumerPorts } from './backend.js';
import { type RequestBound, withinTimeout } from './request-timeout.js';
import type { FanOutPort, StreamPort } from './stream.js';

/**
 * The ports with every method that returns an Observable bounded by `bound`: no answer (no value,
 * no completion) within `bound.timeoutMs` errors with `RequestTimeoutError` and unsubscribes the
 * call. A SubscribeToShard is bounded until the service accepts it; its events are bounded by the
 * subscription's renewal instead (an idle shard sends none for minutes).
 */
export function boundPorts(ports: KinsumerPorts, bound: RequestBound): KinsumerPorts {
  return {
    ...ports,
    store: boundPort(ports.store, bound),
    membership: boundPort(ports.membership, bound),
    metadata: boundPort(ports.metadata, bound),
    stream: boundStream(ports.stream, bound),
  };
}

function boundStream(stream: StreamPort, bound: RequestBound): StreamPort {
  const bounded = boundPort(stream, bound);
  const { fanOut } = stream;
  if (fanOut === undefined) return bounded;
  const fanOutBounded: FanOutPort = boundPort(fanOut, bound);
  return new Proxy(bounded, {
    get: (target, property, receiver): unknown => (property === 'fanOut' ? fanOutBounded : Reflect.get(target, property, receiver)),
  });
}

/** `port` with each Observable its methods return piped through {@link withinTimeout}, named after the method. */
function boundPort<T extends object>(port: T, bound: RequestBound): T {
  return new Proxy(port, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        return isObservable(result) ? result.pipe(withinTimeout(String(property), bound)) : result;
      };
    },
  });
}
