// One operation of an AWS JSON service (Kinesis, DynamoDB) sent the lean way: the SDK builds, signs
// and sends the first call of the client (its endpoint rules — account-based endpoints, FIPS, a
// custom endpoint —, its region, its signing scope, its user agent); kinsumer keeps what that request
// looked like and sends the next ones the same way itself: the JSON body, the client's own
// credentials and clock offset, SigV4 (sigv4.ts), over kinsumer's connections or the client's
// handler. No middleware stack, no serializer, no per-call endpoint resolution. What goes wrong (an
// error status, a dropped connection, an answer not as expected) is handed back to the SDK as its
// own first attempt (leanOrSdk), so errors and retries stay exactly the SDK's.
//
// No run-time import of the SDK here: the request it learns from is read by its shape.
import type { WireRequest, WireResponse } from './own-connections.js';
import type { Hop, Replay, Transport } from './service-connections.js';
import { type SigningCredentials, type SigningScope, JsonSigner, plainPath } from './sigv4.js';

/** The client, as far as signing goes (both SDK v3 clients' resolved config; a stand-in may have none). */
export interface SigningClient {
  readonly config?: {
    /** The client's credentials provider (memoized by the SDK). */
    readonly credentials?: unknown;
    /** What the SDK adds to this host's clock when it signs (it learns it from the service's `Date`). */
    readonly systemClockOffset?: unknown;
  };
}

/** What the SDK's request for the operation looked like, but for what changes per call. */
interface CallTemplate {
  readonly protocol: string;
  readonly hostname: string;
  readonly port: number | undefined;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly scope: SigningScope;
}

// Made per call (by the SDK, and so by the signer here), or optional: not part of the template.
const PER_CALL = new Set([
  'authorization', 'x-amz-date', 'x-amz-security-token', 'x-amz-content-sha256', 'content-length',
  'amz-sdk-invocation-id', 'amz-sdk-request',
]);

const SCOPE = /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request,/;

/**
 * The template of a signed request as the SDK's handler gets it, or `null` when this request
 * cannot be sent the lean way (not SigV4, a query, a path SigV4 would rewrite, no host).
 */
export function templateOf(request: unknown): CallTemplate | null {
  const { protocol, hostname, port, path, query, headers, method } = request as Partial<WireRequest>;
  if (method !== 'POST' || typeof protocol !== 'string' || typeof hostname !== 'string' || typeof path !== 'string') return null;
  if (query !== undefined && Object.keys(query).length > 0) return null;
  if (!plainPath(path) || headers === undefined) return null;
  const kept: Record<string, string> = {};
  let scope: SigningScope | undefined;
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (lower === 'authorization') {
      const match = SCOPE.exec(value);
      if (match?.[1] !== undefined && match[2] !== undefined) scope = { region: match[1], service: match[2] };
    } else if (!PER_CALL.has(lower)) {
      kept[lower] = value;
    }
  }
  // The host it was signed for: `host`, or `:authority` for an HTTP/2 handler (sent through it as signed).
  if (scope === undefined || (kept.host === undefined && kept[':authority'] === undefined)) return null;
  return { protocol, hostname, port: typeof port === 'number' ? port : undefined, path, headers: kept, scope };
}

/** One operation's lean calls. */
export class LeanCall {
  // undefined: nothing learned yet; null: this client's requests cannot go the lean way.
  #template: CallTemplate | null | undefined;
  readonly #signer = new JsonSigner();
  // The client's identity as its provider last gave it, asked again when it expires within five
  // minutes: when the SDK's own memoized provider would give a new one (it keeps one that never expires).
  #identity: Identity | undefined;

  constructor(private readonly client: SigningClient, private readonly transport: Transport | undefined) {}

  /** `true` once a request of the SDK's was learned and can be sent the lean way. */
  get ready(): boolean {
    return this.#template !== undefined && this.#template !== null && this.transport !== undefined && typeof this.client.config?.credentials === 'function';
  }

  /** Learns from a signed request of the SDK's for this operation (the first one is enough). */
  learn(request: unknown): void {
    if (this.#template === undefined) this.#template = templateOf(request);
  }

  /**
   * Sends `body` (the operation's JSON input), signed now with the client's credentials. Only
   * when {@link ready}. Rejects with what the credentials provider or the connection rejects with.
   */
  async send(body: string, signal: AbortSignal): ReturnType<Transport> {
    const template = this.#template;
    const transport = this.transport;
    if (template === undefined || template === null || transport === undefined) throw new Error('LeanCall.send before it is ready');
    const credentials = this.#fresh(this.#identity) ?? (this.#identity = await (this.client.config?.credentials as () => Promise<SigningCredentials>)());
    const offset = this.client.config?.systemClockOffset;
    const date = new Date(Date.now() + (typeof offset === 'number' ? offset : 0));
    const headers = this.#signer.sign({ path: template.path, headers: template.headers, body }, template.scope, credentials, date);
    return transport({ protocol: template.protocol, hostname: template.hostname, port: template.port, method: 'POST', path: template.path, headers, body }, signal);
  }

  #fresh(identity: Identity | undefined): SigningCredentials | undefined {
    if (identity === undefined) return undefined;
    const expiresAt = identity.expiration?.getTime();
    return expiresAt === undefined || expiresAt - Date.now() > IDENTITY_REFRESH_MS ? identity : undefined;
  }
}

/** An identity as the SDK's credential providers give it. */
type Identity = SigningCredentials & { readonly expiration?: Date };

/** The SDK refreshes an identity this long before it expires. */
const IDENTITY_REFRESH_MS = 300_000;

/**
 * One call the lean way when `lean` is ready: `decode` makes the result of a successful answer
 * (`undefined` when the answer is not what it expects). Else — not ready yet, an error status, a
 * dropped connection, an answer `decode` refused — `sdk` sends it the SDK's way, given what to learn
 * from and the lean attempt's outcome to replay as its first attempt (never sent twice).
 */
export async function leanOrSdk<T>(
  lean: LeanCall,
  body: () => string,
  signal: AbortSignal,
  decode: (answer: WireResponse) => T | undefined,
  sdk: (hop: Pick<Hop, 'learn' | 'replay'>) => Promise<T>,
): Promise<T> {
  let replay: Replay | undefined;
  if (lean.ready) {
    try {
      const answer = await lean.send(body(), signal);
      const result = decode(answer);
      if (result !== undefined) return result;
      replay = { answer };
    } catch (error) {
      if (signal.aborted) throw error;
      replay = { error };
    }
  }
  return sdk({ learn: (request) => lean.learn(request), replay });
}
