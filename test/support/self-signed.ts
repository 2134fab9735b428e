// A self-signed TLS certificate for 127.0.0.1, made with node:crypto alone (no openssl on the
// machine needed): an EC P-256 key and an X.509 v3 certificate written in DER by hand, the few
// structures RFC 5280 asks for. For local TLS endpoints of tests and benchmarks only.
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';

/** A key and its certificate, both PEM. */
export interface SelfSigned {
  readonly key: string;
  readonly cert: string;
}

const der = (tag: number, ...parts: Buffer[]): Buffer => {
  const body = Buffer.concat(parts);
  const length = body.length < 0x80 ? Buffer.from([body.length])
    : body.length < 0x100 ? Buffer.from([0x81, body.length])
      : Buffer.from([0x82, body.length >> 8, body.length & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, body]);
};
const sequence = (...parts: Buffer[]): Buffer => der(0x30, ...parts);
const set = (...parts: Buffer[]): Buffer => der(0x31, ...parts);
const oid = (dotted: string): Buffer => {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * a + b];
  for (const n of rest) {
    const base128 = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) base128.unshift((v & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return der(0x06, Buffer.from(bytes));
};
const utf8 = (text: string): Buffer => der(0x0c, Buffer.from(text, 'utf8'));
const generalizedTime = (date: Date): Buffer => der(0x18, Buffer.from(`${date.toISOString().slice(0, 19).replace(/[-:T]/g, '')}Z`, 'ascii'));
const name = (commonName: string): Buffer => sequence(set(sequence(oid('2.5.4.3'), utf8(commonName))));

const ECDSA_WITH_SHA256 = sequence(oid('1.2.840.10045.4.3.2'));

/** A certificate for `127.0.0.1` and `localhost`, valid from an hour ago for a day. */
export function selfSigned(): SelfSigned {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const serial = randomBytes(8);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const now = Date.now();
  const subjectAltName = sequence(
    oid('2.5.29.17'),
    der(0x04, sequence(der(0x87, Buffer.from([127, 0, 0, 1])), der(0x82, Buffer.from('localhost', 'ascii')))),
  );
  const tbs = sequence(
    der(0xa0, der(0x02, Buffer.from([2]))),
    der(0x02, serial),
    ECDSA_WITH_SHA256,
    name('127.0.0.1'),
    sequence(generalizedTime(new Date(now - 3_600_000)), generalizedTime(new Date(now + 86_400_000))),
    name('127.0.0.1'),
    publicKey.export({ type: 'spki', format: 'der' }),
    der(0xa3, sequence(subjectAltName)),
  );
  const signature = sign('sha256', tbs, privateKey);
  const certificate = sequence(tbs, ECDSA_WITH_SHA256, der(0x03, Buffer.from([0]), signature));
  const lines = certificate.toString('base64').match(/.{1,64}/g) ?? [];
  return {
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    cert: `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`,
  };
}
