// kinsumer's own connections to one AWS service: HTTP/1.1 keep-alive agents (TLS or plain, as the
// endpoint says) that its calls share, so a process opens a bounded number of connections however
// many calls it makes, and counts what it opened. The SDK's default Kinesis handler opens a TLS
// session per call (HTTP/2 with `disableConcurrentStreams`); these are what kinsumer sends on instead
// when the application's client has a stock handler (connections/handler-plan.ts decides).
import { Agent as HttpAgent, type ClientRequest, type IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';

/** A request ready to go: signed, with its endpoint (the shape of the SDK's `HttpRequest`). */
export interface WireRequest {
  readonly protocol: string;
  readonly hostname: string;
  readonly port?: number | undefined;
  readonly method: string;
  readonly path: string;
  readonly query?: Readonly<Record<string, string | readonly string[] | null>> | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: unknown;
}

/** An answer, its body whole (as the chunks that came). */
export interface WireResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly chunks: readonly Buffer[];
}

/** `KinsumerStatus.connections`: per service, what this client's own calls opened. */
export interface ConnectionsStatus {
  /** Kinesis: GetRecords, GetShardIterator, ListShards, DescribeStreamSummary and the consumer calls. */
  readonly kinesis?: ConnectionCounts;
  /** DynamoDB: every call on the three tables. */
  readonly dynamodb?: ConnectionCounts;
}

/** Connections a client's own calls opened to one AWS service (see `KinsumerStatus.connections`). */
export interface ConnectionCounts {
  /** Connections opened since the client started (each a TCP connection, and its TLS session on `https` endpoints). */
  readonly opened: number;
  /** Connections open now: in use, or kept alive for the next call. */
  readonly open: number;
}

/**
 * Most connections open at once per endpoint: the SDK's own keep-alive default. Calls beyond it
 * wait for a connection (bounded by `requestTimeoutMs` like any call).
 */
export const MAX_SOCKETS = 50;

/** One service's keep-alive connections, counted. */
export class OwnConnections {
  #opened = 0;
  readonly #open = new Set<Duplex>();
  readonly #https: HttpsAgent;
  readonly #http: HttpAgent;

  constructor(maxSockets = MAX_SOCKETS) {
    // Opened once connected (its TLS session established, on https): a socket the agent made and
    // dropped before that — a request aborted at stop() — opened no connection the endpoint saw.
    const count = <S extends Duplex | null | undefined>(socket: S, connected: 'connect' | 'secureConnect'): S => {
      if (socket === null || socket === undefined) return socket;
      socket.once(connected, () => { this.#opened += 1; });
      this.#open.add(socket);
      socket.once('close', () => this.#open.delete(socket));
      return socket;
    };
    const https = new HttpsAgent({ keepAlive: true, maxSockets });
    const http = new HttpAgent({ keepAlive: true, maxSockets });
    // Every connection an agent makes goes through createConnection: counted there.
    const httpsConnect = https.createConnection.bind(https);
    const httpConnect = http.createConnection.bind(http);
    https.createConnection = (...args: Parameters<typeof httpsConnect>) => count(httpsConnect(...args), 'secureConnect');
    http.createConnection = (...args: Parameters<typeof httpConnect>) => count(httpConnect(...args), 'connect');
    this.#https = https;
    this.#http = http;
  }

  counts(): ConnectionCounts {
    return { opened: this.#opened, open: this.#open.size };
  }

  /** Sends one request; the answer comes with its whole body. Aborting `signal` destroys the request (and its connection). */
  send(request: WireRequest, signal: AbortSignal): Promise<WireResponse> {
    return new Promise<WireResponse>((resolve, reject) => {
      if (signal.aborted) {
        reject(abortError(signal));
        return;
      }
      const tls = request.protocol === 'https:';
      const options = {
        agent: tls ? this.#https : this.#http,
        hostname: request.hostname,
        ...(request.port === undefined ? {} : { port: request.port }),
        method: request.method,
        path: pathWithQuery(request.path, request.query),
        headers: request.headers,
      };
      const onAbort = (): void => { req.destroy(abortError(signal)); };
      const done = (): void => signal.removeEventListener('abort', onAbort);
      const answered = (res: IncomingMessage): void => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('error', (error) => { done(); reject(error); });
        res.once('end', () => {
          done();
          resolve({ statusCode: res.statusCode ?? -1, headers: flatHeaders(res), chunks });
        });
      };
      const req: ClientRequest = tls ? httpsRequest(options, answered) : httpRequest(options, answered);
      req.once('error', (error) => { done(); reject(error); });
      signal.addEventListener('abort', onAbort, { once: true });
      const { body } = request;
      req.end(typeof body === 'string' || body instanceof Uint8Array ? body : undefined);
    });
  }

  /** Closes every connection (the client stopped). */
  destroy(): void {
    this.#https.destroy();
    this.#http.destroy();
  }
}

/** The headers as the SDK's handlers give them: lower-case names, repeated ones joined with `,`. */
function flatHeaders(res: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return headers;
}

function pathWithQuery(path: string, query: WireRequest['query']): string {
  if (query === undefined) return path;
  const parts: string[] = [];
  for (const [key, value] of Object.entries(query)) {
    const name = encodeURIComponent(key);
    if (value === null) parts.push(name);
    else for (const one of typeof value === 'string' ? [value] : value) parts.push(`${name}=${encodeURIComponent(one)}`);
  }
  return parts.length === 0 ? path : `${path}?${parts.join('&')}`;
}

/** What an aborted call rejects with: the signal's reason, as `fetch` does. */
function abortError(signal: AbortSignal): Error {
  const { reason } = signal as { reason?: unknown };
  return reason instanceof Error ? reason : Object.assign(new Error('the request was aborted'), { name: 'AbortError' });
}
