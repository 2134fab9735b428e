// The practical limit of Node on Kinesis's GetRecords protocol, for the cpu figure's baseline
// (issue 26): `node:http` with a keep-alive agent, each request signed by hand (SigV4, as the SDK
// signs it: kinesalite checks that a signature is there, not what it says), the answer's body made
// text and parsed with one JSON.parse, every record's Data decoded from base64 to bytes. No SDK, no
// middleware, no retries, nothing kept after the page: the same requests and pages as the SDK's
// loop and kinsumer, with nothing but what any Node program must do to read them. Over TLS
// (an `https:` endpoint) it is the same loop on `node:https` with a keep-alive agent.
//
// The body is made text the cheapest way Node has (a Latin-1 copy when it is all ASCII, checked
// with `buffer.isAscii`) into a buffer reused from page to page: the tricks kinsumer's own decoder
// (src/kinesis/get-records.ts) uses, so the ratio to this loop is what kinsumer adds on top, not a
// difference in how the text is made.
import { isAscii } from 'node:buffer';
import { createHash, createHmac } from 'node:crypto';
import { Agent, type ClientRequest, type IncomingMessage, request } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LocalAwsConfig } from '../../src/testing/index.js';

const TARGET_PREFIX = 'Kinesis_20131202.';
const CONTENT_TYPE = 'application/x-amz-json-1.1';

/** One record as the loop hands it on: its payload decoded, its sequence number. */
export type RecordSink = (data: Uint8Array, sequenceNumber: string) => void;

/** Kinesis's JSON protocol over `node:http`, one call at a time. */
export class RawKinesis {
  readonly #agent: Agent;
  readonly #send: (options: object, answer: (res: IncomingMessage) => void) => ClientRequest;
  readonly #url: URL;
  readonly #region: string;
  readonly #credentials: LocalAwsConfig['credentials'];
  #signingDay = '';
  #signingKey: Buffer = Buffer.alloc(0);
  #scratch: Buffer = Buffer.alloc(0);

  constructor(config: LocalAwsConfig) {
    this.#url = new URL(config.endpoints.kinesis);
    const tls = this.#url.protocol === 'https:';
    this.#agent = tls ? new HttpsAgent({ keepAlive: true, maxSockets: 1 }) : new Agent({ keepAlive: true, maxSockets: 1 });
    this.#send = tls ? httpsRequest : request;
    this.#region = config.region;
    this.#credentials = config.credentials;
  }

  /** `GetShardIterator`, TRIM_HORIZON. */
  trimHorizon(streamName: string, shardId: string): Promise<string> {
    return this.iterator(streamName, shardId, 'TRIM_HORIZON');
  }

  /** `GetShardIterator` of this type. */
  async iterator(streamName: string, shardId: string, type: 'TRIM_HORIZON' | 'LATEST'): Promise<string> {
    const text = await this.#call('GetShardIterator', { StreamName: streamName, ShardId: shardId, ShardIteratorType: type });
    const { ShardIterator } = JSON.parse(text) as { ShardIterator?: string };
    if (ShardIterator === undefined) throw new Error('GetShardIterator returned no iterator');
    return ShardIterator;
  }

  /**
   * One `GetRecords` page: every record's Data decoded to bytes and handed to `sink` with its
   * sequence number. Returns the number of records and the next iterator.
   */
  async getRecords(iterator: string, limit: number, sink: RecordSink): Promise<{ readonly count: number; readonly next: string | undefined }> {
    return decodePage(await this.#call('GetRecords', { ShardIterator: iterator, Limit: limit }), sink);
  }

  destroy(): void {
    this.#agent.destroy();
  }

  /** A call's answer as text; an error status is thrown with its body. */
  #call(operation: string, input: unknown): Promise<string> {
    const body = JSON.stringify(input);
    const headers = this.#signed(operation, body);
    return new Promise((resolve, reject) => {
      const req = this.#send({ agent: this.#agent, hostname: this.#url.hostname, port: this.#url.port, method: 'POST', path: '/', headers }, (res) => {
        const chunks: Buffer[] = [];
        let length = 0;
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          length += chunk.length;
        });
        res.once('error', reject);
        res.once('end', () => {
          const text = this.#text(chunks, length);
          if (res.statusCode === 200) resolve(text);
          else reject(new Error(`${operation}: HTTP ${res.statusCode ?? '?'} ${text.slice(0, 500)}`));
        });
      });
      req.once('error', reject);
      req.end(body);
    });
  }

  /** The chunks as one text, through a buffer reused from page to page (a fresh 14 MB one per page costs its page faults). */
  #text(chunks: readonly Buffer[], length: number): string {
    let bytes: Buffer;
    if (chunks.length === 1) bytes = chunks[0] as Buffer;
    else {
      if (this.#scratch.length < length) this.#scratch = Buffer.allocUnsafeSlow(Math.max(length, Math.floor(this.#scratch.length * 1.25)));
      let offset = 0;
      for (const chunk of chunks) {
        chunk.copy(this.#scratch, offset);
        offset += chunk.length;
      }
      bytes = this.#scratch.subarray(0, length);
    }
    return bytes.toString(isAscii(bytes) ? 'latin1' : 'utf8');
  }

  /** The headers of a SigV4-signed call (the signature kinesalite does not check, made all the same). */
  #signed(operation: string, body: string): Record<string, string> {
    const amzDate = new Date().toISOString().replace(/[:-]|\.\d{3}/g, '');
    const day = amzDate.slice(0, 8);
    const host = this.#url.host;
    const payloadHash = sha256(body);
    const signedHeaders = 'content-type;host;x-amz-date;x-amz-target';
    const canonical = ['POST', '/', '', `content-type:${CONTENT_TYPE}`, `host:${host}`, `x-amz-date:${amzDate}`, `x-amz-target:${TARGET_PREFIX}${operation}`, '', signedHeaders, payloadHash].join('\n');
    const scope = `${day}/${this.#region}/kinesis/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
    if (this.#signingDay !== day) {
      const { secretAccessKey } = this.#credentials;
      this.#signingKey = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, day), this.#region), 'kinesis'), 'aws4_request');
      this.#signingDay = day;
    }
    const signature = createHmac('sha256', this.#signingKey).update(toSign).digest('hex');
    return {
      'Content-Type': CONTENT_TYPE,
      'Content-Length': String(Buffer.byteLength(body)),
      Host: host,
      'X-Amz-Date': amzDate,
      'X-Amz-Target': `${TARGET_PREFIX}${operation}`,
      Authorization: `AWS4-HMAC-SHA256 Credential=${this.#credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
    };
  }
}

function decodePage(text: string, sink: RecordSink): { readonly count: number; readonly next: string | undefined } {
  const page = JSON.parse(text) as { Records: ReadonlyArray<{ SequenceNumber: string; Data: string }>; NextShardIterator?: string };
  const records = page.Records;
  for (let i = 0; i < records.length; i += 1) {
    const record = records[i] as { SequenceNumber: string; Data: string };
    sink(payloadBytes(record.Data), record.SequenceNumber);
  }
  return { count: records.length, next: page.NextShardIterator };
}

/** A record's Data as bytes (a Buffer: the Uint8Array Node makes of base64). */
function payloadBytes(base64: string): Uint8Array {
  return Buffer.from(base64, 'base64');
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function hmac(key: string | Buffer, text: string): Buffer {
  return createHmac('sha256', key).update(text).digest();
}
