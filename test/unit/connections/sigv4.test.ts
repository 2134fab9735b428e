import { createHash } from 'node:crypto';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { expect } from 'chai';
import { templateOf } from '../../../src/connections/lean-call.js';
import { JsonSigner, plainPath } from '../../../src/connections/sigv4.js';

// kinsumer's SigV4 for its lean calls, held to the SDK's own signer (@smithy/signature-v4, as a
// KinesisClient makes it): the same request, the same date, the same Authorization.

interface SdkSigner {
  sign(request: unknown, options: { signingDate: Date }): Promise<{ headers: Record<string, string> }>;
}

async function sdkAuthorization(credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string }, region: string, path: string, headers: Record<string, string>, body: string, date: Date): Promise<Record<string, string>> {
  const client = new KinesisClient({ region, credentials });
  const signer = await (client.config as unknown as { signer: () => Promise<SdkSigner> }).signer();
  const signed = await signer.sign({
    method: 'POST', protocol: 'https:', hostname: headers.host, path, query: {}, body,
    headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
  }, { signingDate: date });
  client.destroy();
  return signed.headers;
}

const BODY = JSON.stringify({ ShardIterator: 'AAAAAAAAAAG+ünïcödé/iterator==', Limit: 10_000, StreamARN: 'arn:aws:kinesis:eu-west-1:123456789012:stream/s' });
const HEADERS = {
  host: '123456789012.data-kinesis.eu-west-1.amazonaws.com',
  'content-type': 'application/x-amz-json-1.1',
  'x-amz-target': 'Kinesis_20131202.GetRecords',
  'x-amz-user-agent': 'aws-sdk-js/3.1142.0',
  'user-agent': 'aws-sdk-js/3.1142.0 ua/2.1 lang/js',
  // The SDK's signer adds it when missing (applyChecksum): given to both, so both sign it.
  'x-amz-content-sha256': createHash('sha256').update(BODY).digest('hex'),
};

describe('SigV4 of lean calls (JsonSigner) against the SDK\'s signer', () => {
  const date = new Date('2026-12-04T22:37:09.123Z');

  it('the same Authorization as the SDK\'s for the same request and date', async () => {
    const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
    const ours = new JsonSigner().sign({ path: '/', headers: HEADERS, body: BODY }, { region: 'eu-west-1', service: 'kinesis' }, credentials, date);
    const sdk = await sdkAuthorization(credentials, 'eu-west-1', '/', HEADERS, BODY, date);
    expect(ours.authorization).to.equal(sdk.authorization);
    expect([ours['x-amz-date'], ours['content-length']]).to.deep.equal([sdk['x-amz-date'], sdk['content-length']]);
  });

  it('with a session token, and a path of the endpoint\'s own: still the SDK\'s', async () => {
    const credentials = { accessKeyId: 'ASIAEXAMPLE', secretAccessKey: 'secret', sessionToken: 'token/with+chars==' };
    const signer = new JsonSigner();
    for (const path of ['/', '/some/path/', '/v1.2/kinesis']) {
      const ours = signer.sign({ path, headers: HEADERS, body: BODY }, { region: 'us-east-1', service: 'kinesis' }, credentials, date);
      const sdk = await sdkAuthorization(credentials, 'us-east-1', path, HEADERS, BODY, date);
      expect(ours.authorization, path).to.equal(sdk.authorization);
      expect(ours['x-amz-security-token']).to.equal(credentials.sessionToken);
    }
  });

  it('the signing key follows the day and the secret (a rotated secret signs with the new one)', async () => {
    const signer = new JsonSigner();
    const scope = { region: 'us-east-1', service: 'kinesis' };
    const first = { accessKeyId: 'AKID', secretAccessKey: 'one' };
    const rotated = { accessKeyId: 'AKID', secretAccessKey: 'two' };
    signer.sign({ path: '/', headers: HEADERS, body: BODY }, scope, first, date);
    const ours = signer.sign({ path: '/', headers: HEADERS, body: BODY }, scope, rotated, date);
    expect(ours.authorization).to.equal((await sdkAuthorization(rotated, 'us-east-1', '/', HEADERS, BODY, date)).authorization);
    const nextDay = new Date(date.getTime() + 86_400_000);
    expect(signer.sign({ path: '/', headers: HEADERS, body: BODY }, scope, rotated, nextDay).authorization)
      .to.equal((await sdkAuthorization(rotated, 'us-east-1', '/', HEADERS, BODY, nextDay)).authorization);
  });

  it('signs only paths it leaves as they are; a path SigV4 would rewrite is not sent the lean way', () => {
    expect(['/', '/a', '/a/', '/v1.2/kinesis', '/a-b_c~d'].map(plainPath)).to.deep.equal([true, true, true, true, true]);
    expect(['', '/a//b', '/./a', '/a/../b', '/a b', '/a%20b', '/a?b'].map(plainPath)).to.deep.equal([false, false, false, false, false, false, false]);
  });
});

describe('the template of a lean call (what the SDK sent, but for what changes per call)', () => {
  const signed = {
    method: 'POST', protocol: 'https:', hostname: 'h.example', port: 443, path: '/', query: {}, body: '{}',
    headers: {
      'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'Kinesis_20131202.GetRecords', host: 'h.example',
      'x-amz-date': '20261204T223709Z', 'x-amz-security-token': 't', 'x-amz-content-sha256': 'abc', 'content-length': '2',
      'amz-sdk-invocation-id': 'id', 'amz-sdk-request': 'attempt=1; max=3', 'user-agent': 'ua',
      authorization: 'AWS4-HMAC-SHA256 Credential=AKID/20261204/eu-central-1/kinesis/aws4_request, SignedHeaders=host, Signature=0',
    },
  };

  it('keeps the endpoint, the static headers and the signing scope of the SDK\'s request', () => {
    expect(templateOf(signed)).to.deep.equal({
      protocol: 'https:', hostname: 'h.example', port: 443, path: '/',
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'Kinesis_20131202.GetRecords', host: 'h.example', 'user-agent': 'ua' },
      scope: { region: 'eu-central-1', service: 'kinesis' },
    });
  });

  it('a request signed for HTTP/2 keeps its :authority (sent through the client\'s HTTP/2 handler, signed as the SDK signs it)', () => {
    const { host, ...rest } = signed.headers;
    expect(templateOf({ ...signed, headers: { ...rest, ':authority': host } })?.headers[':authority']).to.equal('h.example');
  });

  it('nothing lean for what it cannot reproduce: another signature scheme, no signature, a query, no host', () => {
    const { authorization: _, ...unsigned } = signed.headers;
    expect(templateOf({ ...signed, headers: { ...signed.headers, authorization: 'AWS4-ECDSA-P256-SHA256 Credential=AKID/20261204/kinesis/aws4_request, x' } })).to.equal(null);
    expect(templateOf({ ...signed, headers: unsigned })).to.equal(null);
    expect(templateOf({ ...signed, query: { a: 'b' } })).to.equal(null);
    const { host: __, ...hostless } = signed.headers;
    expect(templateOf({ ...signed, headers: hostless })).to.equal(null);
  });
});
