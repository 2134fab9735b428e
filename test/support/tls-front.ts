// A local TLS endpoint in front of a plain-HTTP local server (kinesalite, dynalite, kinesis-local):
// node:http2's secure server with HTTP/1.1 allowed, as AWS's endpoints answer both, forwarding each
// request to the server behind it and streaming the answer back. It counts what a client opens —
// TLS connections (`secureConnection`), HTTP/2 sessions — and the requests by operation and HTTP
// version, so a test or a benchmark can tell one connection per call from connections reused.
// Given the secret, it also checks every request's SigV4 signature as AWS would (the local servers
// check none): a request signed for other headers than it carries is answered 403, as AWS answers it.
import { createHash, createHmac } from 'node:crypto';
import { type IncomingHttpHeaders, Agent, request as httpRequest } from 'node:http';
import {
  type Http2SecureServer, type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Session, createSecureServer,
} from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import type { SelfSigned } from './self-signed.js';

/** One request as the front saw it. */
export interface FrontRequest {
  /** The operation, from `X-Amz-Target` (`GetRecords`, `GetItem`, ...). */
  readonly operation: string;
  /** `'1.1'` or `'2.0'`. */
  readonly httpVersion: string;
  /** With a secret to check against: whether the signature was right. */
  readonly signed?: boolean;
  /** Made by the SDK's stack (it carries `amz-sdk-invocation-id`); else by a lean call of kinsumer's own. */
  readonly bySdk: boolean;
}

/** A running TLS front. */
export interface TlsFront {
  /** `https://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** TLS connections accepted so far. */
  connections(): number;
  /** TLS connections open now. */
  open(): number;
  /** HTTP/2 sessions started so far. */
  sessions(): number;
  readonly requests: FrontRequest[];
  stop(): Promise<void>;
}

// Connection-specific headers HTTP/2 forbids in an answer (RFC 9113 §8.2.2).
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

function forwarded(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(key) && !key.startsWith(':')) out[key] = value;
  return out;
}

function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** `true` when the request's SigV4 signature is the one `secret` makes of what the request carries. */
export function signatureHolds(method: string, path: string, headers: IncomingHttpHeaders, body: Buffer, secret: string): boolean {
  const match = /^AWS4-HMAC-SHA256 Credential=[^/]+\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(String(headers.authorization ?? ''));
  const date = headers['x-amz-date'];
  if (match === null || typeof date !== 'string') return false;
  const [, day = '', region = '', service = '', signedHeaders = '', signature = ''] = match;
  const names = signedHeaders.split(';');
  if (names.some((name) => headers[name] === undefined)) return false;
  const canonicalHeaders = names.map((name) => `${name}:${String(headers[name]).trim().replace(/\s+/g, ' ')}\n`).join('');
  const canonical = `${method}\n${path}\n\n${canonicalHeaders}\n${signedHeaders}\n${sha256(body)}`;
  const toSign = `AWS4-HMAC-SHA256\n${date}\n${day}/${region}/${service}/aws4_request\n${sha256(canonical)}`;
  let key: Buffer = createHmac('sha256', `AWS4${secret}`).update(day).digest();
  for (const part of [region, service, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  return createHmac('sha256', key).update(toSign).digest('hex') === signature;
}

/**
 * Starts a TLS front on 127.0.0.1 (port 0) forwarding to `target` (`http://host:port`). With
 * `secret`, a request whose signature does not hold is answered `403 InvalidSignatureException`.
 */
export async function startTlsFront(target: string, tls: SelfSigned, secret?: string): Promise<TlsFront> {
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true });
  const requests: FrontRequest[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  let sessions = 0;
  const server: Http2SecureServer = createSecureServer({ key: tls.key, cert: tls.cert, allowHTTP1: true }, (incoming: Http2ServerRequest, outgoing: Http2ServerResponse) => {
    const target = String(incoming.headers['x-amz-target'] ?? '');
    const operation = target.slice(target.indexOf('.') + 1);
    const parts: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => parts.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(parts);
      const signed = secret === undefined ? undefined : signatureHolds(incoming.method, incoming.url, incoming.headers, body, secret);
      const bySdk = incoming.headers['amz-sdk-invocation-id'] !== undefined;
      requests.push({ operation, httpVersion: incoming.httpVersion, bySdk, ...(signed === undefined ? {} : { signed }) });
      if (signed === false) {
        outgoing.writeHead(403, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-errortype': 'InvalidSignatureException' });
        outgoing.end(JSON.stringify({ __type: 'InvalidSignatureException', message: 'The request signature we calculated does not match the signature you provided.' }));
        return;
      }
      const forward = httpRequest({
        agent, host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url,
        headers: { ...forwarded(incoming.headers), host: upstream.host },
      }, (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, forwarded(answer.headers));
        answer.pipe(outgoing);
      });
      forward.on('error', () => outgoing.destroy());
      // The client went away (an aborted call, a closed subscription): so does the forwarded request.
      outgoing.on('close', () => { if (!outgoing.writableFinished) forward.destroy(); });
      forward.end(body);
    });
  });
  server.on('secureConnection', (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('session', (session: ServerHttp2Session) => {
    sessions += 1;
    session.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `https://127.0.0.1:${port}`,
    connections: () => connections,
    open: () => sockets.size,
    sessions: () => sessions,
    requests,
    stop: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      agent.destroy();
      server.close(() => resolve());
    }),
  };
}
