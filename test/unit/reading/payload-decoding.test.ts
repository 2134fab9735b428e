import { expect } from 'chai';
import { KinsumerError, RecordDecodeError } from '../../../src/index.js';
import { recordJson, recordText } from '../../../src/reading/payload-decoding.js';

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
