// AWS Signature Version 4 for one kind of request: a JSON POST to a path of plain characters, no
// query, headers given. What the SDK's signer does for such a request, without its general
// machinery (request cloning, async hashing, header filtering per call): the signing key is made
// once per day, region, service and secret, and each request costs two SHA-256 and one HMAC.
// test/unit/kinesis/sigv4.test.ts holds it to the SDK's own signature for the same request.
import { createHash, createHmac } from 'node:crypto';

/** An AWS identity, as the SDK's credential providers give it. */
export interface SigningCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
}

/** Where and how a request is signed. */
export interface SigningScope {
  readonly region: string;
  readonly service: string;
}

/** A path SigV4 leaves as it is: slash-separated unreserved characters, no `.` or `..`, no empty segment inside. */
const PLAIN_PATH = /^\/(?:[A-Za-z0-9\-_~]+(?:\.[A-Za-z0-9\-_~]+)*\/)*(?:[A-Za-z0-9\-_~]+(?:\.[A-Za-z0-9\-_~]+)*)?$/;

/** `true` when {@link JsonSigner} can sign a request to this path (its canonical form is the path itself). */
export function plainPath(path: string): boolean {
  return PLAIN_PATH.test(path);
}

// Headers the SDK never signs (proxies may change them).
const UNSIGNED = new Set(['user-agent', 'authorization', 'expect', 'x-amzn-trace-id', 'connection', 'cache-control', 'transfer-encoding', 'te', 'upgrade', 'via', 'x-forwarded-for']);

// Set by the signer for each request (a given header of these names is replaced).
const PER_REQUEST = new Set(['content-length', 'x-amz-date', 'x-amz-security-token']);

function canonicalValue(value: string): string {
  return value.trim().replace(/\s+/g, ' ');
}

/** Signs JSON POSTs; keeps the last signing key. */
export class JsonSigner {
  #keyScope = '';
  #keySecret = '';
  #key: Buffer = Buffer.alloc(0);
  // The canonical form of the last static headers seen (a lean call's template, the same object call after call).
  #staticOf: Readonly<Record<string, string>> | undefined;
  #static: ReadonlyArray<readonly [string, string]> = [];

  /**
   * The headers to send: `headers` (lower-case names) with `x-amz-date`, the session token if any,
   * `content-length` and `authorization` added. `path` must be {@link plainPath}.
   */
  sign(request: { readonly path: string; readonly headers: Readonly<Record<string, string>>; readonly body: string }, scope: SigningScope, credentials: SigningCredentials, date: Date): Record<string, string> {
    const amzDate = date.toISOString().replace(/[:-]|\.\d{3}/g, '');
    const day = amzDate.slice(0, 8);
    const headers: Record<string, string> = { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)), 'x-amz-date': amzDate };
    const signed = [...this.#canonical(request.headers), ['content-length', headers['content-length'] ?? ''] as const, ['x-amz-date', amzDate] as const];
    if (credentials.sessionToken !== undefined && credentials.sessionToken !== '') {
      headers['x-amz-security-token'] = credentials.sessionToken;
      signed.push(['x-amz-security-token', canonicalValue(credentials.sessionToken)]);
    }
    signed.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    let canonicalHeaders = '';
    for (const [name, value] of signed) canonicalHeaders += `${name}:${value}\n`;
    const signedHeaders = signed.map(([name]) => name).join(';');
    const canonical = `POST\n${request.path}\n\n${canonicalHeaders}\n${signedHeaders}\n${sha256(request.body)}`;
    const credentialScope = `${day}/${scope.region}/${scope.service}/aws4_request`;
    const toSign = `AWS4-HMAC-SHA256\n${amzDate}\n${credentialScope}\n${sha256(canonical)}`;
    const signature = createHmac('sha256', this.#signingKey(credentials.secretAccessKey, day, scope)).update(toSign).digest('hex');
    headers.authorization = `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${credentialScope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
    return headers;
  }

  /** The signed ones of `headers` with their canonical values (made once per headers object). */
  #canonical(headers: Readonly<Record<string, string>>): Array<readonly [string, string]> {
    if (headers !== this.#staticOf) {
      this.#static = Object.entries(headers).filter(([name]) => !UNSIGNED.has(name) && !PER_REQUEST.has(name)).map(([name, value]) => [name, canonicalValue(value)] as const);
      this.#staticOf = headers;
    }
    return [...this.#static];
  }

  #signingKey(secret: string, day: string, scope: SigningScope): Buffer {
    const keyScope = `${day}/${scope.region}/${scope.service}`;
    if (keyScope !== this.#keyScope || secret !== this.#keySecret) {
      const dated = hmac(`AWS4${secret}`, day);
      this.#key = hmac(hmac(hmac(dated, scope.region), scope.service), 'aws4_request');
      this.#keyScope = keyScope;
      this.#keySecret = secret;
    }
    return this.#key;
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function hmac(key: string | Buffer, text: string): Buffer {
  return createHmac('sha256', key).update(text).digest();
}
