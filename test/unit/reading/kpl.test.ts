import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { AggregateDecodeError, KPL_MAGIC, deaggregate, hasKplMagic } from '../../../src/reading/kpl.js';
import type { RawRecord } from '../../../src/ports/stream.js';
import { unpackRecords } from '../../../src/reading/unpack-page.js';
import { aggregate } from '../../support/kpl-aggregate.js';

const text = (data: Uint8Array) => Buffer.from(data).toString('utf8');

function withDigest(body: Uint8Array): Uint8Array {
  return Uint8Array.from([...KPL_MAGIC, ...body, ...createHash('md5').update(body).digest()]);
}

describe('kpl: deaggregation (aggregates encoded by aws-kinesis-agg)', () => {
  it('an aggregate of 100 user records gives the 100 records, in order, with their partition keys', () => {
    const users = Array.from({ length: 100 }, (_, i) => ({ partitionKey: `key-${i % 7}`, data: `payload ${i}` }));
    const found = deaggregate(aggregate(users).data);
    expect(found.kind).to.equal('aggregate');
    if (found.kind !== 'aggregate') return;
    expect([...found.records].map((r) => text(r.data))).to.deep.equal(users.map((u) => u.data));
    expect([...found.records].map((r) => r.partitionKey)).to.deep.equal(users.map((u) => u.partitionKey));
    expect([...found.records].every((r) => r.explicitHashKey === undefined)).to.equal(true);
  });

  // aws-kinesis-agg builds its key tables with Object.keys, which puts integer-like keys below
  // 2^32 first and so mislabels them: the keys here stay clear of that encoder bug.
  it('explicit hash keys come back on the records that had one, and only on those', () => {
    const ehk = (2n ** 127n).toString();
    const other = (2n ** 32n).toString();
    const found = deaggregate(aggregate([
      { partitionKey: 'a', data: 'no key' },
      { partitionKey: 'b', data: 'keyed', explicitHashKey: ehk },
      { partitionKey: 'c', data: 'other key', explicitHashKey: other },
      { partitionKey: 'd', data: 'same key again', explicitHashKey: ehk },
    ]).data);
    if (found.kind !== 'aggregate') expect.fail(`expected an aggregate, got ${found.kind}`);
    expect([...found.records].map((r) => r.explicitHashKey)).to.deep.equal([undefined, ehk, other, ehk]);
    expect([...found.records].map((r) => r.partitionKey)).to.deep.equal(['a', 'b', 'c', 'd']);
  });

  it('binary and empty payloads survive byte for byte', () => {
    const binary = Uint8Array.from({ length: 300 }, (_, i) => (i * 37) % 256);
    const found = deaggregate(aggregate([{ partitionKey: 'p', data: binary }, { partitionKey: 'p', data: new Uint8Array(0) }]).data);
    if (found.kind !== 'aggregate') expect.fail(`expected an aggregate, got ${found.kind}`);
    expect([...(found.records.at(0).data)]).to.deep.equal([...binary]);
    expect(found.records.at(1).data.length).to.equal(0);
  });

  it('a record without the magic prefix is plain', () => {
    expect(deaggregate(new TextEncoder().encode('just json {"a":1}')).kind).to.equal('plain');
    expect(deaggregate(new Uint8Array(0)).kind).to.equal('plain');
    expect(deaggregate(Uint8Array.of(0xf3, 0x89, 0x9a)).kind).to.equal('plain');
    expect(hasKplMagic(Uint8Array.of(0xf3, 0x89, 0x9a, 0xc2))).to.equal(true);
  });

  it('a wrong MD5 is a checksum fault, not a throw', () => {
    const data = aggregate([{ partitionKey: 'a', data: 'x' }]).data;
    const bad = data.slice();
    bad[bad.length - 1] = (bad[bad.length - 1] ?? 0) ^ 0xff;
    const found = deaggregate(bad);
    expect(found.kind).to.equal('corrupt');
    if (found.kind === 'corrupt') {
      expect(found.error).to.be.instanceOf(AggregateDecodeError);
      expect(found.error.fault).to.equal('checksum');
    }
  });

  it('a flipped payload byte breaks the checksum', () => {
    const data = aggregate([{ partitionKey: 'a', data: 'hello' }]).data.slice();
    data[6] = (data[6] ?? 0) ^ 0x01;
    const found = deaggregate(data);
    expect(found.kind === 'corrupt' && found.error.fault).to.equal('checksum');
  });

  it('magic with less than a digest after it is truncated', () => {
    const found = deaggregate(Uint8Array.of(...KPL_MAGIC, 1, 2, 3));
    expect(found.kind === 'corrupt' && found.error.fault).to.equal('truncated');
  });

  it('a protobuf cut short (with a matching digest) is truncated', () => {
    const full = aggregate([{ partitionKey: 'a', data: 'hello world' }]).data;
    const body = full.subarray(KPL_MAGIC.length, full.length - 16);
    const found = deaggregate(withDigest(body.subarray(0, body.length - 4)));
    expect(found.kind === 'corrupt' && found.error.fault).to.equal('truncated');
  });

  it('a partition key index beyond the table is malformed', () => {
    // partition_key_table = ["a"]; records = [{ partition_key_index: 5, data: "x" }]
    const body = Uint8Array.of(0x0a, 0x01, 0x61, 0x1a, 0x05, 0x08, 0x05, 0x1a, 0x01, 0x78);
    const found = deaggregate(withDigest(body));
    expect(found.kind === 'corrupt' && found.error.fault).to.equal('malformed');
  });

  it('a user record without data is malformed; unknown fields and tags are skipped', () => {
    const missingData = Uint8Array.of(0x0a, 0x01, 0x61, 0x1a, 0x02, 0x08, 0x00);
    expect(deaggregate(withDigest(missingData)).kind).to.equal('corrupt');
    // Adds to a valid record: tags (field 4) and an unknown fixed32 field 9 at the top level.
    const withExtras = Uint8Array.of(
      0x0a, 0x01, 0x61,
      0x1a, 0x0a, 0x08, 0x00, 0x1a, 0x01, 0x78, 0x22, 0x03, 0x0a, 0x01, 0x74,
      0x4d, 1, 2, 3, 4,
    );
    const found = deaggregate(withDigest(withExtras));
    if (found.kind !== 'aggregate') expect.fail(`expected an aggregate, got ${found.kind}`);
    expect([...found.records].map((r) => [r.partitionKey, text(r.data)])).to.deep.equal([['a', 'x']]);
  });

  it('an empty aggregate has no user records', () => {
    const found = deaggregate(withDigest(new Uint8Array(0)));
    expect(found.kind === 'aggregate' && found.records.length).to.equal(0);
  });
});

describe('user records of a page', () => {
  const at = new Date('2025-01-02T03:04:05Z');
  const raw = (sequenceNumber: string, data: Uint8Array, partitionKey = 'outer'): RawRecord => ({ sequenceNumber, partitionKey, data, approximateArrivalTimestamp: at });
  const users = Array.from({ length: 5 }, (_, i) => ({ partitionKey: `k${i}`, data: `u${i}` }));

  it('splits aggregates into sub-records carrying the aggregate sequence number and timestamp', () => {
    const page = [raw('100', new TextEncoder().encode('plain')), raw('200', aggregate(users).data)];
    const { records, undecodable } = unpackRecords(page, undefined);
    expect(undecodable).to.deep.equal([]);
    expect(records.map((r) => r.position)).to.deep.equal([
      { sequenceNumber: '100' },
      ...users.map((_, i) => ({ sequenceNumber: '200', subSequenceNumber: i })),
    ]);
    expect(records.map((r) => r.aggregateDone)).to.deep.equal([true, false, false, false, false, true]);
    expect(records.map((r) => r.partitionKey)).to.deep.equal(['outer', 'k0', 'k1', 'k2', 'k3', 'k4']);
    expect(records.every((r) => r.approximateArrivalTimestamp === at)).to.equal(true);
  });

  it('skips sub-records through the checkpointed one and stops skipping after it', () => {
    const page = [raw('200', aggregate(users).data), raw('300', new TextEncoder().encode('later'))];
    const { records, skipThrough } = unpackRecords(page, { sequenceNumber: '200', subSequenceNumber: 2 });
    expect(records.map((r) => r.position)).to.deep.equal([
      { sequenceNumber: '200', subSequenceNumber: 3 },
      { sequenceNumber: '200', subSequenceNumber: 4 },
      { sequenceNumber: '300' },
    ]);
    expect(skipThrough).to.equal(undefined);
  });

  it('keeps the skip when the whole page was at or before it', () => {
    const skip = { sequenceNumber: '200', subSequenceNumber: 4 };
    const result = unpackRecords([raw('200', aggregate(users).data)], skip);
    expect(result.records).to.deep.equal([]);
    expect(result.skipThrough).to.deep.equal(skip);
  });

  it('delivers a corrupt aggregate as its raw record and reports it', () => {
    const bad = aggregate(users).data.slice();
    bad[bad.length - 2] = (bad[bad.length - 2] ?? 0) ^ 0xff;
    const { records, undecodable } = unpackRecords([raw('400', bad)], undefined);
    expect(records).to.have.length(1);
    expect(records[0]?.position).to.deep.equal({ sequenceNumber: '400' });
    expect(records[0]?.data).to.equal(bad);
    expect(undecodable.map((u) => [u.sequenceNumber, u.error.fault])).to.deep.equal([['400', 'checksum']]);
  });
});
