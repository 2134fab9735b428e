import { expect } from 'chai';
import { Readable } from 'node:stream';
import { decodeGetRecords, leanGetRecords } from '../../../src/kinesis/get-records.js';

// The middleware that takes GetRecords answers away from the SDK's deserializer, against
// responses made here (the conformance suite runs it against the local servers). It is given
// what the SDK's deserialize step gives: `{ response }` with the HTTP status, headers and body.

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const answer = {
  Records: [
    { SequenceNumber: '49590338271490256608559692538361571095921575989136588898', ApproximateArrivalTimestamp: 1_700_000_000.1236, Data: Buffer.from('hi').toString('base64'), PartitionKey: 'k' },
    { SequenceNumber: '49590338271490256608559692538361571095921575989136588899', ApproximateArrivalTimestamp: 1_700_000_001, Data: '', PartitionKey: 'ü', EncryptionType: 'KMS' },
  ],
  NextShardIterator: 'AAAA',
  MillisBehindLatest: 1200,
};

/** Runs the middleware over one response; what the SDK's deserializer would then get as the body, and the page. */
async function through(response: { statusCode: number; headers: Record<string, string>; body: unknown }) {
  const lean = leanGetRecords();
  const handler = lean.middleware(() => Promise.resolve({ response }));
  await handler({});
  return { sdkBody: response.body, page: lean.page() };
}

describe('lean GetRecords (the deserialize middleware)', () => {
  it('decodes a JSON success, streamed in chunks, and hands the SDK an empty object to decode', async () => {
    const bytes = json(answer);
    const chunks = [bytes.subarray(0, 7), bytes.subarray(7, 50), bytes.subarray(50)];
    const { sdkBody, page } = await through({ statusCode: 200, headers: { 'content-type': 'application/x-amz-json-1.1' }, body: Readable.from(chunks) });
    expect(Buffer.from(sdkBody as Uint8Array).toString()).to.equal('{}');
    expect(page?.records.map((r) => [r.sequenceNumber, r.partitionKey, r.dataBase64, r.arrivalMs, r.encryptionType])).to.deep.equal([
      [answer.Records[0]?.SequenceNumber, 'k', 'aGk=', 1_700_000_000_124, undefined],
      [answer.Records[1]?.SequenceNumber, 'ü', '', 1_700_000_001_000, 'KMS'],
    ]);
    expect(page?.records.map((r) => 'encryptionType' in r)).to.deep.equal([false, true]);
    expect([page?.nextShardIterator, page?.millisBehindLatest, page?.childShardIds]).to.deep.equal(['AAAA', 1200, undefined]);
  });

  it('leaves an error answer to the SDK untouched: the body is not read', async () => {
    const body = Readable.from([json({ __type: 'ProvisionedThroughputExceededException', message: 'slow down' })]);
    const { sdkBody, page } = await through({ statusCode: 400, headers: { 'content-type': 'application/x-amz-json-1.1' }, body });
    expect(sdkBody).to.equal(body);
    expect(body.readableDidRead).to.equal(false);
    expect(page).to.equal(undefined);
  });

  it('gives the SDK the bytes back when the body is not the answer expected', async () => {
    for (const text of ['not json', '[1, 2]', '{"Records": {"a": 1}}', '{"Records": [{"SequenceNumber": 5}]}', '{"Records": [{"SequenceNumber": "1", "PartitionKey": "k", "Data": "", "ApproximateArrivalTimestamp": "soon"}]}']) {
      const { sdkBody, page } = await through({ statusCode: 200, headers: {}, body: Readable.from([Buffer.from(text)]) });
      expect(Buffer.from(sdkBody as Uint8Array).toString(), text).to.equal(text);
      expect(page, text).to.equal(undefined);
    }
  });

  it('a body of several chunks that is not the answer expected reaches the SDK as bytes of its own, untouched by the next answer', async () => {
    // Bodies of several chunks are put together in a buffer reused from answer to answer.
    const text = '{"Records": "not a list", "padding": "' + 'x'.repeat(2000) + '"}';
    const bytes = Buffer.from(text);
    const first = await through({ statusCode: 200, headers: {}, body: Readable.from([bytes.subarray(0, 10), bytes.subarray(10)]) });
    const next = json({ ...answer, NextShardIterator: 'B'.repeat(300) });
    const second = await through({ statusCode: 200, headers: {}, body: Readable.from([next.subarray(0, 5), next.subarray(5)]) });
    expect(Buffer.from(first.sdkBody as Uint8Array).toString()).to.equal(text);
    expect([first.page, second.page?.nextShardIterator]).to.deep.equal([undefined, 'B'.repeat(300)]);
  });

  it('leaves a CBOR answer to the SDK', async () => {
    const body = Readable.from([Buffer.from([0xa0])]);
    const { sdkBody, page } = await through({ statusCode: 200, headers: { 'content-type': 'application/x-amz-cbor-1.1' }, body });
    expect([sdkBody === body, page]).to.deep.equal([true, undefined]);
  });

  it('reads text outside ASCII (raw UTF-8 in the body) exactly as UTF-8, and an ASCII body to the same text', () => {
    // The body is decoded the cheap way when it is all ASCII; one byte outside it must take the UTF-8 way.
    const keys = ['ключ', '🔑 key', 'ü', 'plain', 'é'.repeat(3000)];
    const body = json({ Records: keys.map((key, i) => ({ SequenceNumber: `${100 + i}`, ApproximateArrivalTimestamp: 1, Data: '', PartitionKey: key })) });
    expect(decodeGetRecords(body)?.records.map((r) => r.partitionKey)).to.deep.equal(keys);
    // All ASCII, with a JSON escape for a character outside it: the text JSON.parse makes of it.
    const ascii = Buffer.from('{"Records":[{"SequenceNumber":"1","ApproximateArrivalTimestamp":1,"Data":"aGk=","PartitionKey":"k\\u00fc"}]}');
    expect(decodeGetRecords(ascii)?.records.map((r) => [r.partitionKey, r.dataBase64])).to.deep.equal([['k\u00fc', 'aGk=']]);
  });

  it('names the children at the end of a closed shard, and none when the list is empty', () => {
    expect(decodeGetRecords(json({ Records: [], MillisBehindLatest: 0, ChildShards: [{ ShardId: 'shardId-000000000001' }, { ShardId: 'shardId-000000000002' }] }))?.childShardIds)
      .to.deep.equal(['shardId-000000000001', 'shardId-000000000002']);
    expect(decodeGetRecords(json({ Records: [], ChildShards: [] }))?.childShardIds).to.equal(undefined);
    expect(decodeGetRecords(json({ Records: [], NextShardIterator: null }))?.nextShardIterator).to.equal(undefined);
    expect(decodeGetRecords(json({ NextShardIterator: 'A' })), 'no Records: not a GetRecords answer').to.equal(undefined);
  });

  it('R14, as KinsumerRecord.data documents it: a small payload is a view into a shared buffer (as the SDK\'s); slice() copies it out', async () => {
    const { page } = await through({ statusCode: 200, headers: { 'content-type': 'application/x-amz-json-1.1' }, body: json(answer) });
    const data = page?.records[0]?.data ?? new Uint8Array(0);
    expect(Buffer.from(data).toString()).to.equal('hi');
    expect(data.buffer.byteLength, 'the buffer behind a 2-byte payload').to.be.above(data.byteLength);
    const own = data.slice();
    expect([own.byteOffset, own.buffer.byteLength, Buffer.from(own).toString()]).to.deep.equal([0, 2, 'hi']);
  });
});
