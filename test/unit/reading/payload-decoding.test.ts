import { expect } from 'chai';
import fc from 'fast-check';
import { KinsumerError, RecordDecodeError } from '../../../src/index.js';
import { decodeBase64, recordJson, recordText } from '../../../src/reading/payload-decoding.js';

const bytes = (text: string) => new TextEncoder().encode(text);
const at = (data: Uint8Array, subSequenceNumber?: number) => ({ shardId: 'shardId-000000000001', sequenceNumber: '4960', subSequenceNumber, data });

describe('record data: text() and json()', () => {
  it('decodes UTF-8, multi-byte characters and a leading BOM included', () => {
    expect(recordText(at(bytes('grüße, 世界 🎉')))).to.equal('grüße, 世界 🎉');
    expect(recordText(at(new Uint8Array([0xef, 0xbb, 0xbf, 0x61])))).to.equal('a');
    expect(recordText(at(new Uint8Array(0)))).to.equal('');
  });

  it('refuses bytes that are not UTF-8 with a RecordDecodeError naming the record (no U+FFFD substitutes)', () => {
    const error = (() => { try { recordText(at(new Uint8Array([0x61, 0xff, 0xfe]), 3)); } catch (e) { return e; } return undefined; })();
    expect(error).to.be.instanceOf(RecordDecodeError);
    expect(error).to.be.instanceOf(KinsumerError);
    const decode = error as RecordDecodeError;
    expect([decode.shardId, decode.sequenceNumber, decode.subSequenceNumber, decode.format, decode.retriable]).to.deep.equal(['shardId-000000000001', '4960', 3, 'utf-8', false]);
    expect(decode.message).to.equal('record 4960/3 of shardId-000000000001 is not UTF-8 text');
    expect(decode.cause).to.be.instanceOf(TypeError);
  });

  it('parses JSON into the type asked for', () => {
    const value = recordJson<{ n: number; tags: string[] }>(at(bytes('{"n":1,"tags":["a"]}')));
    expect(value.n + value.tags.length).to.equal(2);
    expect(recordJson(at(bytes('null')))).to.equal(null);
  });

  it('refuses data that is not JSON with a RecordDecodeError (format json), the parser\'s error as cause', () => {
    for (const data of [bytes('{"n":'), bytes(''), new Uint8Array([0xff])]) {
      const error = (() => { try { recordJson(at(data)); } catch (e) { return e; } return undefined; })() as RecordDecodeError;
      expect(error).to.be.instanceOf(RecordDecodeError);
      expect(error.message).to.match(/^record 4960 of shardId-000000000001 is not (JSON|UTF-8 text)/);
    }
    const bad = (() => { try { recordJson(at(bytes('{"n":'))); } catch (e) { return e; } return undefined; })() as RecordDecodeError;
    expect(bad.format).to.equal('json');
    expect(bad.cause).to.be.instanceOf(SyntaxError);
  });
});

// The SDK's decoding of a record's Data (@smithy/core's fromBase64, for the base64 it accepts):
// Node's Buffer.from, then a plain Uint8Array over the same bytes.
const sdkDecoding = (base64: string): Uint8Array => {
  const bytes = Buffer.from(base64, 'base64');
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
};
// Payloads of every size around the pool's (8 KiB; payloads from 4 KiB on get buffers of their own).
const payload = fc.oneof(fc.uint8Array({ maxLength: 64 }), fc.uint8Array({ minLength: 4000, maxLength: 4200 }), fc.uint8Array({ maxLength: 9000 }));

describe('record data: decodeBase64 (the wire\'s Data to bytes)', () => {
  it('decodes what the SDK decodes, as a plain Uint8Array (not a Buffer)', () => {
    fc.assert(fc.property(payload, (bytes) => {
      const base64 = Buffer.from(bytes).toString('base64');
      const data = decodeBase64(base64);
      expect(Object.getPrototypeOf(data)).to.equal(Uint8Array.prototype);
      expect(data).to.deep.equal(sdkDecoding(base64));
      expect(Buffer.from(data).equals(Buffer.from(bytes))).to.equal(true);
    }));
  });

  it('gives every payload bytes of its own: none overlaps another, writing one changes no other', () => {
    fc.assert(fc.property(fc.array(payload, { minLength: 1, maxLength: 60 }), (list) => {
      const decoded = list.map((bytes) => decodeBase64(Buffer.from(bytes).toString('base64')));
      decoded.forEach((data, i) => expect(Buffer.from(data).equals(Buffer.from(list[i] as Uint8Array)), `payload ${i}`).to.equal(true));
      for (const data of decoded) data.fill(0xa5);
      decoded.forEach((data, i) => expect(data.every((byte) => byte === 0xa5), `payload ${i} after the others were written`).to.equal(true));
      decoded.forEach((data, i) => expect(data.byteLength, `payload ${i}`).to.equal((list[i] as Uint8Array).byteLength));
    }), { numRuns: 50 });
  });

  it('reads any text as Node\'s base64 decoder does (padding, URL-safe letters, junk skipped)', () => {
    const text = fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n.*é'), maxLength: 300 });
    fc.assert(fc.property(fc.array(text, { minLength: 1, maxLength: 20 }), (list) => {
      const decoded = list.map(decodeBase64);
      decoded.forEach((data, i) => expect(Buffer.from(data).equals(Buffer.from(list[i] as string, 'base64')), JSON.stringify(list[i])).to.equal(true));
    }));
  });
});
