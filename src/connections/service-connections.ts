// One service's connections for one Kinsumer: the plan (kinsumer's own connections, or the
// client's handler), decided once from the client's handler, and kinsumer's own keep-alive
// connections when the plan says so. Calls sent through the SDK take them by a middleware on the
// command's own stack (never the application's client), innermost, where the SDK's handler would send.
import type { Readable } from 'node:stream';
import { type ConnectionPlan, type ServiceName, inspectHandler, planConnections } from './handler-plan.js';
import { LeanCall, type SigningClient } from './lean-call.js';
import { type ConnectionCounts, OwnConnections, type WireRequest, type WireResponse } from './own-connections.js';

/** Sends a signed request and gives the whole answer: kinsumer's own connections, or the client's handler. */
export type Transport = (request: WireRequest, signal: AbortSignal) => Promise<WireResponse>;

/** The client as far as its handler and its signing go (both SDK v3 clients). */
export interface ClientWithHandler extends SigningClient {
  readonly config?: SigningClient['config'] & { readonly requestHandler?: unknown };
}

/** Where one service's calls go, and what kinsumer opened for them. */
export class ServiceConnections {
  #plan: Promise<ConnectionPlan> | undefined;
  #own: OwnConnections | undefined;
  #transport: Transport | undefined;
  readonly #lean = new Map<string, Promise<LeanCall>>();

  constructor(readonly service: ServiceName, private readonly client: ClientWithHandler) {}

  /** Decided once, at the first call (or at start, to say its warning). */
  plan(): Promise<ConnectionPlan> {
    // A stand-in for a client (a test's wrapper, say) may have no config: its calls go through it.
    const handler = this.client.config?.requestHandler;
    this.#plan ??= inspectHandler(handler).then((facts) => {
      const plan = planConnections(this.service, facts);
      const own = plan.route === 'own' ? new OwnConnections() : undefined;
      this.#own = own;
      // A request kinsumer builds itself passes no middleware: only when the application added none
      // to the client (its tracing, its metrics, a test's faults see every call otherwise).
      if (!bareStack(this.client)) return plan;
      if (own !== undefined) this.#transport = (request, signal) => own.send(request, signal);
      // One of the SDK's own handlers, configured by the application: it takes a request built by
      // kinsumer as it takes the SDK's. A handler of any other kind only ever gets the SDK's.
      else if (facts.kind !== 'other') this.#transport = handlerTransport(handler as RequestHandler);
      return plan;
    });
    return this.#plan;
  }

  /** kinsumer's own connections, or `undefined` when the calls go through the client's handler. */
  async own(): Promise<OwnConnections | undefined> {
    await this.plan();
    return this.#own;
  }

  /**
   * How a request kinsumer built goes out (a lean call's); `undefined` when every call must go
   * through the SDK: a handler kinsumer does not know, or middleware of the application's.
   */
  async transport(): Promise<Transport | undefined> {
    await this.plan();
    return this.#transport;
  }

  /** The lean calls of one operation (one per operation: each learns its own request). */
  lean(operation: string): Promise<LeanCall> {
    let lean = this.#lean.get(operation);
    if (lean === undefined) {
      lean = this.transport().then((transport) => new LeanCall(this.client, transport));
      this.#lean.set(operation, lean);
    }
    return lean;
  }

  /** What kinsumer opened; `undefined` while undecided or when the client's handler carries the calls (its connections are not kinsumer's to see). */
  counts(): ConnectionCounts | undefined {
    return this.#own?.counts();
  }

  /** Closes kinsumer's own connections (the client stopped); calls after it open new ones. */
  destroy(): void {
    this.#own?.destroy();
  }
}

/** A client's middleware stack, as far as naming its entries goes. */
interface StackedClient {
  readonly middlewareStack?: { identify?: () => string[] };
  destroy?: () => void;
}

/**
 * `true` when the client's middleware stack holds nothing that a new client of its class does not
 * hold: no middleware of the application's would miss a call kinsumer sends itself. Anything
 * unexpected (no stack to read, a class that will not build) counts as the application's.
 */
export function bareStack(client: object): boolean {
  const entries = (client as StackedClient).middlewareStack?.identify?.();
  if (entries === undefined) return false;
  let fresh: StackedClient | undefined;
  try {
    const Client = client.constructor as new (config: object) => StackedClient;
    fresh = new Client({ region: 'us-east-1', credentials: { accessKeyId: 'kinsumer', secretAccessKey: 'kinsumer' } });
    const stock = new Map<string, number>();
    for (const entry of fresh.middlewareStack?.identify?.() ?? []) stock.set(entry, (stock.get(entry) ?? 0) + 1);
    for (const entry of entries) {
      const left = stock.get(entry) ?? 0;
      if (left === 0) return false;
      stock.set(entry, left - 1);
    }
    return true;
  } catch {
    return false;
  } finally {
    fresh?.destroy?.();
  }
}

/** The SDK's `HttpHandler` interface, as far as sending goes. */
interface RequestHandler {
  handle(request: WireRequest, options: { abortSignal: AbortSignal }): Promise<{ response: { statusCode: number; headers: Record<string, string>; body?: unknown } }>;
}

function handlerTransport(handler: RequestHandler): Transport {
  return async (request, signal) => {
    const { response } = await handler.handle(request, { abortSignal: signal });
    const chunks: Buffer[] = [];
    const { body } = response;
    if (body instanceof Uint8Array) chunks.push(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
    else if (typeof body === 'object' && body !== null && Symbol.asyncIterator in body) for await (const chunk of body as Readable) chunks.push(chunk as Buffer);
    return { statusCode: response.statusCode, headers: response.headers, chunks };
  };
}

type Next = (args: unknown) => Promise<{ response: unknown; output?: unknown }>;
type Middleware = (next: Next) => (args: unknown) => Promise<{ response: unknown; output?: unknown }>;

/** An AWS SDK v3 command, as far as adding a middleware to its own stack goes. */
export interface CommandWithStack {
  readonly middlewareStack: {
    add(middleware: never, options: { readonly step: 'build'; readonly priority: 'low'; readonly name: string }): void;
    add(middleware: never, options: { readonly step: 'deserialize'; readonly priority: 'low'; readonly name: string }): void;
  };
}

/** The answer as the SDK's deserializers take it (`HttpResponse`'s shape, the body in bytes). */
export function sdkResponse(answer: WireResponse): { statusCode: number; headers: Record<string, string>; body: Uint8Array } {
  const { chunks } = answer;
  return { statusCode: answer.statusCode, headers: answer.headers, body: chunks.length === 1 ? chunks[0] as Buffer : Buffer.concat(chunks) };
}

/** The first attempt's outcome, had already (a lean call's): given to the SDK instead of sending. */
export type Replay = { readonly answer: WireResponse } | { readonly error: unknown };

/** What {@link lastHop} does with a command's requests. */
export interface Hop {
  /** Send on kinsumer's own connections; absent: through the client's handler. */
  readonly own?: OwnConnections | undefined;
  readonly signal: AbortSignal;
  /** Sees every signed request before it goes (a lean call learns from one). */
  readonly learn?: ((request: unknown) => void) | undefined;
  /** The first attempt: answered (or failed) with this instead of being sent; retries are sent. */
  readonly replay?: Replay | undefined;
}

/**
 * A middleware innermost in `command`'s deserialize step — after the signing, the retries and every
 * `after deserializerMiddleware` — where the SDK hands the signed request to its handler: it sends
 * it on `hop.own` instead (each retry too), lets `hop.learn` see it, and answers the first attempt
 * with `hop.replay` when given. Nothing is added when there is nothing to do.
 */
export function lastHop(command: CommandWithStack, hop: Hop): void {
  const { own, signal, learn } = hop;
  let replay = hop.replay;
  if (own === undefined && learn === undefined && replay === undefined) return;
  // A client with an HTTP/2 handler signs `:authority` where HTTP/1.1 sends `host`: the request is
  // made with `host` (before it is signed) when it goes on kinsumer's HTTP/1.1 connections.
  if (own !== undefined) command.middlewareStack.add(hostHeader as never, { step: 'build', priority: 'low', name: 'kinsumerHostHeader' });
  const middleware: Middleware = (next) => async (args) => {
    const { request } = args as { request: WireRequest };
    learn?.(request);
    if (replay !== undefined) {
      const first = replay;
      replay = undefined;
      if ('error' in first) throw first.error;
      return { response: sdkResponse(first.answer) };
    }
    // Signed for HTTP/2 after all (the SDK's steps in another order): its own handler sends it as signed.
    return own === undefined || ':authority' in request.headers ? next(args) : { response: sdkResponse(await own.send(request, signal)) };
  };
  command.middlewareStack.add(middleware as never, { step: 'deserialize', priority: 'low', name: 'kinsumerLastHop' });
}

/** A build-step middleware: `:authority` (the SDK's for HTTP/2 handlers) becomes `host`. */
const hostHeader: Middleware = (next) => (args) => {
  const headers = (args as { request?: { headers?: Record<string, string> } }).request?.headers;
  const authority = headers?.[':authority'];
  if (headers !== undefined && authority !== undefined) {
    delete headers[':authority'];
    headers.host = authority;
  }
  return next(args);
};
