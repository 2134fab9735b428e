// Whose connections kinsumer's calls of one service travel on: its own keep-alive ones, or the
// application's request handler's. The decision is pure (planConnections); what it decides from is
// read off the client's handler by inspectHandler, duck-typed so that no SDK module is imported.
//
// The rule: a stock handler of the SDK with no connection settings of the application's
// (`new KinesisClient({})`'s HTTP/2 handler, which opens a TLS session per call; a bare
// `new NodeHttpHandler()`) has nothing to lose, so kinsumer's own connections replace it for
// kinsumer's calls — except fan-out subscriptions, which keep the client's HTTP/2 session. A handler
// the application configured (its agent, proxy, TLS or HTTP/2 connect options) is used as it is;
// when that one opens a connection per call, kinsumer says so once, naming the fix.

/** The services kinsumer calls. */
export type ServiceName = 'kinesis' | 'dynamodb';

/** What kinsumer needs to know about a client's request handler. */
export type HandlerFacts =
  /** The SDK's `NodeHttp2Handler`. */
  | {
    readonly kind: 'h2';
    /** `disableConcurrentStreams: true` (the Kinesis client's default): a new session, so a new TLS connection, per call. */
    readonly sessionPerCall: boolean;
    /** The application gave it connect options (TLS, a proxy's socket). */
    readonly custom: boolean;
  }
  /** The SDK's `NodeHttpHandler`. */
  | {
    readonly kind: 'http1';
    /** Its agents keep connections alive. */
    readonly keepAlive: boolean;
    /** The application gave it an agent, or agent options. */
    readonly custom: boolean;
  }
  /** Any other handler (fetch, a handler of the application's own): used as it is. */
  | { readonly kind: 'other' };

/** Where a service's calls go. */
export interface ConnectionPlan {
  /** `'own'`: kinsumer's keep-alive connections; `'client'`: the client's own request handler. */
  readonly route: 'own' | 'client';
  /** Set when the client's handler opens a connection per call and kinsumer must use it: the `warning` event's message. */
  readonly warning?: string;
}

const CLIENT: Readonly<Record<ServiceName, string>> = { kinesis: 'KinesisClient', dynamodb: 'DynamoDBClient' };

/** The plan for a handler of these facts. */
export function planConnections(service: ServiceName, facts: HandlerFacts): ConnectionPlan {
  const client = CLIENT[service];
  switch (facts.kind) {
    case 'h2':
      if (!facts.custom) return { route: 'own' };
      return facts.sessionPerCall
        ? {
          route: 'client',
          warning: `the ${client}'s request handler opens an HTTP/2 session, a TLS connection, for every call (disableConcurrentStreams: true), `
            + 'and has connect options of the application\'s, so kinsumer sends through it: give the client '
            + '`requestHandler: new NodeHttpHandler({ httpsAgent: new https.Agent({ keepAlive: true }) })` (@smithy/node-http-handler), '
            + 'or `new NodeHttp2Handler({ disableConcurrentStreams: false, ... })`',
        }
        : { route: 'client' };
    case 'http1':
      if (!facts.custom) return { route: 'own' };
      return facts.keepAlive
        ? { route: 'client' }
        : {
          route: 'client',
          warning: `the ${client}'s request handler opens a connection for every call (its agent has keepAlive: false), so does every call kinsumer sends through it: `
            + 'give its agent `keepAlive: true`',
        };
    case 'other':
      return { route: 'client' };
  }
}

/** A `NodeHttpHandler` / `NodeHttp2Handler` as far as kinsumer reads it. */
interface InspectedHandler {
  readonly metadata?: { readonly handlerProtocol?: unknown };
  /** Both handlers resolve their options into this Promise when built. */
  readonly configProvider?: Promise<unknown>;
  /** `NodeHttpHandler`: `true` when the application gave it an agent instance. */
  readonly externalAgent?: unknown;
}

interface AgentLike {
  readonly keepAlive?: unknown;
  readonly options?: Record<string, unknown>;
}

// What the SDK's NodeHttpHandler puts in an agent it makes (keepAlive, maxSockets) and what
// Node's Agent adds itself: any other option is the application's.
const STOCK_AGENT_OPTIONS = new Set(['keepAlive', 'maxSockets', 'noDelay', 'path']);

function customAgent(agent: unknown): boolean {
  const options = (agent as AgentLike | undefined)?.options;
  if (options === undefined) return true;
  if (options.maxSockets !== 50 || options.keepAlive !== true) return true;
  return Object.keys(options).some((key) => !STOCK_AGENT_OPTIONS.has(key));
}

/** Reads the facts off a client's `config.requestHandler`; anything unrecognised (or failing to resolve) is `'other'`. */
export async function inspectHandler(handler: unknown): Promise<HandlerFacts> {
  try {
    return await factsOf(handler);
  } catch {
    return { kind: 'other' };
  }
}

async function factsOf(handler: unknown): Promise<HandlerFacts> {
  if (typeof handler !== 'object' || handler === null) return { kind: 'other' };
  const { metadata, configProvider } = handler as InspectedHandler;
  if (configProvider === undefined || typeof (configProvider as { then?: unknown }).then !== 'function') return { kind: 'other' };
  const protocol = metadata?.handlerProtocol;
  if (protocol === 'h2') {
    const config = (await configProvider) as { disableConcurrentStreams?: unknown; nodeHttp2ConnectOptions?: unknown } | undefined;
    return { kind: 'h2', sessionPerCall: config?.disableConcurrentStreams === true, custom: config?.nodeHttp2ConnectOptions !== undefined };
  }
  if (protocol === 'http/1.1') {
    const config = (await configProvider) as { httpsAgent?: AgentLike; httpAgentProvider?: () => Promise<AgentLike> } | undefined;
    const httpsAgent = config?.httpsAgent;
    const httpAgent = await config?.httpAgentProvider?.();
    // Read after the agents were made: making them is what sets it.
    const custom = (handler as InspectedHandler).externalAgent === true || customAgent(httpsAgent) || customAgent(httpAgent);
    return { kind: 'http1', keepAlive: httpsAgent?.keepAlive !== false && httpAgent?.keepAlive !== false, custom };
  }
  return { kind: 'other' };
}
